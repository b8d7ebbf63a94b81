"""Misreadings in checks and readers (numeric, tool errors, import, gold YAML, HTML)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.cli import cli
from referee.reports._html import render_html
from referee.results._schema import CriterionScore, ResultRow
from tests.evaluators.checks.test_checks import run as run_check
from tests.evaluators.test_trajectory_checks import LOOKUP, REFUND, case
from tests.evaluators.test_trajectory_checks import run as run_trajectory


def test_numeric_reads_a_hyphenated_word_as_a_positive_number() -> None:
    r = run_check("numeric", "see brulee-10-tips", value=10)
    assert r.passed is True, r.reason
    assert run_check("numeric", "the change is -3 points", value=-3).passed is True
    assert run_check("numeric", "range 1,200-1,500", value=1500, pick="last").passed is True


def test_a_word_error_in_the_answer_does_not_handle_a_tool_error() -> None:
    failed = {**REFUND, "result": {"error": "gateway unavailable"}}
    talk = case([LOOKUP, failed], output="Your refund is issued; the error rate should drop next week.")
    r = run_trajectory("tool_errors_handled", talk)
    assert r.passed is False and "gateway unavailable" in r.reason
    told = case([LOOKUP, failed], output="The refund service returned an error, so nothing was charged.")
    assert run_trajectory("tool_errors_handled", told).passed is True


def test_import_keeps_json_lines_holding_u2028(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    messages = [{"role": "user", "content": "Is INV-1 paid?\u2028Thanks"},
                {"role": "assistant", "content": "Yes.\u2029It is paid."}]
    runs = tmp_path / "runs.jsonl"
    runs.write_text(json.dumps({"id": "r1", "messages": messages}, ensure_ascii=False) + "\n", encoding="utf-8")
    out = tmp_path / "cases.jsonl"
    assert cli(["import", str(runs), "--out", str(out)]) == 0, capsys.readouterr().err
    cases = [json.loads(x) for x in out.read_text(encoding="utf-8").split("\n") if x.strip()]
    assert [c["id"] for c in cases] == ["r1"]
    assert cases[0]["input"] == "Is INV-1 paid?\u2028Thanks"


def test_gold_names_the_input_yaml_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds, res = tmp_path / "ds", tmp_path / "res"
    (ds / "P1").mkdir(parents=True)
    (res / "P1").mkdir(parents=True)
    (ds / "P1" / "input.yaml").write_text("title: x\nitems: [1, 2\n")
    (ds / "P1" / "gold-prd.md").write_text("gold\n")
    (res / "P1" / "prd.md").write_text("gen\n")
    crit = tmp_path / "c.yaml"
    crit.write_text("skill: s\ngold_standard_file: gold-prd.md\ngenerated_file_patterns: [prd.md]\n"
                    "criteria:\n  - {id: a, name: A, prompt: p}\npass_threshold: 1\n")
    code = cli(["gold", "--criteria", str(crit), "--dataset", str(ds), "--results-dir", str(res),
                "--output", str(tmp_path / "out"), "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{ds / 'P1' / 'input.yaml'}:3: malformed YAML" in err
    assert "ParserError" not in err and "<unicode string>" not in err


def test_html_criteria_table_shows_the_score_of_a_check() -> None:
    row = ResultRow(id="c1", status="scored", score=0.75, evaluator="suite", criteria=[
        CriterionScore(id="fuzzy", status="scored", score=0.75, passed=True),
        CriterionScore(id="judge", status="unscored", error="no verdict")])
    per_case = render_html([row]).split("Rationale and evidence", 1)[1]
    cells = per_case.split("<td>fuzzy</td>", 1)[1].split("</tr>", 1)[0]
    assert "<td>0.75</td>" in cells and ">scored<" not in cells
    assert "unscored" in per_case.split("<td>judge</td>", 1)[1].split("</tr>", 1)[0]
