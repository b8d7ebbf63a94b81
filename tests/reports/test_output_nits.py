"""What a user reads after a small run: counts in the right number, no passing case listed as a failure, no
category row that only repeats the overall one, no gate line when no gate was set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import referee
from referee.cli import cli


def _rows(path: Path, scores: list[float]) -> Path:
    rows = [{"id": f"c{i}", "score": s, "status": "scored", "evaluator": "judge", "rationale": f"why {i}"}
            for i, s in enumerate(scores)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_the_lowest_cases_are_failures_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["score", str(_rows(tmp_path / "r.jsonl", [0.2, 0.9, 1.0])), "--n-boot", "50"]) == 0
    out = capsys.readouterr().out
    lowest = out.split("Lowest-scoring cases")[1].split("power:")[0]
    assert "c0 score 0.200" in lowest and "c1" not in lowest and "c2" not in lowest
    assert "(uncategorized)" not in out  # no category at all: the one group is "overall"
    assert "\noverall " in out


def test_no_failing_case_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["score", str(_rows(tmp_path / "r.jsonl", [0.9])), "--n-boot", "50"]) == 0
    out = capsys.readouterr().out
    assert "(no case failed)" in out and "c0 score" not in out
    assert "1 row, 1 scored case," in out and "1 rows" not in out and "1 cases" not in out


def test_one_row_reads_in_the_singular_and_no_gate_is_said_once() -> None:
    result = referee.evaluate([{"id": "a", "output": "4", "reference": "4"}], ["equals"], progress=False)
    assert repr(result).startswith("EvalResult(1 row: 1 scored")
    assert repr(result.summary).startswith("<Summary 1 case scored:")
    html = result._repr_html_()
    assert "1 rows" not in html and "1 cases" not in html and "1 scored cases" not in html
    assert "gates: 0 of 0 failed" not in html and html.count("no gate") == 1
    assert "(uncategorized)" not in html  # its row would only repeat "overall"
    assert "small sample: 1 scored case (under 20)" in html


def test_categories_still_show_beside_overall() -> None:
    cases = [{"id": "a", "output": "4", "reference": "4", "category": "math"},
             {"id": "b", "output": "x", "reference": "y", "category": "text"}]
    html = referee.evaluate(cases, ["equals"], progress=False)._repr_html_()
    assert "math" in html and "text" in html and "overall" in html
