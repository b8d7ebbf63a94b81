"""Reading labels: viewer / calibrate JSONL and CSV columns, each reviewer kept, consensus by strict majority."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.alignment import read_human_labels
from referee.errors import InputError, UserError
from tests.support.alignment import write_labels


def test_viewer_lines_with_reviewers_and_a_majority(tmp_path: Path) -> None:
    p = write_labels(tmp_path / "l.jsonl", [
        {"id": "a", "score": 1.0, "passed": True, "reviewer": "ann", "comment": "cites the source"},
        {"id": "a", "score": 1.0, "reviewer": "bob"},
        {"id": "a", "score": 0.0, "reviewer": "cy"},
        {"id": "b", "score": 0.0, "reviewer": "ann"},
        {"id": "b", "score": 1.0, "reviewer": "bob"},
        {"id": "c", "score": 0.0, "reviewer": "ann"},
        {"id": "c", "score": 1.0, "reviewer": "ann"},  # ann changed her mind: her later line counts
    ])
    lab = read_human_labels(p)
    assert lab.values == {"a": 1.0, "c": 1.0}
    assert lab.no_consensus == ["b"]
    assert lab.reviewers == ["ann", "bob", "cy"]
    assert lab.rationale == {"a": "cites the source"}
    assert len(lab.sha256) == 64
    only = read_human_labels(p, reviewers=["bob"])
    assert only.values == {"a": 1.0, "b": 1.0}
    with pytest.raises(UserError, match="no labels by reviewer"):
        read_human_labels(p, reviewers=["dee"])


def test_csv_with_named_columns_and_groups(tmp_path: Path) -> None:
    p = tmp_path / "l.csv"
    p.write_text("case,verdict,story\nx1,pass,s1\nx2,fail,s1\nx3,4,s2\n", encoding="utf-8")
    lab = read_human_labels(p, id_field="case", label_field="verdict", group_field="story")
    assert lab.values == {"x1": 1.0, "x2": 0.0, "x3": 4.0}
    assert lab.groups == {"x1": "s1", "x2": "s1", "x3": "s2"}
    with pytest.raises(InputError, match="no column 'grade'") as exc:
        read_human_labels(p, id_field="case", label_field="grade")
    assert exc.value.line == 2


def test_malformed_lines_are_skipped_with_file_and_line(tmp_path: Path) -> None:
    p = tmp_path / "l.jsonl"
    p.write_text('{"id": "a", "score": 1}\nnot json\n{"score": 1}\n{"id": "b", "score": "high"}\n'
                 '{"id": "c", "score": NaN}\n', encoding="utf-8")
    lab = read_human_labels(p)
    assert lab.values == {"a": 1.0}
    assert len(lab.warnings) == 4
    assert all(str(p) in w for w in lab.warnings)
    assert any(":2" in w or "line 2" in w for w in lab.warnings)


def test_a_rationale_is_bounded_and_a_huge_file_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from referee.alignment import _labels

    p = write_labels(tmp_path / "l.jsonl", [{"id": "a", "score": 1, "comment": "x" * 10_000}])
    assert len(read_human_labels(p).rationale["a"]) == _labels.MAX_RATIONALE
    monkeypatch.setattr(_labels, "MAX_LABEL_BYTES", 10)
    with pytest.raises(InputError, match="larger than a labels file"):
        read_human_labels(p)
    with pytest.raises(InputError, match="not found"):
        read_human_labels(tmp_path / "missing.jsonl")
