"""The viewer's traces page (``referee view`` over a store that ``referee collect`` fills): the stored production
traces with filters (service, arrival time, state, with an error span), each metric's monitor scores over time
with the drift alerts marked, and a trace opened as the case the monitor judged (the one span mapping,
:mod:`referee.trajectories`) beside its spans, its scores and the alerts that name it.

Everything is read through the store's face for traces (:class:`referee.store.TraceStore`); every text from a
span (names, attributes, messages) is data, sent as JSON strings and put in the page as text nodes.
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime
from typing import Any

from ..store import StoredTrace, StoreError, TraceScore, TraceStore
from ..trajectories import TrajectoryError, case_from_spans, span_view
from ._app import ApiError

MAX_TRACES = 500
"""The most traces one page lists (``limit``)."""
MAX_SPANS_SHOWN = 2000
"""A trace's spans shown on its page (a larger trace is cut, and says so)."""
MAX_ATTR_CHARS = 20_000
"""A span's attributes longer than this (as JSON) are shown cut."""
MAX_POINTS = 40
"""Points per metric chart: scores are taken in order of scoring and grouped into at most this many."""
MAX_CHART_SCORES = 20_000
"""A metric's chart draws its newest this many scores (a page load reads no more)."""
_TRACE_ID = re.compile(r"[0-9a-fA-F]{1,32}")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$")


def _iso(ns: int | None) -> str | None:
    if ns is None:
        return None
    return datetime.fromtimestamp(ns / 1e9, UTC).isoformat(timespec="seconds")


def _ns(name: str, value: str) -> int:
    if not _DATE.match(value):
        raise ApiError(400, f"{name} must be a date (YYYY-MM-DD) or an ISO time")
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ApiError(400, f"{name} must be a date (YYYY-MM-DD) or an ISO time") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    ns = int(dt.timestamp() * 1e9)
    # A day given as `until` includes that whole day.
    return ns + 86_400 * 10**9 if name == "until" and len(value) == 10 else ns


def _int(params: dict[str, str], name: str, default: int, lo: int, hi: int) -> int:
    v = params.get(name)
    if v in (None, ""):
        return default
    try:
        n = int(v)
    except ValueError:
        raise ApiError(400, f"{name} must be a whole number") from None
    if not lo <= n <= hi:
        raise ApiError(400, f"{name} must be between {lo} and {hi}")
    return n


def _flag(params: dict[str, str], name: str) -> bool | None:
    """``1`` -> True, ``0`` -> False, absent or empty -> None (no filter); anything else is a 400."""
    v = params.get(name)
    if v in (None, ""):
        return None
    if v in ("0", "1"):
        return v == "1"
    raise ApiError(400, f"{name} must be 1 (only traces with an error span) or 0 (only traces without one)")


def _finite(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) else None


def _score_dict(s: TraceScore) -> dict[str, Any]:
    return {"evaluator": s.evaluator, "unit": s.unit, "span_id": s.span_id, "status": s.status,
            "score": _finite(s.score), "passed": s.passed, "explanation": s.explanation, "error_type": s.error_type,
            "at": _iso(s.at_ns) if s.at_ns else None, "exported": s.exported}


def _trace_dict(tr: StoredTrace) -> dict[str, Any]:
    return {"id": tr.id, "service": tr.service, "last_at": _iso(tr.last_ns), "state": tr.state,
            "spans": tr.span_count, "truncated": tr.truncated, "error": tr.error}


def _alert_dict(a: dict[str, Any]) -> dict[str, Any]:
    keys = ("metric", "reference_mean", "reference_n", "window_mean", "window_n", "effect", "low", "high", "at_index")
    out: dict[str, Any] = {k: a.get(k) for k in keys}
    for k in ("reference_mean", "window_mean", "effect", "low", "high"):
        out[k] = _finite(out[k])
    out["examples"] = [str(x) for x in (a.get("examples") or [])][:20]
    out["at"] = _iso(a.get("at_ns")) if isinstance(a.get("at_ns"), int) else None
    out["at_ns"] = a.get("at_ns") if isinstance(a.get("at_ns"), int) else None
    out["offline"] = _offline_dict(a.get("offline"))
    return out


def _offline_dict(o: Any) -> dict[str, Any] | None:
    """An alert's offline run (context beside the windows), its fields checked: a stored alert is read back as
    data."""
    if not isinstance(o, dict) or _finite(o.get("mean")) is None:
        return None
    text = {k: (str(o[k])[:limit] if isinstance(o.get(k), str) else None)
            for k, limit in (("run", 32), ("started_at", 32), ("commit", 12), ("branch", 200))}
    n = o.get("n")
    return {**text, "mean": _finite(o.get("mean")), "low": _finite(o.get("low")), "high": _finite(o.get("high")),
            "n": n if isinstance(n, int) and not isinstance(n, bool) else None}


class TracesPage:
    """The traces endpoints over one store (the viewer's history store)."""

    def __init__(self, store: Any, display: str) -> None:
        self.traces = TraceStore(store)
        self.display = display

    def api_list(self, params: dict[str, str]) -> dict[str, Any]:
        service = params.get("service") or None
        state = params.get("state") or None
        since = (params.get("since") or "").strip()
        until = (params.get("until") or "").strip()
        error = _flag(params, "error")
        limit = _int(params, "limit", 100, 1, MAX_TRACES)
        offset = _int(params, "offset", 0, 0, 10**9)
        try:
            rows = self.traces.list_traces(service=service, state=state,
                                           since_ns=_ns("since", since) if since else None,
                                           until_ns=_ns("until", until) if until else None, error=error,
                                           limit=limit + 1, offset=offset)
            shown = rows[:limit]
            scores = self.traces.scores(trace_ids=[r.id for r in shown])
            facets = self.traces.trace_facets()
            counts = self.traces.counts()
            alerts = [_alert_dict(a) for a in self.traces.alerts()]
            total = self.traces.trace_count()
        except StoreError as exc:
            raise ApiError(503, str(exc)) from None
        by_trace: dict[str, list[dict[str, Any]]] = {}
        for s in scores:
            by_trace.setdefault(s.trace_id, []).append(_score_dict(s))
        return {"store": self.display, "total": total, "more": len(rows) > limit, "offset": offset,
                "traces": [_trace_dict(r) | {"scores": by_trace.get(r.id, [])} for r in shown],
                "facets": facets, "counts": dict(sorted(counts.items())), "alerts": alerts,
                "charts": self._charts(facets["evaluators"], alerts)}

    def _charts(self, metrics: list[str], alerts: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Each metric's scores in scoring order, grouped into at most MAX_POINTS points (the mean of each group,
        the band its range); the group holding the score an alert was raised on is marked red."""
        from ..reports._charts import TrendPoint, trend

        out: list[dict[str, Any]] = []
        for m in metrics:
            newest = self.traces.score_values(m, last=MAX_CHART_SCORES)
            vals = [(at, v) for at, v in newest if math.isfinite(v)]
            if not vals:
                continue
            # The scores before the drawn ones (an alert counts every score of its metric since the start).
            before = (self.traces.count_scores(evaluator=m, status="scored") - len(newest)
                      if len(newest) == MAX_CHART_SCORES else 0)
            size = max(1, math.ceil(len(vals) / MAX_POINTS))
            # An alert names how many of the metric's scores had been seen when it alarmed: its point holds that one.
            raised = {int(a["at_index"]) - 1 - before for a in alerts
                      if a["metric"] == m and isinstance(a["at_index"], int)}
            points = []
            for i in range(0, len(vals), size):
                group = vals[i:i + size]
                last = group[-1][0]
                hit = any(i <= at < i + size for at in raised)
                mean = sum(v for _, v in group) / len(group)
                points.append(TrendPoint(label=f"{len(group)} score(s) to {_iso(last) or '?'}", value=mean,
                                         lo=min(v for _, v in group), hi=max(v for _, v in group), regression=hit))
            lo_hi = 0 <= min(v for _, v in vals) and max(v for _, v in vals) <= 1
            # The level the drift statistic compares each score against: its newest alert's reference mean.
            ref = next((a["reference_mean"] for a in reversed(alerts) if a["metric"] == m), None)
            offline = next((a["offline"] for a in reversed(alerts) if a["metric"] == m and a["offline"]), None)
            out.append({"id": f"traces-{len(out)}", "metric": m, "title": f"{m} over time", "before": before,
                        "reference": ref, "offline": offline,
                        "svg": trend(points, title=m, percent=False, chart_id=f"traces-{len(out)}", gate=ref,
                                     gate_label="reference").svg,
                        "n": len(vals), "per_point": size, "unit_range": lo_hi})
        return out

    def api_trace(self, trace_id: str) -> dict[str, Any]:
        if not _TRACE_ID.fullmatch(trace_id):
            raise ApiError(400, "a trace id is up to 32 hex digits")
        try:
            tr = self.traces.get_trace(trace_id)
            if tr is None:
                raise ApiError(404, f"no trace {trace_id} in the store")
            spans = self.traces.trace_spans(trace_id)
            scores = self.traces.scores(trace_id=trace_id)
            alerts = [_alert_dict(a) for a in self.traces.alerts() if trace_id in (a.get("examples") or [])]
        except StoreError as exc:
            raise ApiError(503, str(exc)) from None
        spans.sort(key=lambda s: (int(s.get("startTimeUnixNano") or 0), str(s.get("spanId"))))
        case: dict[str, Any] | None = None
        case_error: str | None = None
        try:
            case = case_from_spans(spans, case_id=trace_id)
        except TrajectoryError as exc:
            case_error = str(exc)
        shown = []
        for s in spans[:MAX_SPANS_SHOWN]:
            view = span_view(s)
            start, end = s.get("startTimeUnixNano"), s.get("endTimeUnixNano")
            attrs = s.get("attributes") or {}
            text = json.dumps(attrs, ensure_ascii=False, indent=1, sort_keys=True, default=str)
            status = s.get("status") or {}
            shown.append({"span_id": s.get("spanId"), "parent_id": s.get("parentSpanId"), "name": s.get("name"),
                          "service": s.get("service"), "kind": view.kind if view is not None else None,
                          "start": _iso(start) if isinstance(start, int) else None,
                          "duration_ms": (end - start) / 1e6 if isinstance(start, int) and isinstance(end, int)
                          else None,
                          "status": {0: "unset", 1: "ok", 2: "error"}.get(int(status.get("code") or 0), "unset"),
                          "status_message": status.get("message") or "",
                          "attributes": text[:MAX_ATTR_CHARS], "attributes_cut": len(text) > MAX_ATTR_CHARS})
        return {"trace": _trace_dict(tr), "case": case, "case_error": case_error, "spans": shown,
                "spans_cut": len(spans) > MAX_SPANS_SHOWN, "scores": [_score_dict(s) for s in scores],
                "alerts": alerts}


def traces_page(app: Any) -> TracesPage:
    """The traces page of a viewer that reads a store (404 otherwise); one per viewer."""
    h = getattr(app, "history", None)
    if h is None:
        raise ApiError(404, "this viewer reads no store (start it with no results file, or with --store)")
    page = getattr(h, "traces_page", None)
    if page is None:
        page = TracesPage(h.store, h.display)
        h.traces_page = page
    return page


__all__ = ["TracesPage", "traces_page"]
