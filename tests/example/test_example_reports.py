"""The example's HTML-report step skips results a rerun set aside (``x.prev.jsonl``)."""

from __future__ import annotations

from pathlib import Path

from referee.example.step_40_rubric import _results_files


def _results(folder: Path, stem: str) -> None:
    (folder / f"{stem}.jsonl").write_text('{"id": "a", "score": 1}\n', encoding="utf-8")
    (folder / f"{stem}.manifest.json").write_text("{}", encoding="utf-8")


def test_set_aside_runs_get_no_report(tmp_path: Path) -> None:
    for stem in ("suite_after", "suite_after.prev", "suite_after.prev2", "judged_before"):
        _results(tmp_path, stem)
    (tmp_path / "after.jsonl").write_text('{"id": "a"}\n', encoding="utf-8")  # cases: no manifest
    assert [p.name for p in _results_files(tmp_path)] == ["judged_before.jsonl", "suite_after.jsonl"]
