"""Calibration accepts the seed's files as the seed does (bad lines skipped, padded tables)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.cli import cli


def test_malformed_lines_are_warnings_naming_file_and_line(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    judge = tmp_path / "judge.jsonl"
    judge.write_text("\n".join([json.dumps({"id": "a", "score": 0.9}), "{not json", json.dumps([1, 2]),
                                json.dumps({"score": 0.5}), json.dumps({"id": "b", "score": 0.4})]) + "\n")
    human = tmp_path / "human.jsonl"
    human.write_text(json.dumps({"id": "a", "score": 0.8}) + "\n" + '{"id": "b", "score": 0.6,}\n'
                     + json.dumps({"id": "b", "score": 0.5}) + "\n")
    out = tmp_path / "c.json"
    code = cli(["calibrate", str(judge), str(human), "--json-out", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    for where in (f"{judge}:2", f"{judge}:3", f"{judge}:4", f"{human}:2"):
        assert f"warning: skipped {where}" in err
    data = json.loads(out.read_text())
    assert data["n"] == 2 and data["mean_abs_delta"] == pytest.approx((0.1 + 0.1) / 2)


SEED_LOG = """# Judge prompt v3

## Calibration log

| Date       | Cases checked | Mean delta vs human | Action taken              |
|:-----------|--------------:|:-------------------:|---------------------------|
| —          | —             | not yet calibrated  | —                         |

Other text.
"""


def test_update_log_recognises_a_padded_aligned_table(tmp_path: Path) -> None:
    judge = tmp_path / "j.jsonl"
    judge.write_text(json.dumps({"id": "a", "score": 0.9}) + "\n")
    human = tmp_path / "h.jsonl"
    human.write_text(json.dumps({"id": "a", "score": 0.7}) + "\n")
    log = tmp_path / "prompt.md"
    log.write_text(SEED_LOG)
    assert cli(["calibrate", str(judge), str(human), "--threshold", "1", "--update-log", str(log),
                "--action", "tightened rubric"]) == 0
    text = log.read_text()
    assert "not yet calibrated" not in text
    assert text.count("Mean delta vs human") == 1  # no second table appended
    rows = [ln for ln in text.splitlines() if ln.startswith(("| 2", "| 1"))]
    assert len(rows) == 1 and rows[0].endswith("| 1 | 0.200 | tightened rubric |")
    assert cli(["calibrate", str(judge), str(human), "--threshold", "1", "--update-log", str(log)]) == 0
    text = log.read_text()
    assert text.count("Mean delta vs human") == 1 and text.count("| 0.200 |") == 2
    assert text.index("| 0.200 | none needed (mean delta 0.200 within 1.0) |") < text.index("Other text.")
