"""The built-in example's suite: without any LLM it passes the old answers and catches the regressions."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.cli import cli
from referee.example import prepare
from referee.results._io import read_results


def test_example_suite_catches_the_regressions_without_a_judge(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    prepare(tmp_path)
    suite = str(tmp_path / "suite.yaml")
    assert cli(["validate", suite]) == 0
    before, after = tmp_path / "suite_before.jsonl", tmp_path / "suite_after.jsonl"
    assert cli(["run", suite, "--cases", str(tmp_path / "before.jsonl"), "--out", str(before), "--no-judge"]) == 0
    assert cli(["run", suite, "--cases", str(tmp_path / "after.jsonl"), "--out", str(after), "--no-judge"]) == 1
    assert "FAIL --fail-under" in capsys.readouterr().out
    old = {r.id: r for r in read_results(before, strict=True).rows}
    new = {r.id: r for r in read_results(after, strict=True).rows}
    assert all(r.passed for r in old.values())
    regressed = {i for i in new if old[i].passed and not new[i].passed}
    assert regressed == {"refund-01", "2fa-01", "outage-02", "delete-01"}
    assert all(r.judge is None and not r.usage for r in new.values())  # no LLM was involved


def test_example_dry_run_counts_the_judge_calls(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prepare(tmp_path)
    assert cli(["run", str(tmp_path / "suite.yaml"), "--dry-run"]) == 0
    assert "12 judge call(s)" in capsys.readouterr().out
