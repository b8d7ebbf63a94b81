"""Where received spans go, and what the monitor reads back: the protocol the receiver and the monitor speak.
The run-history store implements it for real; :class:`MemorySink` serves a process that keeps nothing (and the
tests of the receiver alone).

Spans are written as they arrive (nothing waits in memory for its trace to end); a trace is assembled from what
was written. A span written twice (an exporter's retry) is kept once, by (trace id, span id).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ._otlp import SpanRecord

DEFAULT_MAX_SPANS_PER_TRACE = 10_000
STATUS_ERROR = 2
"""OpenTelemetry's span status code ERROR: a trace with a kept span of this status is an error trace."""
"""Spans kept per trace; later ones are counted (``over_trace_cap``) and the trace is evaluated as unscored
(``trace too large``), never judged on a part of it."""


@dataclass
class Added:
    """What became of one batch: spans stored, duplicates ignored, spans over their trace's cap."""

    stored: int = 0
    duplicates: int = 0
    over_trace_cap: int = 0


@dataclass
class Score:
    """One evaluation of one trace, as stored and exported (one per (trace, evaluator))."""

    trace_id: str
    span_id: str
    evaluator: str
    status: str
    """``scored``, ``unscored`` or ``error`` (a row's status), or ``skipped``."""
    score: float | None = None
    passed: bool | None = None
    explanation: str | None = None
    error_type: str | None = None
    at_ns: int = 0
    exported: bool = False
    unit: str = ""
    """Empty: the score is the whole trace's; else the id of the span the case was made of (``monitor: spans:``)."""


class TraceSink(Protocol):
    """Spans in as they arrive (one copy per (trace, span)), traces and scores out: what the receiver and the
    monitor need of a store."""

    def add_spans(self, spans: Sequence[SpanRecord], *, received_ns: int) -> Added: ...
    def count(self, reason: str, n: int = 1) -> None: ...
    def counts(self) -> dict[str, int]: ...
    def quiet_traces(self, *, before_ns: int, limit: int) -> list[str]: ...
    def trace_spans(self, trace_id: str) -> list[dict[str, Any]]: ...
    def recent_traces(self, limit: int) -> list[str]: ...
    def error_traces(self) -> list[str]: ...
    def trace_truncated(self, trace_id: str) -> bool: ...
    def mark_trace(self, trace_id: str, state: str) -> None: ...
    def drop_spans(self, trace_id: str) -> int: ...
    def record_score(self, score: Score) -> bool: ...
    def scored_units(self, trace_id: str) -> set[tuple[str, str]]: ...
    def prune(self, *, older_than_ns: int | None = None, max_traces: int | None = None) -> int: ...
    def scores(self, *, evaluator: str | None = None) -> list[Score]: ...
    def unexported(self, limit: int) -> list[Score]: ...
    def mark_exported(self, scores: Sequence[Score]) -> None: ...


@dataclass
class _Trace:
    spans: dict[str, dict[str, Any]] = field(default_factory=dict)
    last_ns: int = 0
    truncated: bool = False
    state: str = "open"
    error: bool = False


class MemorySink:
    """The sink in memory, bounded by ``max_spans_per_trace`` per trace (nothing survives the process)."""

    def __init__(self, *, max_spans_per_trace: int = DEFAULT_MAX_SPANS_PER_TRACE) -> None:
        self.max_spans_per_trace = max_spans_per_trace
        self._lock = threading.Lock()
        self._traces: dict[str, _Trace] = {}
        self._counts: dict[str, int] = {}
        self._scores: dict[tuple[str, str, str], Score] = {}

    def add_spans(self, spans: Sequence[SpanRecord], *, received_ns: int) -> Added:
        out = Added()
        with self._lock:
            for s in spans:
                t = self._traces.setdefault(s.trace_id, _Trace())
                if s.span_id in t.spans:
                    out.duplicates += 1
                    continue
                if len(t.spans) >= self.max_spans_per_trace:
                    t.truncated = True
                    out.over_trace_cap += 1
                    continue
                t.spans[s.span_id] = s.as_dict()
                t.last_ns = max(t.last_ns, received_ns)
                t.error = t.error or s.status_code == STATUS_ERROR
                out.stored += 1
        return out

    def count(self, reason: str, n: int = 1) -> None:
        with self._lock:
            self._counts[reason] = self._counts.get(reason, 0) + n

    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def quiet_traces(self, *, before_ns: int, limit: int) -> list[str]:
        with self._lock:
            ready = [(t.last_ns, tid) for tid, t in self._traces.items() if t.state == "open" and t.last_ns < before_ns]
        return [tid for _, tid in sorted(ready)[:limit]]

    def trace_spans(self, trace_id: str) -> list[dict[str, Any]]:
        with self._lock:
            t = self._traces.get(trace_id)
            return list(t.spans.values()) if t else []

    def recent_traces(self, limit: int) -> list[str]:
        """The ids of the ``limit`` traces whose last span arrived last, oldest of them first."""
        with self._lock:
            order = sorted((t.last_ns, tid) for tid, t in self._traces.items())
        return [tid for _, tid in order[-limit:]] if limit > 0 else []

    def error_traces(self) -> list[str]:
        """The ids of the traces with a span of status ERROR, in order of their last span's arrival."""
        with self._lock:
            return [tid for _, tid in sorted((t.last_ns, tid) for tid, t in self._traces.items() if t.error)]

    def trace_truncated(self, trace_id: str) -> bool:
        with self._lock:
            t = self._traces.get(trace_id)
            return bool(t and t.truncated)

    def mark_trace(self, trace_id: str, state: str) -> None:
        with self._lock:
            if trace_id in self._traces:
                self._traces[trace_id].state = state

    def drop_spans(self, trace_id: str) -> int:
        with self._lock:
            t = self._traces.get(trace_id)
            if t is None:
                return 0
            n = len(t.spans)
            t.spans.clear()
            return n

    def record_score(self, score: Score) -> bool:
        with self._lock:
            key = (score.trace_id, score.unit, score.evaluator)
            if key in self._scores:
                return False
            self._scores[key] = score
            return True

    def prune(self, *, older_than_ns: int | None = None, max_traces: int | None = None) -> int:
        with self._lock:
            order = sorted(self._traces, key=lambda tid: (self._traces[tid].last_ns, tid))
            doomed = [tid for tid in order if older_than_ns is not None and self._traces[tid].last_ns < older_than_ns]
            rest = [tid for tid in order if tid not in set(doomed)]
            if max_traces is not None and len(rest) > max_traces:
                doomed += rest[:len(rest) - max_traces]
            for tid in doomed:
                del self._traces[tid]
            for key in [k for k in self._scores if k[0] in set(doomed)]:
                del self._scores[key]
            if doomed:
                self._counts["pruned"] = self._counts.get("pruned", 0) + len(doomed)
            return len(doomed)

    def scored_units(self, trace_id: str) -> set[tuple[str, str]]:
        with self._lock:
            return {(unit, ev) for (tid, unit, ev) in self._scores if tid == trace_id}

    def scores(self, *, evaluator: str | None = None) -> list[Score]:
        with self._lock:
            return [s for s in self._scores.values() if evaluator is None or s.evaluator == evaluator]

    def unexported(self, limit: int) -> list[Score]:
        with self._lock:
            return [s for s in self._scores.values() if not s.exported and s.status != "skipped"][:limit]

    def mark_exported(self, scores: Sequence[Score]) -> None:
        with self._lock:
            for s in scores:
                s.exported = True
                key = (s.trace_id, s.unit, s.evaluator)
                if key in self._scores:
                    self._scores[key].exported = True

