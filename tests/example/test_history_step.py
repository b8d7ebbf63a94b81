"""The example's history step: run on its own, it first runs the suite whose runs it lists and draws."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.cli import cli


def test_the_history_step_alone_runs_the_suite_first_and_lists_its_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("REFEREE_STORE", raising=False)
    assert cli(["example", "--dir", str(tmp_path / "ex"), "--step", "history"]) == 0
    out = capsys.readouterr().out
    listed = out[out.index("$ referee runs list"):out.index("$ referee runs trend")]
    assert listed.count(" complete ") == 2, listed  # the suite's before and after runs
    assert "no run was recorded" not in out
