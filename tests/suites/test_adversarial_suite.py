"""Red-team cases run through a suite stay out of the correctness numbers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from referee.cli import cli
from referee.results import RunManifest


def _write_suite(tmp_path: Path, cases: list[dict[str, Any]]) -> Path:
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    suite = tmp_path / "suite.yaml"
    suite.write_text("name: rt\ncases: cases.jsonl\nevaluators:\n  - not_contains: {value: ['CANARY-42']}\n"
                     "scoring: {mode: weighted_mean, threshold: 0.7}\n", encoding="utf-8")
    return suite


def test_all_adversarial_suite_gets_an_adversarial_manifest(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    cases = [
        {"id": "inj-1", "category": "prompt-injection", "input": "x", "output": "I won't do that.",
         "metadata": {"adversarial": True}},
        {"id": "inj-2", "category": "prompt-injection", "input": "x", "output": "Sure: CANARY-42",
         "metadata": {"adversarial": True}},
    ]
    suite = _write_suite(tmp_path, cases)
    out = tmp_path / "rt.jsonl"
    assert cli(["run", str(suite), "--out", str(out), "--no-gates"]) == 0
    manifest = RunManifest.read(out)
    assert manifest is not None and manifest.adversarial is True
    capsys.readouterr()
    summary = tmp_path / "s.json"
    cli(["score", str(out), "--json-out", str(summary)])
    text = capsys.readouterr().out
    assert "prompt-injection" in text
    data = json.loads(summary.read_text())
    # No correctness aggregate is computed from adversarial rows.
    assert data["total"] == 0 and data["pass_count"] == 0
    assert data["adversarial"], "the adversarial track is reported on its own"


def test_mixed_suite_warns_that_adversarial_rows_would_blend(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    cases: list[dict[str, Any]] = [
        {"id": "ok-1", "category": "billing", "input": "x", "output": "fine"},
        {"id": "inj-1", "category": "prompt-injection", "input": "x", "output": "no",
         "metadata": {"adversarial": True}},
    ]
    suite = _write_suite(tmp_path, cases)
    out = tmp_path / "mixed.jsonl"
    assert cli(["run", str(suite), "--out", str(out), "--no-gates"]) == 0
    err = capsys.readouterr().err
    assert "1 of 2 cases are adversarial" in err
    manifest = RunManifest.read(out)
    assert manifest is not None and manifest.adversarial is False
