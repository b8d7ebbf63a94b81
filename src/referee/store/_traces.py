"""Production traces in the run-history store (SQLite or PostgreSQL): the one place their tables are written and
read. The receiver's sink (:mod:`referee.traces`) writes spans and scores through :class:`TraceStore`; the viewer's
traces page reads them back through it.

Spans are written as they arrive, one transaction per received request (the reply goes out after the commit, so a
200 means stored); traces are assembled from the store; one score per (trace, unit, evaluator) by the table's key,
so a restarted or killed monitor neither loses nor duplicates a score. Texts (a span's attributes, a score's
explanation, an alert) go through the store's ``texts``, stored once by hash.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import and_, bindparam, delete, false, func, select, true, tuple_, update

from .._util._fastjson import dumps_bytes
from . import _schema as t
from ._records import MAX_LIMIT, row_limit
from ._store import Store, digest

DEFAULT_MAX_SPANS_PER_TRACE = 10_000
"""Spans kept per trace; later ones are counted (``over_trace_cap``) and the trace marked cut."""
STATUS_ERROR = 2
"""OpenTelemetry's span status code ERROR: a trace with a stored span of this status is an error trace."""
MAX_LIST = 1000
"""The most traces :meth:`TraceStore.list_traces` returns at once."""


class SpanLike(Protocol):
    """What a span written to the store carries (``referee.traces.SpanRecord`` is one)."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    start_ns: int
    end_ns: int
    service: str | None
    status_code: int
    status_message: str
    attributes: dict[str, Any]


@dataclass(frozen=True)
class SpansWritten:
    """What became of one batch of spans: stored, duplicates ignored, over their trace's cap."""

    stored: int = 0
    duplicates: int = 0
    over_trace_cap: int = 0


@dataclass
class TraceScore:
    """One stored evaluation of a trace (``unit`` "") or of one span of it (``unit`` the span's id)."""

    trace_id: str
    span_id: str
    evaluator: str
    status: str
    score: float | None = None
    passed: bool | None = None
    explanation: str | None = None
    error_type: str | None = None
    at_ns: int = 0
    exported: bool = False
    unit: str = ""


@dataclass
class StoredTrace:
    """One stored trace as listed: its id, service, last arrival, state (``open``, ``scored`` or the reason it
    was not evaluated), spans kept, whether it was cut at the cap and whether a span of it has the status ERROR
    (set as the span was stored, kept when spans are dropped)."""

    id: str
    service: str | None
    last_ns: int | None
    state: str
    span_count: int
    truncated: bool
    error: bool = False


TRACE_CHECKPOINT_PAGES = 8192
"""SQLite pages (4 KiB) of write-ahead log between checkpoints on a connection that has written spans."""
_NEW_TRACE_COLUMNS = ("id", "service", "last_ns", "state", "span_count", "truncated", "error")
_LISTED = (t.traces.c.id, t.traces.c.service, t.traces.c.last_ns, t.traces.c.state, t.traces.c.span_count,
           t.traces.c.truncated, t.traces.c.error)


def _stored_ns(ns: int) -> int:
    """A time bound held to what a stored time can be (signed 64-bit nanoseconds, 1677 to 2262): past it, a bound
    every trace is inside, not an integer the database cannot take."""
    return max(-(2**63), min(int(ns), 2**63 - 1))


def _stored_trace(r: Any) -> StoredTrace:
    return StoredTrace(id=r[0], service=r[1], last_ns=r[2], state=r[3], span_count=int(r[4] or 0),
                       truncated=bool(r[5]), error=bool(r[6]))


def _insert_new_traces(ins: Any) -> Any:
    stmt = ins(t.traces).values({k: bindparam(k) for k in _NEW_TRACE_COLUMNS})
    return stmt.on_conflict_do_update(index_elements=["id"], set_={"error": true()}, where=stmt.excluded.error)


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str).encode()


class TraceStore:
    """The traces of a :class:`~referee.store.Store`: spans in, traces, scores, counts and alerts out."""

    def __init__(self, store: Store, *, max_spans_per_trace: int = DEFAULT_MAX_SPANS_PER_TRACE) -> None:
        self.store = store
        self.max_spans_per_trace = max_spans_per_trace
        # SQLite lets one writer in at a time and makes the others sleep and retry (1, 2, 5, 10 ms ...): the
        # receiver's threads queue here instead, each let in the moment the last one commits. Decoding and
        # redaction stay outside it. PostgreSQL takes concurrent writers itself.
        self._write_lock: threading.Lock | contextlib.nullcontext[None] = (
            threading.Lock() if store.dialect == "sqlite" else contextlib.nullcontext())

    # -- spans in ---------------------------------------------------------------------------------------------
    def add_spans(self, spans: Sequence[SpanLike], *, received_ns: int) -> SpansWritten:
        """Write one request's spans in one transaction; a span already stored (an exporter's retry) is kept once."""
        stored = duplicates = over_cap = 0
        if not spans:
            return SpansWritten()
        by_trace: dict[str, dict[str, SpanLike]] = {}
        for s in spans:
            group = by_trace.setdefault(s.trace_id, {})
            if s.span_id in group:
                duplicates += 1
            else:
                group[s.span_id] = s
        st = self.store
        with self._write_lock, st.engine.begin() as conn:
            if st.dialect == "sqlite" and not conn.info.get("trace_checkpoint"):
                # A receiver's batches touch pages all over the span and text indexes; checkpointing the log
                # every 32 MB (not SQLite's 4 MB) syncs the file an eighth as often: 17,000 -> 20,000 spans/s
                # in one process at 100,000 spans. The log is folded back when the last connection closes.
                conn.exec_driver_sql(f"PRAGMA wal_autocheckpoint={TRACE_CHECKPOINT_PAGES}")
                conn.info["trace_checkpoint"] = True
            ids = list(by_trace)
            have: dict[str, int] = {}
            had_error: set[str] = set()
            for i in range(0, len(ids), 500):
                chunk = ids[i:i + 500]
                for r in conn.execute(select(t.traces.c.id, t.traces.c.span_count, t.traces.c.error)
                                      .where(t.traces.c.id.in_(chunk))):
                    have[r[0]] = r[1]
                    if r[2]:
                        had_error.add(r[0])
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
                truncated = error = False
                first: SpanLike | None = None
                for sid, s in group.items():
                    if (tid, sid) in existing:
                        duplicates += 1
                        continue
                    if count >= self.max_spans_per_trace:
                        over_cap += 1
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
                    stored += 1
                    first = first or s
                    error = error or s.status_code == STATUS_ERROR
                if tid in have:
                    # Only a trace that turns error here is written as such: once true, never set back.
                    grown.append({"tid": tid, "n": count, "last": received_ns, "cut": truncated,
                                  "error": error and tid not in had_error})
                else:
                    new_traces.append({"id": tid, "service": first.service if first else None, "last_ns": received_ns,
                                       "state": "open", "span_count": count, "truncated": truncated,
                                       "error": error})
            st.put_texts(conn, texts)
            # Two requests racing on a new trace (PostgreSQL's READ COMMITTED) must not fail: first writer wins,
            # except that the loser's error span still marks the trace. Compiled once with the columns given (the
            # rest keep their server defaults), run by the driver.
            st._many(conn, "traces", _insert_new_traces, new_traces)
            st._many(conn, "spans", lambda ins: ins(t.spans).on_conflict_do_nothing(
                index_elements=["trace_id", "span_id"]), span_rows)
            for g in grown:
                values: dict[str, Any] = {"span_count": g["n"], "last_ns": g["last"]}
                if g["cut"]:
                    values["truncated"] = True
                if g["error"]:
                    values["error"] = True
                conn.execute(update(t.traces).where(t.traces.c.id == g["tid"]).values(**values))
        return SpansWritten(stored, duplicates, over_cap)

    def count(self, reason: str, n: int = 1) -> None:
        """Add ``n`` to the count of what was not stored or not evaluated for ``reason``."""
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
                                                                 t.traces.c.last_ns < _stored_ns(before_ns)))
                                .order_by(t.traces.c.last_ns, t.traces.c.id).limit(row_limit(limit)))
            return [r[0] for r in rows]

    def trace_spans(self, trace_id: str) -> list[dict[str, Any]]:
        """The trace's spans in the OTLP/JSON-like shape the trajectory mapping reads."""
        with self.store.engine.connect() as conn:
            rows = conn.execute(
                select(t.spans.c.span_id, t.spans.c.parent_id, t.spans.c.name, t.spans.c.start_ns, t.spans.c.end_ns,
                       t.texts.c.packed, t.texts.c.data)
                .join(t.texts, t.texts.c.hash == t.spans.c.attrs).where(t.spans.c.trace_id == trace_id))
            out = []
            for sid, parent, name, start, end, packed, data in rows:
                body = json.loads(self.store.text_of(packed, data, f"trace {trace_id}, span {sid}"))
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

    def error_traces(self) -> list[str]:
        """The ids of the traces with a span of status ERROR, in order of their last span's arrival."""
        with self.store.engine.connect() as conn:
            rows = conn.execute(select(t.traces.c.id).where(t.traces.c.error == true())
                                .order_by(t.traces.c.last_ns, t.traces.c.id))
            return [r[0] for r in rows]

    def trace_truncated(self, trace_id: str) -> bool:
        with self.store.engine.connect() as conn:
            return bool(conn.execute(select(t.traces.c.truncated).where(t.traces.c.id == trace_id)).scalar())

    def mark_trace(self, trace_id: str, state: str) -> None:
        with self.store.engine.begin() as conn:
            conn.execute(update(t.traces).where(t.traces.c.id == trace_id).values(state=state[:16]))

    def drop_spans(self, trace_id: str) -> int:
        """Delete a trace's spans, keeping its row (its state says why): a trace not sampled is then only counted.
        Returns the spans deleted."""
        with self.store.engine.begin() as conn:
            n = conn.execute(delete(t.spans).where(t.spans.c.trace_id == trace_id)).rowcount
            conn.execute(update(t.traces).where(t.traces.c.id == trace_id).values(span_count=0))
        return int(n or 0)

    def prune(self, *, older_than_ns: int | None = None, max_traces: int | None = None) -> int:
        """Delete traces whose last span arrived before ``older_than_ns`` and, past ``max_traces``, the oldest
        others, with their spans and scores. Returns the traces deleted."""
        with self.store.engine.begin() as conn:
            doomed: list[str] = []
            if older_than_ns is not None:
                doomed += [r[0] for r in conn.execute(select(t.traces.c.id).where(
                    t.traces.c.last_ns < _stored_ns(older_than_ns)))]
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

    def list_traces(self, *, service: str | None = None, state: str | None = None, since_ns: int | None = None,
                    until_ns: int | None = None, error: bool | None = None, limit: int = 100,
                    offset: int = 0) -> list[StoredTrace]:
        """Stored traces, newest arrival first, filtered by service, state, arrival time (``until_ns``
        excluded) and ``error`` (True: those with a span of status ERROR; False: those without)."""
        limit = max(1, min(int(limit), MAX_LIST))
        q = select(*_LISTED)
        if error is not None:
            # ``error = true`` is the partial index's own condition (``ix_traces_error_last``): the error traces
            # are read from it in arrival order; ``error = false`` reads the table, as the other filters do.
            q = q.where(t.traces.c.error == (true() if error else false()))
        if service is not None:
            q = q.where(t.traces.c.service == service)
        if state is not None:
            q = q.where(t.traces.c.state == state)
        if since_ns is not None:
            q = q.where(t.traces.c.last_ns >= _stored_ns(since_ns))
        if until_ns is not None:
            q = q.where(t.traces.c.last_ns < _stored_ns(until_ns))
        q = q.order_by(t.traces.c.last_ns.desc(), t.traces.c.id).limit(limit).offset(
            min(max(0, int(offset)), MAX_LIMIT))
        with self.store.engine.connect() as conn:
            return [_stored_trace(r) for r in conn.execute(q)]

    def get_trace(self, trace_id: str) -> StoredTrace | None:
        with self.store.engine.connect() as conn:
            r = conn.execute(select(*_LISTED).where(t.traces.c.id == trace_id)).first()
        return None if r is None else _stored_trace(r)

    def trace_facets(self) -> dict[str, list[str]]:
        """The services and states stored traces have (the viewer's filter choices)."""
        with self.store.engine.connect() as conn:
            services = sorted(r[0] for r in conn.execute(select(t.traces.c.service).distinct())
                              if r[0] is not None)
            states = sorted(r[0] for r in conn.execute(select(t.traces.c.state).distinct()))
            evaluators = sorted(r[0] for r in conn.execute(select(t.trace_scores.c.evaluator).distinct()))
        return {"services": services, "states": states, "evaluators": evaluators}

    # -- scores -----------------------------------------------------------------------------------------------
    def record_score(self, score: TraceScore) -> bool:
        """Store the score unless one is stored for its (trace, unit, evaluator); True when this call stored it."""
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

    def _scores(self, where: Any, limit: int | None = None, *, newest: bool = False) -> list[TraceScore]:
        c = t.trace_scores.c
        q = (select(c.trace_id, c.span_id, c.evaluator, c.status, c.score, c.passed, c.at_ns, c.exported,
                    t.texts.c.packed, t.texts.c.data)
             .join(t.texts, t.texts.c.hash == c.body).where(where))
        q = q.order_by(c.at_ns.desc(), c.trace_id.desc(), c.evaluator.desc()) if newest else \
            q.order_by(c.at_ns, c.trace_id, c.evaluator)
        if limit is not None:
            q = q.limit(limit)
        with self.store.engine.connect() as conn:
            out = []
            for tid, unit, ev, status, score, passed, at, exported, packed, data in conn.execute(q):
                body = json.loads(self.store.text_of(packed, data, f"trace {tid}, the score of {ev!r}"))
                out.append(TraceScore(trace_id=tid, span_id=body.get("span_id") or "", evaluator=ev, status=status,
                                      score=score, passed=passed, explanation=body.get("explanation"),
                                      error_type=body.get("error_type"), at_ns=at or 0, exported=bool(exported),
                                      unit=unit))
            return out[::-1] if newest else out

    def scored_units(self, trace_id: str) -> set[tuple[str, str]]:
        with self.store.engine.connect() as conn:
            return {(r[0], r[1]) for r in conn.execute(select(t.trace_scores.c.span_id, t.trace_scores.c.evaluator)
                                                       .where(t.trace_scores.c.trace_id == trace_id))}

    def scores(self, *, evaluator: str | None = None, trace_id: str | None = None,
               trace_ids: Sequence[str] | None = None, last: int | None = None) -> list[TraceScore]:
        """Stored scores, oldest first: of one evaluator, one trace, or the traces named; ``last``: only the
        newest that many."""
        c = t.trace_scores.c
        conds: list[Any] = [c.evaluator.is_not(None)]
        if evaluator is not None:
            conds.append(c.evaluator == evaluator)
        if trace_id is not None:
            conds.append(c.trace_id == trace_id)
        if trace_ids is not None:
            if not trace_ids:
                return []
            out: list[TraceScore] = []
            ids = list(trace_ids)
            for i in range(0, len(ids), 500):
                out += self._scores(and_(*conds, c.trace_id.in_(ids[i:i + 500])))
            return out
        return self._scores(and_(*conds), last, newest=last is not None)

    def score_values(self, evaluator: str, *, last: int) -> list[tuple[int, float]]:
        """(when, score) of the evaluator's newest ``last`` scored traces, oldest first: what a chart needs, without
        reading the explanations."""
        c = t.trace_scores.c
        q = (select(c.at_ns, c.score).where(and_(c.evaluator == evaluator, c.status == "scored",
                                                 c.score.is_not(None)))
             .order_by(c.at_ns.desc(), c.trace_id.desc(), c.span_id.desc()).limit(last))
        with self.store.engine.connect() as conn:
            return [(int(r[0] or 0), float(r[1])) for r in conn.execute(q)][::-1]

    def count_scores(self, *, evaluator: str | None = None, status: str | None = None) -> int:
        """How many scores are stored (of one evaluator, with one status)."""
        c = t.trace_scores.c
        q = select(func.count()).select_from(t.trace_scores)
        if evaluator is not None:
            q = q.where(c.evaluator == evaluator)
        if status is not None:
            q = q.where(c.status == status)
        with self.store.engine.connect() as conn:
            return int(conn.execute(q).scalar() or 0)

    def unexported(self, limit: int) -> list[TraceScore]:
        return self._scores(and_(t.trace_scores.c.exported.is_(False), t.trace_scores.c.status != "skipped"),
                            limit=limit)

    def mark_exported(self, scores: Sequence[TraceScore] | Sequence[Any]) -> None:
        """Mark these scores (anything with ``trace_id``, ``unit`` and ``evaluator``) as accepted by the collector."""
        with self.store.engine.begin() as conn:
            for s in scores:
                conn.execute(update(t.trace_scores).where(and_(
                    t.trace_scores.c.trace_id == s.trace_id, t.trace_scores.c.span_id == s.unit,
                    t.trace_scores.c.evaluator == s.evaluator)).values(exported=True))

    # -- alerts -----------------------------------------------------------------------------------------------
    def record_alert(self, alert: Mapping[str, Any]) -> None:
        """Store a drift alert (its fields as a mapping; ``metric`` required)."""
        st = self.store
        with st.engine.begin() as conn:
            h = st.put_text(conn, _dumps(dict(alert)))
            conn.execute(t.trace_alerts.insert().values(at_ns=time.time_ns(), metric=str(alert["metric"]), body=h))

    def alerts(self) -> list[dict[str, Any]]:
        """Stored drift alerts, oldest first, each with the time it was raised (``at_ns``)."""
        with self.store.engine.connect() as conn:
            rows = conn.execute(select(t.trace_alerts.c.at_ns, t.texts.c.packed, t.texts.c.data)
                                .join(t.trace_alerts, t.trace_alerts.c.body == t.texts.c.hash)
                                .order_by(t.trace_alerts.c.id))
            return [{**json.loads(self.store.text_of(p, d, "a drift alert")), "at_ns": at} for at, p, d in rows]


__all__ = ["DEFAULT_MAX_SPANS_PER_TRACE", "STATUS_ERROR", "SpanLike", "SpansWritten", "StoredTrace", "TraceScore",
           "TraceStore"]
