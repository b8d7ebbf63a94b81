"""The example's synthetic-cases step with the stand-in (no key): variations of the grounded-answer cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.cases import load_cases
from referee.cli import cli
from referee.example import ExampleContext, prepare
from referee.example import step_47_synth as step


def test_synth_step_with_the_stand_in(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prepare(tmp_path)
    ctx = ExampleContext(dir=tmp_path, judge=True, judge_args=["--provider", "standin"], run_cli=cli, standin=True)
    outcome = step.run(ctx)
    out = capsys.readouterr()
    assert outcome is not None and "the count was met" in outcome
    assert "dry run:" in out.err and "rejected by duplicate" in out.err
    cases = load_cases(str(tmp_path / "synth_cases.jsonl")).cases
    originals = {c.input for c in load_cases(str(tmp_path / "rag.jsonl")).cases}
    assert len(cases) == 6 and not originals & {c.input for c in cases}
    assert all(c.metadata["synth"]["document"].endswith(tuple(f"#{i}" for i in
               ("rag-refund", "rag-export", "rag-sso", "rag-regions"))) for c in cases)


def test_synth_step_without_a_judge_is_skipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prepare(tmp_path)
    ctx = ExampleContext(dir=tmp_path, judge=False, run_cli=cli)
    assert "skipped" in (step.run(ctx) or "")
    assert not (tmp_path / "synth_cases.jsonl").exists()
    capsys.readouterr()
