"""The example's images step (docs/multimodal.md's first run): screenshot tickets checked on load and graded, the
stand-in refused before any call when the prompt shows it an image, the screenshots in the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.cli import cli
from referee.example import ExampleContext, prepare
from referee.example import step_48_images as step
from referee.results import read_results


def test_images_step_with_the_stand_in(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from referee.evaluators import _images

    monkeypatch.setattr(_images, "_WARNED", set())  # the warning is said once per process: a fresh process here
    prepare(tmp_path)
    ctx = ExampleContext(dir=tmp_path, judge=True, judge_args=["--provider", "standin"], run_cli=cli, standin=True)
    outcome = step.run(ctx)
    out = capsys.readouterr()
    text = out.out + out.err
    assert outcome is not None and "images_report.html" in outcome
    rows = {r.id: r for r in read_results(tmp_path / "images_results.jsonl").rows}
    assert set(rows) == {"save-01", "billing-02", "signin-03"}
    assert all(r.status == "scored" for r in rows.values())
    assert rows["save-01"].passed and rows["billing-02"].passed and not rows["signin-03"].passed
    assert "stand-in judge" in (rows["save-01"].check("judge").reason or "")
    # The suite's prompt does not name the screenshot: said once, not silently dropped.
    assert text.count("field 'screenshot' holds an image") == 1
    # The prompt that shows the screenshot: refused before any call, nothing written as a verdict.
    assert "takes text only, not images" in text
    seen = tmp_path / "images_seen.jsonl"
    assert not seen.exists() or not seen.read_text().strip()
    # Each screenshot inline in the report, from its checked bytes.
    html = (tmp_path / "images_report.html").read_text()
    assert html.count("data:image/png;base64,") >= 3


def test_the_screenshots_are_checked_as_they_load(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A broken screenshot stops the step's run with the file, line and field, before any grading."""
    prepare(tmp_path)
    shot = tmp_path / "images" / "shots" / "code-expired.png"
    shot.write_bytes(shot.read_bytes()[:100])  # truncated
    ctx = ExampleContext(dir=tmp_path, judge=True, judge_args=["--provider", "standin"], run_cli=cli, standin=True)
    with pytest.raises(Exception, match="exited 2"):
        step.run(ctx)
    err = capsys.readouterr().err
    assert "cases.jsonl:3" in err and "screenshot" in err and "truncated" in err


def test_images_step_without_a_judge_runs_the_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prepare(tmp_path)
    ctx = ExampleContext(dir=tmp_path, judge=False, run_cli=cli)
    step.run(ctx)
    capsys.readouterr()
    lines = [json.loads(x) for x in (tmp_path / "images_results.jsonl").read_text().splitlines() if x.strip()]
    assert len(lines) == 3 and not any("stand-in" in json.dumps(x) for x in lines)
    assert not (tmp_path / "images_seen.jsonl").exists()
