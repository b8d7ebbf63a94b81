"""The example's alignment step with the stand-in (no key): the judge against the support lead's labels."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.cli import cli
from referee.example import ExampleContext, prepare
from referee.example import step_10_judge as judge_step
from referee.example import step_57_align as step
from referee.results import read_results


def test_align_step_fits_on_some_labels_and_decides_on_the_others(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    prepare(tmp_path)
    ctx = ExampleContext(dir=tmp_path, judge=True, judge_args=["--provider", "standin"], run_cli=cli, standin=True)
    judge_step.run(ctx)
    assert read_results(str(tmp_path / "judged_after.jsonl")).rows
    capsys.readouterr()
    outcome = step.run(ctx) or ""
    got = capsys.readouterr()
    err = got.out + got.err
    assert "held out" in err and "no judge" in err
    written = (tmp_path / "judge.aligned.json").exists()
    # The outcome line says what happened, whichever it was: a file written, or the original kept and why.
    assert ("was written" in outcome) == written
    assert ("the original is kept" in err) == (not written)


def test_align_step_without_judged_results_is_skipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prepare(tmp_path)
    ctx = ExampleContext(dir=tmp_path, judge=False, run_cli=cli)
    assert "skipped" in (step.run(ctx) or "")
    assert not (tmp_path / "judge.aligned.json").exists()
    capsys.readouterr()
