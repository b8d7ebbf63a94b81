"""Alignments in the run history: each aligned judge ``referee align`` wrote (its file as the judge configuration
it produced, its held-out figures) and the reviewers' labels it was fitted on, in the tables stage 1 created for
them (``alignments``, ``labels``)."""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from . import _schema as s

if TYPE_CHECKING:
    from ._store import Store


def _json(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def record_alignment(store: Store, *, alignment_id: str | None, judge_key: str | None,
                     config: dict[str, Any] | None, metrics: dict[str, Any], labels: Sequence[dict[str, Any]],
                     run_id: str | None = None) -> None:
    """Record one alignment: with ``alignment_id`` (the aligned judge's hash) an ``alignments`` row holding its
    file (``config``) and figures; every label (``{case_id, reviewer, score, note?}``) as a ``labels`` row, tied
    to the alignment when one was written and to ``run_id`` when the store holds that run. Raises
    :class:`StoreError` when the store cannot be written."""
    now = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    try:
        with store.engine.begin() as conn:
            if run_id is not None and conn.execute(select(s.runs.c.id).where(s.runs.c.id == run_id)).first() is None:
                run_id = None
            if alignment_id is not None:
                exists = conn.execute(select(s.alignments.c.id).where(s.alignments.c.id == alignment_id)).first()
                if exists is None:
                    conn.execute(s.alignments.insert().values(
                        id=alignment_id, created_at=now, judge_key=judge_key,
                        config=store.put_text(conn, _json(config)) if config is not None else None,
                        metrics=store.put_text(conn, _json(metrics))))
            rows = []
            for lab in labels:
                note = lab.get("note")
                rows.append({"run_id": run_id, "case_id": str(lab["case_id"]), "reviewer": str(lab["reviewer"]),
                             "label": lab.get("label"), "score": lab.get("score"), "created_at": now,
                             "note": store.put_text(conn, str(note).encode()) if note else None,
                             "alignment_id": alignment_id})
            if rows:
                conn.execute(s.labels.insert(), rows)
    except Exception as exc:
        if type(exc).__module__.startswith("sqlalchemy"):
            raise store.error(exc) from None
        raise


def alignments(store: Store) -> list[dict[str, Any]]:
    """Every recorded alignment, newest first: ``{id, created_at, judge_key, config, metrics, labels}``
    (``labels``: how many label rows are tied to it)."""
    from sqlalchemy import func

    with store.engine.connect() as conn:
        counts: dict[str | None, int] = dict(conn.execute(select(s.labels.c.alignment_id, func.count()).group_by(s.labels.c.alignment_id))
                      .all())
        out = []
        for r in conn.execute(select(s.alignments).order_by(s.alignments.c.created_at.desc())).mappings():
            cfg = store.get_text(conn, r["config"])
            met = store.get_text(conn, r["metrics"])
            out.append({"id": r["id"], "created_at": r["created_at"], "judge_key": r["judge_key"],
                        "config": json.loads(cfg) if cfg else None, "metrics": json.loads(met) if met else None,
                        "labels": int(counts.get(r["id"], 0))})
    return out


MAX_VIEW_LABEL_BYTES = 64 * 1024
"""A viewer label line above this size is not stored (the viewer's own bounds keep them far smaller)."""


def record_view_label(store: Store, run_id: str, label: dict[str, Any]) -> None:
    """Record one label the viewer saved on a stored run (its whole line, as the labels file holds it), so
    reviewers on other machines sharing this store see it. Raises :class:`StoreError` when it cannot be written."""
    data = json.dumps(label, sort_keys=True, ensure_ascii=False, allow_nan=False)
    if len(data.encode("utf-8")) > MAX_VIEW_LABEL_BYTES:
        raise ValueError(f"a label of {len(data)} characters is over the store's bound")
    score = label.get("score")
    try:
        with store.engine.begin() as conn:
            conn.execute(s.labels.insert().values(
                run_id=run_id, case_id=str(label["id"]), reviewer=str(label.get("reviewer") or "anonymous"),
                label=data, score=float(score) if isinstance(score, int | float) else None,
                created_at=_dt.datetime.now(_dt.UTC).isoformat(timespec="microseconds"), alignment_id=None))
    except Exception as exc:
        if type(exc).__module__.startswith("sqlalchemy"):
            raise store.error(exc) from None
        raise


def view_labels(store: Store, run_id: str) -> list[dict[str, Any]]:
    """The labels viewers saved on the stored run ``run_id``: each (case, reviewer)'s newest line, in the order
    they were given. Rows that are not a viewer's line (an alignment's labels) are left out."""
    try:
        with store.engine.connect() as conn:
            rows = conn.execute(select(s.labels.c.case_id, s.labels.c.reviewer, s.labels.c.label)
                                .where(s.labels.c.run_id == run_id, s.labels.c.alignment_id.is_(None))
                                .order_by(s.labels.c.id)).all()
    except Exception as exc:
        if type(exc).__module__.startswith("sqlalchemy"):
            raise store.error(exc) from None
        raise
    newest: dict[tuple[str, str], dict[str, Any]] = {}
    for case_id, reviewer, text in rows:
        if not text or not text.startswith("{") or len(text) > MAX_VIEW_LABEL_BYTES:
            continue
        try:
            obj = json.loads(text)
        except ValueError:
            continue
        if isinstance(obj, dict) and str(obj.get("id")) == case_id:
            newest.pop((case_id, reviewer), None)  # re-inserted: the order is that of the newest line
            newest[(case_id, reviewer)] = obj
    return list(newest.values())
