"""One function adapter, one rule: ``referee.as_evaluator``, ``evaluators.function_evaluator`` and plugin functions
take their arguments by parameter name (``output``, ``case``, options), else ``(output)`` / ``(output, case)``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import referee
from referee.cli import cli
from referee.errors import UserError
from referee.evaluators import CheckResult, function_evaluator
from referee.results import read_results

CASE = referee.Case(id="c", data={"id": "c", "output": "out", "reference": "ref"})


def run(ev: referee.Evaluator) -> CheckResult:
    return asyncio.run(ev.evaluate_async(CASE, "out"))


def seen(output: Any, case: Any) -> bool:
    return output == "out" and isinstance(case, referee.Case) and case.id == "c"


@pytest.mark.parametrize("fn", [
    lambda output: output == "out",
    lambda output, case: seen(output, case),
    lambda case, output: seen(output, case),   # by name, whatever the order
    lambda o: o == "out",                       # unnamed: (output)
    lambda o, c: seen(o, c),                    # unnamed: (output, case)
    lambda case, out: seen(out, case),          # one name: the other parameter is the other argument
], ids=["output", "output-case", "case-output", "unnamed-1", "unnamed-2", "case-other"])
def test_as_evaluator_takes_arguments_by_name(fn: Any) -> None:
    assert run(referee.as_evaluator(fn)).passed is True


def test_function_evaluator_and_plugins_keep_case_output_and_refuse_to_guess() -> None:
    def plugin(case: Any, output: Any) -> bool:  # how plugins have always been written
        return seen(output, case)

    assert run(function_evaluator(plugin)).passed is True
    assert run(function_evaluator(lambda output, case: seen(output, case))).passed is True
    # Two unnamed parameters: function_evaluator documented (case, output), as_evaluator (output, case); the one
    # rule reads (output, case), so function_evaluator refuses rather than swap a user's arguments silently.
    with pytest.raises(UserError, match="name its parameters 'case' and 'output'"):
        function_evaluator(lambda c, o: True)
    assert run(function_evaluator(lambda o: o == "out")).passed is True  # one parameter: the output


async def test_async_functions_and_what_they_return() -> None:
    async def judge(output: Any, case: Any) -> float:
        return 0.25 if seen(output, case) else 0.0

    res = await referee.as_evaluator(judge).evaluate_async(CASE, "out")
    assert res.score == 0.25 and res.passed is None
    with pytest.raises(TypeError, match="expected bool, float or CheckResult"):
        await referee.as_evaluator(lambda output: "yes").evaluate_async(CASE, "out")
    with pytest.raises(UserError, match="takes \\(output\\)"):
        referee.as_evaluator(lambda: True)


def test_plugin_options_by_name_from_a_suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "rule_checks.py").write_text(
        "def has(output, case, word='x'):\n    return word in output and case.id in ('a', 'b')\n"
        "def anything(case, output, **options):\n    return options == {'n': 2}\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "output": "refunds"}\n{"id": "b", "output": "no"}\n',
                                          encoding="utf-8")
    suite = tmp_path / "s.yaml"
    suite.write_text("cases: cases.jsonl\nevaluators:\n  - rule_checks:has: {word: refund}\n"
                     "  - rule_checks:anything: {n: 2}\n", encoding="utf-8")
    assert cli(["run", str(suite), "--out", str(tmp_path / "r.jsonl"), "--no-gates"]) == 0
    rows = {r.id: r for r in read_results(tmp_path / "r.jsonl").rows}
    assert rows["a"].check("rule_checks:has").passed is True and rows["b"].check("rule_checks:has").passed is False
    assert all(r.check("rule_checks:anything").passed is True for r in rows.values())
    suite.write_text("cases: cases.jsonl\nevaluators:\n  - rule_checks:has: {colour: red}\n", encoding="utf-8")
    assert cli(["run", str(suite), "--out", str(tmp_path / "r2.jsonl"), "--no-gates"]) == 2  # unknown option
