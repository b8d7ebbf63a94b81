"""What a plain check function may return: bool, a number (numpy scalars too) or a CheckResult; anything else is
an error row whose message names the real type."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import referee

CASES = [{"id": "a", "output": "x"}, {"id": "b", "output": "yy"}]


@pytest.mark.parametrize(("make", "scores"), [
    (lambda out: np.bool_(len(out) == 1), [1.0, 0.0]),
    (lambda out: np.int64(len(out) - 1), [0.0, 1.0]),
    (lambda out: np.float32(0.25 * len(out)), [0.25, 0.5]),
    (lambda out: np.float64(0.5), [0.5, 0.5]),
])
def test_numpy_scalars_are_accepted(make: Any, scores: list[float]) -> None:
    result = referee.evaluate(CASES, [referee.as_evaluator(make, "np_check")], gates={"fail_under": 0.0},
                              progress=False)
    assert [r.status for r in result.rows] == ["scored", "scored"], [r.error for r in result.rows]
    assert [r.score for r in result.rows] == pytest.approx(scores)


def test_a_numpy_bool_keeps_its_verdict() -> None:
    result = referee.evaluate(CASES, [referee.as_evaluator(lambda out: np.bool_(out == "x"), "np_bool")],
                              gates={"fail_under": 0.0}, progress=False)
    assert [r.passed for r in result.rows] == [True, False]


@pytest.mark.parametrize(("value", "named"), [("yes", "str"), (np.array([1, 2]), "numpy.ndarray"),
                                               ([True], "list"), (None, "NoneType")])
def test_anything_else_is_an_error_naming_the_real_type(value: Any, named: str) -> None:
    result = referee.evaluate(CASES[:1], [referee.as_evaluator(lambda out: value, "odd")],
                              gates={"fail_under": 0.0}, progress=False)
    [row] = result.rows
    assert row.status == "error" and f"returned {named}; expected bool, float or CheckResult" in (row.error or "")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), np.float32("nan")])
def test_a_non_finite_score_is_an_error(value: Any) -> None:
    result = referee.evaluate(CASES[:1], [referee.as_evaluator(lambda out: value, "nan_check")],
                              gates={"fail_under": 0.0}, progress=False)
    [row] = result.rows
    assert row.status == "error" and "returned score" in (row.error or "") and "scores are 0-1" in (row.error or "")
