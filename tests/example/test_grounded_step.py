"""The example's grounded-answer step with the stand-in judge (no key): claim metrics, quotes, a refusal unscored."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.cli import cli
from referee.example import ExampleContext, prepare
from referee.example import step_45_grounded as step
from referee.results import read_results


def test_grounded_step_with_the_stand_in(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prepare(tmp_path)
    ctx = ExampleContext(dir=tmp_path, judge=True, judge_args=["--provider", "standin"], run_cli=cli, standin=True)
    outcome = step.run(ctx)
    out = capsys.readouterr()
    assert outcome is not None and "rag_results.jsonl" in outcome
    assert "dry run:" in out.out + out.err
    rows = {r.id: r for r in read_results(tmp_path / "rag_results.jsonl").rows}
    assert rows["rag-sso"].status == "unscored" and "refusal" in (rows["rag-sso"].error or "")
    export = rows["rag-export"].check("faithfulness")
    assert export.score == pytest.approx(0.5)  # the billing-history claim is in no chunk
    unsupported = [c for c in export.criteria if c.score == 0.0]
    assert len(unsupported) == 1 and "2015" in (unsupported[0].name or "")
    claims = export.details["claims"]
    assert claims[0]["checks"]["contexts"]["by"] == ["docs/export#1"]
    assert claims[0]["checks"]["contexts"]["supports"][0]["found"] is True
    assert rows["rag-regions"].check("context_recall").score == pytest.approx(0.5)
    assert rows["rag-regions"].check("context_precision").score == pytest.approx(0.5)  # the relevant chunk ranks 2nd


def test_grounded_step_without_a_judge_is_skipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prepare(tmp_path)
    ctx = ExampleContext(dir=tmp_path, judge=False, run_cli=cli)
    assert "skipped" in (step.run(ctx) or "")
    assert not (tmp_path / "rag_results.jsonl").exists()
    capsys.readouterr()
