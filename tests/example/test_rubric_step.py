"""The example's rubric step: grades the after answers when a judge is configured, always renders reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.cli import cli
from referee.example import ExampleContext, prepare
from referee.example import step_40_rubric as step
from referee.results import ResultRow, ResultWriter, RunManifest, read_results
from referee.testing import FakeLLMServer, WireRequest


def _reply_for_case(req: WireRequest) -> str:
    text = req.last_user_text
    body = text.split("The output under evaluation:", 1)[1].split(">", 1)[1].split("</output_", 1)[0].strip()
    quote = body[:40]
    crit = {k: {"score": 3, "evidence": [quote], "rationale": "r"}
            for k in ("accuracy", "groundedness", "completeness", "coherence", "helpfulness")}
    return json.dumps({"criteria": crit, "summary": "ok", "required_actions": ["x"]})


def test_step_grades_after_answers_and_renders_reports(fake_server: FakeLLMServer, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    prepare(tmp_path)
    fake_server.responder = _reply_for_case
    ctx = ExampleContext(run_cli=cli, dir=tmp_path, judge=True, judge_args=["--provider", "openai", "--base-url",
                                                                fake_server.openai_base_url, "--model", "m"])
    outcome = step.run(ctx)
    rows = read_results(tmp_path / "rubric_after.jsonl", strict=True).rows
    assert len(rows) == 12 and all(r.status == "scored" and r.details["verdict"] == "ADEQUATE" for r in rows)
    assert all(c.grounded for r in rows for c in r.criteria)
    report = tmp_path / "report_rubric_after.html"
    assert report.exists() and "refund-01" in report.read_text()
    assert outcome is not None and "report_rubric_after.html" in outcome


def test_step_without_judge_skips_grading_but_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prepare(tmp_path)
    res = tmp_path / "suite_after.jsonl"
    with ResultWriter(res) as w:
        w.write(ResultRow(id="refund-01", score=0.0, passed=False, evaluator="regex", rationale="wrong window"))
    RunManifest(kind="suite").write(res)
    outcome = step.run(ExampleContext(run_cli=cli, dir=tmp_path, judge=False))
    assert outcome is not None and "skipped" in outcome
    assert "no judge is configured" in capsys.readouterr().out
    html = (tmp_path / "report_suite_after.html").read_text()
    # The case's output is shown from after.jsonl even though the row does not carry it.
    assert "wrong window" in html and "Refunds are not possible" in html
