"""The trace sink on the run-history store (SQLite or PostgreSQL), through the store's public face for traces
(:class:`referee.store.TraceStore`): spans written as they arrive, one transaction per received request; traces
assembled from the store; one score per (trace, evaluator) by the table's key, so a restarted or killed monitor
neither loses nor duplicates a score."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from ..store import Store, TraceScore, TraceStore
from ._drift import Alert
from ._otlp import SpanRecord
from ._sink import DEFAULT_MAX_SPANS_PER_TRACE, Added, Score

OFFLINE_LOOK_BACK = 20
"""The suite's newest complete runs searched for one that scored the alert's metric."""


def _score(s: TraceScore) -> Score:
    return Score(trace_id=s.trace_id, span_id=s.span_id, evaluator=s.evaluator, status=s.status, score=s.score,
                 passed=s.passed, explanation=s.explanation, error_type=s.error_type, at_ns=s.at_ns,
                 exported=s.exported, unit=s.unit)


class StoreSink:
    """:class:`~referee.traces.TraceSink` on a :class:`~referee.store.Store`."""

    def __init__(self, store: Store, *, max_spans_per_trace: int = DEFAULT_MAX_SPANS_PER_TRACE) -> None:
        self.store = store
        self.traces = TraceStore(store, max_spans_per_trace=max_spans_per_trace)

    @property
    def max_spans_per_trace(self) -> int:
        return self.traces.max_spans_per_trace

    def add_spans(self, spans: Sequence[SpanRecord], *, received_ns: int) -> Added:
        w = self.traces.add_spans(spans, received_ns=received_ns)
        return Added(stored=w.stored, duplicates=w.duplicates, over_trace_cap=w.over_trace_cap)

    def count(self, reason: str, n: int = 1) -> None:
        self.traces.count(reason, n)

    def counts(self) -> dict[str, int]:
        return self.traces.counts()

    def quiet_traces(self, *, before_ns: int, limit: int) -> list[str]:
        return self.traces.quiet_traces(before_ns=before_ns, limit=limit)

    def trace_spans(self, trace_id: str) -> list[dict[str, Any]]:
        return self.traces.trace_spans(trace_id)

    def recent_traces(self, limit: int) -> list[str]:
        return self.traces.recent_traces(limit)

    def error_traces(self) -> list[str]:
        return self.traces.error_traces()

    def trace_truncated(self, trace_id: str) -> bool:
        return self.traces.trace_truncated(trace_id)

    def mark_trace(self, trace_id: str, state: str) -> None:
        self.traces.mark_trace(trace_id, state)

    def drop_spans(self, trace_id: str) -> int:
        return self.traces.drop_spans(trace_id)

    def prune(self, *, older_than_ns: int | None = None, max_traces: int | None = None) -> int:
        return self.traces.prune(older_than_ns=older_than_ns, max_traces=max_traces)

    def trace_count(self) -> int:
        return self.traces.trace_count()

    def record_score(self, score: Score) -> bool:
        return self.traces.record_score(TraceScore(**asdict(score)))

    def scored_units(self, trace_id: str) -> set[tuple[str, str]]:
        return self.traces.scored_units(trace_id)

    def scores(self, *, evaluator: str | None = None) -> list[Score]:
        return [_score(s) for s in self.traces.scores(evaluator=evaluator)]

    def unexported(self, limit: int) -> list[Score]:
        return [_score(s) for s in self.traces.unexported(limit)]

    def mark_exported(self, scores: Sequence[Score]) -> None:
        self.traces.mark_exported(scores)

    def record_alert(self, alert: Alert) -> None:
        self.traces.record_alert(asdict(alert))

    def alerts(self) -> list[dict[str, Any]]:
        return self.traces.alerts()

    def offline_context(self, suite: str, metric: str, *, sole: bool = False,
                        look_back: int = OFFLINE_LOOK_BACK) -> dict[str, Any] | None:
        """The newest complete run of ``suite`` in the history whose rows scored ``metric``: its case mean with
        a 95% bootstrap interval (repeats and turns averaged within a case first). ``sole``: the suite has this
        one evaluator, so a row of one evaluator is its result whatever that evaluator calls itself (a suite
        of one ``llm_judge`` writes ``judge`` rows). Only ``look_back`` runs are read; None when none of them
        has the metric."""
        from ..stats import mean_interval

        for rec in self.store.list_runs(suite=suite, status="complete", limit=look_back):
            per_case: dict[str, list[float]] = {}
            for row in self.store.rows(rec.id):
                checks = row.checks
                check = checks.get(metric)
                if check is None and sole and len(checks) == 1 and row.evaluator != "suite":
                    check = next(iter(checks.values()))
                if check is None or check.status != "scored" or check.score is None or not math.isfinite(check.score):
                    continue
                per_case.setdefault(row.id, []).append(float(check.score))
            if not per_case:
                continue
            ci = mean_interval([sum(v) / len(v) for v in per_case.values()])
            return {"run": rec.id, "suite": suite, "started_at": rec.started_at, "commit": rec.git_commit,
                    "branch": rec.git_branch, "mean": ci.estimate, "low": ci.lo, "high": ci.hi, "n": ci.n}
        return None
