"""The example's production-traces step: runs without a key (the stand-in judge)."""

from __future__ import annotations

import json
from pathlib import Path

from referee.cli import cli
from referee.example import STANDIN_PROVIDER, ExampleContext, prepare
from referee.example import step_70_monitor as step


def test_the_monitor_step_scores_the_recorded_traces_without_a_key(tmp_path: Path) -> None:
    prepare(tmp_path)
    lines: list[str] = []
    ctx = ExampleContext(run_cli=cli, dir=tmp_path, judge=True, judge_args=["--provider", STANDIN_PROVIDER],
                         echo=lines.append, standin=True)
    outcome = step.run(ctx)
    assert outcome is not None and outcome.startswith("4 of the 12 recorded traces scored under 0.5")
    cases = [json.loads(x) for x in (tmp_path / "production_low.jsonl").read_text().splitlines()]
    assert {c["output"] for c in cases} >= {"Backups are kept forever on every plan, free of charge."}
    assert any("referee monitor" in ln for ln in lines)
    assert step.run(ctx) == outcome  # a rerun reads the same scores from the store


def test_the_step_is_skipped_without_a_judge(tmp_path: Path) -> None:
    prepare(tmp_path)
    lines: list[str] = []
    assert "skipped" in (step.run(ExampleContext(run_cli=cli, dir=tmp_path, judge=False, echo=lines.append)) or "")
