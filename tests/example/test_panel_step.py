"""The example's panel step with the stand-in (no key): three judges, their majority, their agreement."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.cli import cli
from referee.example import ExampleContext, prepare
from referee.example import step_52_panel as step
from referee.results import read_results


def test_panel_step_runs_three_judges_and_reports_their_agreement(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    prepare(tmp_path)
    ctx = ExampleContext(dir=tmp_path, judge=True, judge_args=["--provider", "standin"], run_cli=cli, standin=True)
    outcome = step.run(ctx) or ""
    out = capsys.readouterr().out
    assert "panel_after.jsonl" in outcome and "3 judges (standin:a, standin:b, standin:c)" in out
    rows = read_results(str(tmp_path / "panel_after.jsonl")).rows
    assert rows and all(r.status in ("scored", "unscored", "error") for r in rows)


@pytest.mark.parametrize("judge, standin", [(False, False), (True, False)])
def test_panel_step_is_skipped_without_the_stand_in(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     judge: bool, standin: bool) -> None:
    prepare(tmp_path)
    ctx = ExampleContext(dir=tmp_path, judge=judge, run_cli=cli, standin=standin)
    assert "skipped" in (step.run(ctx) or "")
    assert not (tmp_path / "panel_after.jsonl").exists()
    capsys.readouterr()
