"""Numbers given to the Python API are checked: a count that is not a whole number >= 1 (or a non-finite setting)
is a UserError naming the argument, before anything runs."""

from __future__ import annotations

from typing import Any

import pytest

import referee
from referee.errors import UserError
from referee.targets import generate_outputs

CASES = [{"id": "a", "output": "{}"}]


@pytest.mark.parametrize("value", [0, -5, float("nan"), float("inf"), 2.5, True, "8"])
def test_evaluate_refuses_a_bad_concurrency(value: Any) -> None:
    with pytest.raises(UserError, match=r"concurrency"):
        referee.evaluate(CASES, ["is_json"], concurrency=value, progress=False)


def test_evaluate_accepts_a_good_concurrency() -> None:
    assert referee.evaluate(CASES, ["is_json"], concurrency=1, progress=False).passed


@pytest.mark.parametrize("value", [0, -5, float("nan")])
def test_generate_outputs_refuses_a_bad_concurrency(value: Any) -> None:
    with pytest.raises(UserError, match=r"concurrency"):
        generate_outputs(lambda x: x, [{"id": "a", "input": "q"}], concurrency=value)


@pytest.mark.parametrize(("setting", "value"), [
    ("concurrency", float("nan")), ("concurrency", 0), ("max_tokens", float("nan")), ("timeout", float("nan")),
    ("timeout", float("inf")), ("temperature", float("nan")), ("input_price_per_mtok", float("inf")),
    ("max_retries", -1),
])
def test_judge_refuses_non_finite_and_out_of_range_settings(setting: str, value: Any) -> None:
    with pytest.raises(UserError, match=setting):
        referee.Judge("openai", model="m", **{setting: value})
