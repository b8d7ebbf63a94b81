"""Alignments and reviewers' labels in the run history (the ``alignments`` and ``labels`` tables)."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from referee.store import Store, alignments, record_alignment
from referee.store import _schema as s


def test_an_alignment_and_its_labels_read_back(store: Store) -> None:
    labels = [{"case_id": "a", "reviewer": "ann", "score": 1.0, "note": "cites the source"},
              {"case_id": "a", "reviewer": "bob", "score": 0.0},
              {"case_id": "b'; DROP TABLE labels; --", "reviewer": "ann", "score": 0.5}]
    record_alignment(store, alignment_id="abc123", judge_key="k1", config={"map": {"knots": [[0, 0]]}},
                     metrics={"written": True}, labels=labels, run_id="no-such-run")
    got = alignments(store)
    assert len(got) == 1 and got[0]["id"] == "abc123" and got[0]["labels"] == 3
    assert got[0]["config"] == {"map": {"knots": [[0, 0]]}} and got[0]["metrics"] == {"written": True}
    with store.engine.connect() as conn:
        rows = conn.execute(select(s.labels.c.case_id, s.labels.c.reviewer, s.labels.c.run_id,
                                   s.labels.c.alignment_id).order_by(s.labels.c.id)).all()
    assert [r[0] for r in rows] == ["a", "a", "b'; DROP TABLE labels; --"]
    assert all(r[2] is None for r in rows)  # a run the store does not hold is not linked
    assert {r[3] for r in rows} == {"abc123"}


def test_a_refused_alignment_records_only_its_labels(store: Store) -> None:
    record_alignment(store, alignment_id=None, judge_key=None, config=None, metrics={"written": False},
                     labels=[{"case_id": "a", "reviewer": "ann", "score": 1.0}])
    assert alignments(store) == []
    with store.engine.connect() as conn:
        assert conn.execute(select(s.labels.c.alignment_id)).all() == [(None,)]


def test_the_same_alignment_twice_is_one_row(store: Store) -> None:
    for _ in range(2):
        record_alignment(store, alignment_id="same", judge_key=None, config={}, metrics={}, labels=[])
    assert [a["id"] for a in alignments(store)] == ["same"]


def test_a_non_finite_figure_is_refused(store: Store) -> None:
    with pytest.raises(ValueError):
        record_alignment(store, alignment_id="x", judge_key=None, config={}, metrics={"g": float("nan")}, labels=[])
    assert alignments(store) == []
