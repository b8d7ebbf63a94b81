"""The trace sink on the run-history store (SQLite or PostgreSQL): spans written as they arrive, one transaction
per received request (the reply goes out after the commit, so a 200 means stored); traces assembled from the
store; one score per (trace, evaluator) by the table's key, so a restarted or killed monitor neither loses nor
duplicates a score. Texts (a span's attributes, a score's explanation) go through the store's ``texts``, stored
once by hash."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from sqlalchemy import and_, delete, func, select, tuple_, update

from .._util._fastjson import dumps_bytes
from ..store import Store
from ..store import _schema as t
from ..store._store import _unpack, digest
from ._drift import Alert
from ._otlp import SpanRecord
from ._sink import DEFAULT_MAX_SPANS_PER_TRACE, Added, Score

# The score's ``span_id`` key column holds its unit: "" for a whole trace's score (one per (trace, evaluator)), the
# span's id for a chosen span's (``monitor: spans:``); the evaluated span's id is in its body.


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str).encode()


class StoreSink:
    """:class:`~referee.traces.TraceSink` on a :class:`~referee.store.Store`."""

    def __init__(self, store: Store, *, max_spans_per_trace: int = DEFAULT_MAX_SPANS_PER_TRACE) -> None:
        self.store = store
        self.max_spans_per_trace = max_spans_per_trace

    # -- spans in ---------------------------------------------------------------------------------------------
    def add_spans(self, spans: Sequence[SpanRecord], *, received_ns: int) -> Added:
        out = Added()
        if not spans:
            return out
        by_trace: dict[str, dict[str, SpanRecord]] = {}
        for s in spans:
            group = by_trace.setdefault(s.trace_id, {})
            if s.span_id in group:
                out.duplicates += 1
            else:
                group[s.span_id] = s
        st = self.store
        with st.engine.begin() as conn:
            ids = list(by_trace)
            have: dict[str, int] = {}
            for i in range(0, len(ids), 500):
                chunk = ids[i:i + 500]
                have.update({r[0]: r[1] for r in conn.execute(
                    select(t.traces.c.id, t.traces.c.span_count).where(t.traces.c.id.in_(chunk)))})
            pairs = [(tid, sid) for tid, g in by_trace.items() if tid in have for sid in g]
            existing: set[tuple[str, str]] = set()
            for i in range(0, len(pairs), 400):
                part = pairs[i:i + 400]
                existing.update((r[0], r[1]) for r in conn.execute(
                    select(t.spans.c.trace_id, t.spans.c.span_id).where(
                        tuple_(t.spans.c.trace_id, t.spans.c.span_id).in_(part))))
            texts: dict[bytes, bytes] = {}
            span_rows: list[dict[str, Any]] = []
            new_traces: list[dict[str, Any]] = []
            grown: list[dict[str, Any]] = []
            for tid, group in by_trace.items():
                count = have.get(tid, 0)
                truncated = False
                first: SpanRecord | None = None
                for sid, s in group.items():
                    if (tid, sid) in existing:
                        out.duplicates += 1
                        continue
                    if count >= self.max_spans_per_trace:
                        out.over_trace_cap += 1
                        truncated = True
                        continue
                    body = dumps_bytes({"attributes": s.attributes, "status": [s.status_code, s.status_message],
                                        "service": s.service})
                    h = digest(body)
                    texts[h] = body
                    span_rows.append({"trace_id": tid, "span_id": sid, "parent_id": s.parent_span_id,
                                      "name": s.name, "kind": None, "start_ns": s.start_ns, "end_ns": s.end_ns,
                                      "attrs": h})
                    count += 1
                    out.stored += 1
                    first = first or s
                if tid in have:
                    grown.append({"tid": tid, "n": count, "last": received_ns, "cut": truncated})
                else:
                    new_traces.append({"id": tid, "service": first.service if first else None, "last_ns": received_ns,
                                       "state": "open", "span_count": count, "truncated": truncated})
            st.put_texts(conn, texts)
            # Two requests racing on a new trace (PostgreSQL's READ COMMITTED) must not fail: first writer wins.
            if new_traces:
                conn.execute(st._ins()(t.traces).on_conflict_do_nothing(index_elements=["id"]), new_traces)
            if span_rows:
                conn.execute(st._ins()(t.spans).on_conflict_do_nothing(index_elements=["trace_id", "span_id"]),
                             span_rows)
            for g in grown:
                values: dict[str, Any] = {"span_count": g["n"], "last_ns": g["last"]}
                if g["cut"]:
                    values["truncated"] = True
                conn.execute(update(t.traces).where(t.traces.c.id == g["tid"]).values(**values))
        return out

    def count(self, reason: str, n: int = 1) -> None:
        if n <= 0:
            return
        st = self.store
        with st.engine.begin() as conn:
            stmt = st._ins()(t.trace_counts).values(reason=reason[:200], n=n)
            conn.execute(stmt.on_conflict_do_update(index_elements=["reason"],
                                                    set_={"n": t.trace_counts.c.n + stmt.excluded.n}))

    def counts(self) -> dict[str, int]:
        with self.store.engine.connect() as conn:
            return {r[0]: int(r[1]) for r in conn.execute(select(t.trace_counts.c.reason, t.trace_counts.c.n))}

    # -- traces out -------------------------------------------------------------------------------------------
    def quiet_traces(self, *, before_ns: int, limit: int) -> list[str]:
        with self.store.engine.connect() as conn:
            rows = conn.execute(select(t.traces.c.id).where(and_(t.traces.c.state == "open",
                                                                 t.traces.c.last_ns < before_ns))
                                .order_by(t.traces.c.last_ns, t.traces.c.id).limit(limit))
            return [r[0] for r in rows]

    def trace_spans(self, trace_id: str) -> list[dict[str, Any]]:
        with self.store.engine.connect() as conn:
            rows = conn.execute(
                select(t.spans.c.span_id, t.spans.c.parent_id, t.spans.c.name, t.spans.c.start_ns, t.spans.c.end_ns,
                       t.texts.c.packed, t.texts.c.data)
                .join(t.texts, t.texts.c.hash == t.spans.c.attrs).where(t.spans.c.trace_id == trace_id))
            out = []
            for sid, parent, name, start, end, packed, data in rows:
                body = json.loads(_unpack(packed, data))
                code, message = body.get("status") or [0, ""]
                out.append({"traceId": trace_id, "spanId": sid, "parentSpanId": parent, "name": name,
                            "startTimeUnixNano": start, "endTimeUnixNano": end, "service": body.get("service"),
                            "status": {"code": code, "message": message}, "attributes": body.get("attributes") or {}})
            return out

    def recent_traces(self, limit: int) -> list[str]:
        """The ids of the ``limit`` traces whose last span arrived last, oldest of them first."""
        if limit <= 0:
            return []
        with self.store.engine.connect() as conn:
            rows = conn.execute(select(t.traces.c.id).order_by(t.traces.c.last_ns.desc(), t.traces.c.id.desc())
                                .limit(limit))
            return [r[0] for r in rows][::-1]

    def trace_truncated(self, trace_id: str) -> bool:
        with self.store.engine.connect() as conn:
            return bool(conn.execute(select(t.traces.c.truncated).where(t.traces.c.id == trace_id)).scalar())

    def mark_trace(self, trace_id: str, state: str) -> None:
        with self.store.engine.begin() as conn:
            conn.execute(update(t.traces).where(t.traces.c.id == trace_id).values(state=state[:16]))

    def prune(self, *, older_than_ns: int | None = None, max_traces: int | None = None) -> int:
        """Delete traces whose last span arrived before ``older_than_ns`` and, past ``max_traces``, the oldest
        others, with their spans and scores. Returns the traces deleted."""
        with self.store.engine.begin() as conn:
            doomed: list[str] = []
            if older_than_ns is not None:
                doomed += [r[0] for r in conn.execute(select(t.traces.c.id).where(t.traces.c.last_ns < older_than_ns))]
            if max_traces is not None:
                total = int(conn.execute(select(func.count()).select_from(t.traces)).scalar() or 0) - len(doomed)
                if total > max_traces:
                    gone = set(doomed)
                    oldest = conn.execute(select(t.traces.c.id).order_by(t.traces.c.last_ns, t.traces.c.id)
                                          .limit(total - max_traces + len(gone)))
                    doomed += [r[0] for r in oldest if r[0] not in gone][:total - max_traces]
            for i in range(0, len(doomed), 500):
                part = doomed[i:i + 500]
                conn.execute(delete(t.trace_scores).where(t.trace_scores.c.trace_id.in_(part)))
                conn.execute(delete(t.spans).where(t.spans.c.trace_id.in_(part)))
                conn.execute(delete(t.traces).where(t.traces.c.id.in_(part)))
        if doomed:
            self.count("pruned", len(doomed))
        return len(doomed)

    def trace_count(self) -> int:
        with self.store.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(t.traces)).scalar() or 0)

    # -- scores -----------------------------------------------------------------------------------------------
    def record_score(self, score: Score) -> bool:
        st = self.store
        body = _dumps({"span_id": score.span_id, "explanation": score.explanation, "error_type": score.error_type})
        with st.engine.begin() as conn:
            h = st.put_text(conn, body)
            stmt = st._ins()(t.trace_scores).values(
                trace_id=score.trace_id, span_id=score.unit, evaluator=score.evaluator, status=score.status[:8],
                score=score.score, passed=score.passed, body=h, at_ns=score.at_ns, exported=False,
            ).on_conflict_do_nothing(index_elements=["trace_id", "span_id", "evaluator"]
                                     ).returning(t.trace_scores.c.trace_id)
            # RETURNING rather than rowcount: a row comes back only when this call inserted it, on every driver.
            return conn.execute(stmt).first() is not None

    def _scores(self, where: Any, limit: int | None = None) -> list[Score]:
        q = (select(t.trace_scores.c.trace_id, t.trace_scores.c.span_id, t.trace_scores.c.evaluator, t.trace_scores.c.status,
                    t.trace_scores.c.score, t.trace_scores.c.passed, t.trace_scores.c.at_ns,
                    t.trace_scores.c.exported, t.texts.c.packed, t.texts.c.data)
             .join(t.texts, t.texts.c.hash == t.trace_scores.c.body).where(where)
             .order_by(t.trace_scores.c.at_ns, t.trace_scores.c.trace_id, t.trace_scores.c.evaluator))
        if limit is not None:
            q = q.limit(limit)
        with self.store.engine.connect() as conn:
            out = []
            for tid, unit, ev, status, score, passed, at, exported, packed, data in conn.execute(q):
                body = json.loads(_unpack(packed, data))
                out.append(Score(trace_id=tid, span_id=body.get("span_id") or "", evaluator=ev, status=status,
                                 score=score, passed=passed, explanation=body.get("explanation"),
                                 error_type=body.get("error_type"), at_ns=at or 0, exported=bool(exported),
                                 unit=unit))
            return out

    def scored_units(self, trace_id: str) -> set[tuple[str, str]]:
        with self.store.engine.connect() as conn:
            return {(r[0], r[1]) for r in conn.execute(select(t.trace_scores.c.span_id, t.trace_scores.c.evaluator)
                                                       .where(t.trace_scores.c.trace_id == trace_id))}

    def scores(self, *, evaluator: str | None = None) -> list[Score]:
        return self._scores(t.trace_scores.c.evaluator == evaluator if evaluator is not None
                            else t.trace_scores.c.evaluator.is_not(None))

    def unexported(self, limit: int) -> list[Score]:
        return self._scores(and_(t.trace_scores.c.exported.is_(False), t.trace_scores.c.status != "skipped"),
                            limit=limit)

    def mark_exported(self, scores: Sequence[Score]) -> None:
        with self.store.engine.begin() as conn:
            for s in scores:
                conn.execute(update(t.trace_scores).where(and_(
                    t.trace_scores.c.trace_id == s.trace_id, t.trace_scores.c.span_id == s.unit,
                    t.trace_scores.c.evaluator == s.evaluator)).values(exported=True))

    def record_alert(self, alert: Alert) -> None:
        st = self.store
        with st.engine.begin() as conn:
            h = st.put_text(conn, _dumps(asdict(alert)))
            conn.execute(t.trace_alerts.insert().values(at_ns=time.time_ns(), metric=alert.metric, body=h))

    def alerts(self) -> list[dict[str, Any]]:
        with self.store.engine.connect() as conn:
            rows = conn.execute(select(t.texts.c.packed, t.texts.c.data)
                                .join(t.trace_alerts, t.trace_alerts.c.body == t.texts.c.hash)
                                .order_by(t.trace_alerts.c.id))
            return [json.loads(_unpack(p, d)) for p, d in rows]

