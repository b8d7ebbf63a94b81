"""The example's score step: it scores what earlier steps wrote, and shows the gate catching regressions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.cli import cli
from referee.example import ExampleContext
from referee.example import step_30_score as step
from tests.support.scores import seed_rows, write_rows


def _ctx(tmp_path: Path, lines: list[str]) -> ExampleContext:
    return ExampleContext(run_cli=cli, dir=tmp_path, judge=False, echo=lines.append)


def test_step_says_so_when_nothing_to_score(tmp_path: Path) -> None:
    lines: list[str] = []
    assert step.run(_ctx(tmp_path, lines)) == "skipped (no results files)"
    assert any("no results to score yet" in ln for ln in lines)


def test_step_catches_the_regression(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_rows(tmp_path / "suite_before.jsonl", seed_rows([0.9, 0.8, 0.9, 0.75]))
    write_rows(tmp_path / "suite_after.jsonl", seed_rows([0.9, 0.2, 0.9, 0.75]))
    lines: list[str] = []
    outcome = step.run(_ctx(tmp_path, lines))
    assert outcome is not None and "suite: regressions caught (exit 1)" in outcome
    summary = json.loads((tmp_path / "score_suite.json").read_text(encoding="utf-8"))
    assert [r["id"] for r in summary["comparison"]["regressions"]] == ["case-001"]
    assert (tmp_path / "score_suite.junit.xml").exists() and (tmp_path / "score_suite.md").exists()
    assert "case-001" in capsys.readouterr().out
