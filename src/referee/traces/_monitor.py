"""Online evaluation: traces from the sink, sampled, mapped to cases and evaluated by the one runner
(:func:`referee.evaluate_async`, the same path as ``referee run``), one stored score per (trace, evaluator),
drift alerts, and the scores exported as ``gen_ai.evaluation.result`` events.

A trace is ready when no span has arrived for ``quiet_seconds`` (by the injected clock). Each pass
(:meth:`Monitor.step`) takes ready traces, decides which to evaluate, evaluates them evaluator by evaluator
(cases already scored for an evaluator are not sent again, so a restart resumes where it stopped), records each
score before the trace is closed, then exports what is not yet exported. Judge calls and exports are
at-least-once: a crash between a judge reply and its record repeats the call (the response cache makes it
free), and between an export and its mark repeats the export.

Nothing is dropped silently: each skipped evaluation is counted by reason (``sampled_out``, ``over_cap``,
``budget_lowered_rate``, ``over_budget``, ``not_matched``, ``no_case``, ``too_large``, ``evaluator_error``,
``judge_unavailable``) in the sink's counts.
"""

from __future__ import annotations

import http.client
import itertools
import json
import logging
import math
import re
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from .._util._hints import refuse_unknown
from ..errors import ProviderError, UserError
from ..runner._engine import FatalRunError
from ..trajectories import TrajectoryError, case_from_span, case_from_spans, span_view
from ._drift import DEFAULT_H, DEFAULT_K, DEFAULT_REFERENCE, DEFAULT_WINDOW, Alert, DriftDetector
from ._export import EvaluationExporter
from ._sampler import Rule, Sampler
from ._sink import Score, TraceSink

log = logging.getLogger(__name__)

DEFAULT_QUIET_SECONDS = 30.0
"""A trace is complete when none of its spans arrived for this long."""
DEFAULT_BATCH = 64
"""Traces taken per pass."""
DEFAULT_MAX_INPUT_CHARS = 100_000
"""A trace whose case text is longer is not judged (``too_large``)."""
DEFAULT_RETENTION_DAYS = 30.0
"""Traces whose last span arrived longer ago are deleted with their spans and scores."""
DEFAULT_MAX_TRACES = 1_000_000
"""Past this many stored traces, the oldest are deleted."""
PRUNE_EVERY_S = 60.0
MIN_BUDGET_FACTOR = 1 / 1024
"""The budget lowers the sampling rate at most to this fraction of the configured one (then stops at the budget)."""
BUDGET_FLOOR_S = 60.0
"""The spend of a monitor younger than this is projected to the hour as if it had run this long."""
DEFAULT_MAX_ATTEMPTS = 3
# Upper bounds of the section's numbers: past them a value is a mistake (or meant "no limit", which is null where
# the section allows it), and a drift window or a pass of that size would be held in memory.
MAX_QUIET_SECONDS = 86_400.0
MAX_BATCH = 10_000
MAX_DRIFT_SIZE = 100_000
MAX_RETENTION_DAYS = 36_525.0
"""Passes an evaluator error is retried before the score is stored as ``error``."""


@dataclass
class MonitorConfig:
    """The ``monitor:`` section of a suite (docs/monitoring.md)."""

    evaluators: list[Any]
    traces: list[Rule] = field(default_factory=list)
    """Which traces (any rule matches; none: every trace)."""
    sampler: Sampler = field(default_factory=Sampler)
    quiet_seconds: float = DEFAULT_QUIET_SECONDS
    budget_usd_per_hour: float | None = None
    max_input_chars: int = DEFAULT_MAX_INPUT_CHARS
    export_endpoint: str | None = None
    export_headers: dict[str, str] = field(default_factory=dict)
    webhook: str | None = None
    drift_reference: int = DEFAULT_REFERENCE
    drift_window: int = DEFAULT_WINDOW
    drift_k: float = DEFAULT_K
    drift_h: float = DEFAULT_H
    threshold: float = 0.7
    batch: int = DEFAULT_BATCH
    """Traces taken per pass (each pass's scores are stored when its evaluation returns)."""
    spans: SpanFilter | None = None
    """Evaluate chosen spans, one case each (retrieval spans for the grounded metrics), instead of one case per
    trace."""
    retention_days: float | None = DEFAULT_RETENTION_DAYS
    max_traces: int | None = DEFAULT_MAX_TRACES
    keep_unsampled: bool = True
    """``sampling.keep_unsampled``: false deletes the spans of a trace once it is decided not to be evaluated
    (``sampled_out``, ``budget_lowered_rate``, ``not_matched``), keeping its row and the counts."""
    at_ingest: bool = False
    """``sampling.at_ingest``: the rate applies when spans arrive, so traces not sampled are never stored (only
    counted)."""
    suite: str | None = None
    """How the run history names the suite this monitor came from (:func:`referee.store.label_of_suite`): its
    newest offline run is shown beside each alert for context. None: no offline run is looked up."""

    @property
    def ingest_rate(self) -> float | None:
        """The rate the receiver (and ``--replay``) stores traces at, or None: every trace is stored."""
        return self.sampler.rate if self.at_ingest else None

    @classmethod
    def parse(cls, section: Mapping[str, Any], evaluators: Sequence[Any], *, where: str = "monitor",
              clock: Callable[[], float] = time.time) -> MonitorConfig:
        known = {"traces", "sampling", "quiet_seconds", "budget", "max_input_chars", "export", "alerts",
                 "threshold", "redact", "batch", "retention", "spans"}
        refuse_unknown(section, known, where)
        rules = [Rule.parse(r, f"{where}.traces[{i}]") for i, r in enumerate(_list(section, "traces", where))]
        samp = _part(section, "sampling", {"rate", "always", "per_minute", "at_ingest", "keep_unsampled"}, where)
        keep_unsampled = samp.get("keep_unsampled", True)
        if not isinstance(keep_unsampled, bool):
            raise UserError(f"{where}.sampling.keep_unsampled: expected true or false, got {keep_unsampled!r}")
        at_ingest = samp.get("at_ingest", False)
        if not isinstance(at_ingest, bool):
            raise UserError(f"{where}.sampling.at_ingest: expected true or false, got {at_ingest!r}")
        if at_ingest and samp.get("always"):
            # Spans arrive a request at a time and nothing waits in memory: at ingest the decision can read only
            # the trace id, never a rule over the whole trace.
            raise UserError(f"{where}.sampling: at_ingest decides by the trace id alone, so it cannot keep the "
                            "traces 'always' rules match; drop one of them")
        # Checked here too, so that an error names the field (and the file its line) as the other fields' do.
        _num(samp, "rate", 1.0, f"{where}.sampling", least=0, most=1)
        if samp.get("per_minute") is not None:
            _whole(samp, "per_minute", 0, f"{where}.sampling", least=0)
        sampler = Sampler(samp.get("rate", 1.0),
                          always=[Rule.parse(r, f"{where}.sampling.always[{i}]")
                                  for i, r in enumerate(_list(samp, "always", f"{where}.sampling"))],
                          per_minute=samp.get("per_minute"), clock=clock)
        budget = _part(section, "budget", {"usd_per_hour"}, where)
        export = _part(section, "export", {"endpoint", "headers"}, where)
        alerts = _part(section, "alerts", {"webhook", "reference", "window", "k", "h"}, where)
        retention = _part(section, "retention", {"days", "max_traces"}, where)
        headers = export.get("headers") or {}
        if not isinstance(headers, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                    for k, v in headers.items()):
            raise UserError(f"{where}.export.headers: expected a mapping of header names to text")
        for name, value in headers.items():
            # Checked here, not by the exporter at its first send: its message quoted the value (a credential).
            if not _HEADER_NAME.fullmatch(name):
                raise UserError(f"{where}.export.headers.{name}: not a header name (letters, digits and "
                                "!#$%&'*+-.^_`|~ only)")
            if not _HEADER_VALUE.fullmatch(value):
                raise UserError(f"{where}.export.headers.{name}: its value must be printable ASCII without a line "
                                "break or spaces at either end (the value is not shown: it may be a credential)")
        # Every number is finite and in its range, or refused here: a NaN threshold passed nothing and failed
        # nothing, an infinite quiet period never closed a trace.
        return cls(
            evaluators=list(evaluators), traces=rules, sampler=sampler,
            quiet_seconds=_num(section, "quiet_seconds", DEFAULT_QUIET_SECONDS, where, least=0,
                               most=MAX_QUIET_SECONDS),
            budget_usd_per_hour=_num(budget, "usd_per_hour", None, f"{where}.budget", above=0),
            max_input_chars=_whole(section, "max_input_chars", DEFAULT_MAX_INPUT_CHARS, where, least=1),
            export_endpoint=_url(export, "endpoint", f"{where}.export"), export_headers=dict(headers),
            webhook=_url(alerts, "webhook", f"{where}.alerts"),
            drift_reference=_whole(alerts, "reference", DEFAULT_REFERENCE, f"{where}.alerts", least=2,
                                   most=MAX_DRIFT_SIZE),
            drift_window=_whole(alerts, "window", DEFAULT_WINDOW, f"{where}.alerts", least=2, most=MAX_DRIFT_SIZE),
            drift_k=_num(alerts, "k", DEFAULT_K, f"{where}.alerts", least=0),
            drift_h=_num(alerts, "h", DEFAULT_H, f"{where}.alerts", above=0),
            threshold=_num(section, "threshold", 0.7, where, least=0, most=1),
            batch=_whole(section, "batch", DEFAULT_BATCH, where, least=1, most=MAX_BATCH),
            spans=SpanFilter.parse(section["spans"], f"{where}.spans") if section.get("spans") else None,
            retention_days=_num(retention, "days", DEFAULT_RETENTION_DAYS, f"{where}.retention", above=0,
                                most=MAX_RETENTION_DAYS, nullable=True),
            max_traces=_whole(retention, "max_traces", DEFAULT_MAX_TRACES, f"{where}.retention", least=1,
                              nullable=True),
            at_ingest=at_ingest, keep_unsampled=keep_unsampled,
        )


_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEADER_VALUE = re.compile(r"(?:[!-~](?:[ \t!-~]*[!-~])?)?")
"""An HTTP field name (RFC 9110's token) and a value the exporter can send as it is (visible ASCII, inner spaces)."""


def _list(section: Mapping[str, Any], key: str, where: str) -> list[Any]:
    value = section.get(key) or []
    if not isinstance(value, list):
        raise UserError(f"{where}.{key}: expected a list of rules such as [{{status: error}}], got {value!r}")
    return value


def _part(section: Mapping[str, Any], key: str, known: set[str], where: str) -> Mapping[str, Any]:
    value = section.get(key) or {}
    if not isinstance(value, Mapping):
        raise UserError(f"{where}.{key}: expected a mapping ({', '.join(sorted(known))})")
    refuse_unknown(value, known, f"{where}.{key}")
    return value


def _num(part: Mapping[str, Any], key: str, default: float | None, where: str, *, above: float | None = None,
         least: float | None = None, most: float | None = None, nullable: bool = False) -> Any:
    """``part[key]`` as a finite number in its range (``default`` when absent; None when the default is None, or
    given as null where ``nullable``: no limit), else a ``UserError`` naming it."""
    v = part.get(key, default)
    if v is None and (default is None or nullable):
        return None
    ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) \
        and (above is None or v > above) and (least is None or v >= least) and (most is None or v <= most)
    if not ok:
        bounds = " and ".join(b for b in (f"above {above:g}" if above is not None else "",
                                          f"at least {least:g}" if least is not None else "",
                                          f"at most {most:g}" if most is not None else "") if b)
        raise UserError(f"{where}.{key}: expected a finite number {bounds}, got {v!r}")
    return float(v)


def _whole(part: Mapping[str, Any], key: str, default: int, where: str, *, least: int, most: int | None = None,
           nullable: bool = False) -> Any:
    v = part.get(key, default)
    if v is None and nullable:
        return None
    if not isinstance(v, int) or isinstance(v, bool) or v < least or (most is not None and v > most):
        bound = f"of at least {least}" if most is None else f"from {least} to {most:,}"
        raise UserError(f"{where}.{key}: expected a whole number {bound}, got {v!r}")
    return v


def _url(part: Mapping[str, Any], key: str, where: str) -> str | None:
    v = part.get(key)
    if v is None:
        return None
    if not isinstance(v, str) or urlsplit(v).scheme.lower() not in ("http", "https") or not urlsplit(v).hostname:
        # The value is not shown: a webhook's URL is often its secret (a chat service's incoming webhook).
        scheme = urlsplit(v).scheme if isinstance(v, str) else ""
        got = (f"a value of type {type(v).__name__}" if not isinstance(v, str) else
               "a URL without a host" if scheme.lower() in ("http", "https") else
               f"a URL whose scheme is '{scheme[:10]}'" if scheme else "text without a scheme")
        raise UserError(f"{where}.{key}: expected an http:// or https:// URL with a host, got {got}")
    return v


_KINDS = ("llm", "tool", "agent", "retriever", "other")
_UNSAMPLED = ("sampled_out", "budget_lowered_rate", "not_matched")
"""The reasons a trace is not evaluated that ``keep_unsampled: false`` deletes its spans for."""


@dataclass
class SpanFilter:
    """Which spans become cases: a span ``kind`` as the mapping reads it (``retriever``, ``llm``, ``tool``,
    ``agent``) and/or the fields of a :class:`Rule` (name, status, attributes)."""

    kind: str | None = None
    rule: Rule | None = None

    @classmethod
    def parse(cls, spec: Any, where: str) -> SpanFilter:
        if not isinstance(spec, Mapping):
            raise UserError(f"{where}: expected a mapping such as {{kind: retriever}}")
        spec = dict(spec)
        kind = spec.pop("kind", None)
        if kind is not None and kind not in _KINDS:
            raise UserError(f"{where}.kind: expected one of {', '.join(_KINDS)}, got {kind!r}")
        return cls(kind=kind, rule=Rule.parse(spec, where) if spec else None)

    def matches(self, span: Mapping[str, Any]) -> bool:
        if self.rule is not None and not self.rule.matches([span]):
            return False
        if self.kind is not None:
            view = span_view(dict(span))
            return view is not None and view.kind == self.kind
        return True


def metric_name(entry: Any) -> str:
    """The metric an evaluator entry reports under: its ``id``, else its name."""
    if isinstance(entry, str):
        return entry
    if isinstance(entry, Mapping):
        if entry.get("id"):
            return str(entry["id"])
        names = [k for k in entry if k not in ("weight", "threshold", "critical", "field", "panel")]
        if names:
            return str(names[0])
    return str(getattr(entry, "name", type(entry).__name__))


def _taking(units: Iterator[_Unit], taken: list[_Unit]) -> Iterator[_Unit]:
    """``units``, each also appended to ``taken`` as it is taken."""
    for u in units:
        taken.append(u)
        yield u


def _score(u: _Unit, name: str, row: Any) -> Score:
    """The stored score of ``row``, the evaluator ``name``'s result on the unit ``u`` (its time set when stored)."""
    scored = row.status == "scored"
    return Score(trace_id=u.trace_id, span_id=u.span_id, evaluator=name, status=row.status,
                 score=row.score if scored else None, passed=row.passed if scored else None,
                 explanation=row.rationale or row.error,
                 error_type=None if scored else (row.status if row.status != "error" else "evaluator_error"),
                 unit=u.unit)


def _root_span(spans: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """The evaluated span: the trace's root (no parent, or a parent that never arrived), earliest first."""
    ids = {s.get("spanId") for s in spans}
    roots = [s for s in spans if not s.get("parentSpanId") or s.get("parentSpanId") not in ids]
    return min(roots or spans, key=lambda s: (int(s.get("startTimeUnixNano") or 0), str(s.get("spanId"))))


@dataclass
class _Unit:
    """What gets one score per evaluator: a whole trace (``unit`` "") or one chosen span of it."""

    trace_id: str
    unit: str
    span_id: str
    """The evaluated span, whose ids the exported event carries."""
    case: dict[str, Any]


@dataclass
class StepReport:
    """What one pass did."""

    traces: int = 0
    scored: int = 0
    exported: int = 0
    alerts: list[Alert] = field(default_factory=list)
    judge_unavailable: str | None = None
    """Why the judge could not be reached or refused us, when it stopped this pass (its traces wait)."""


class Monitor:
    """Evaluates traces from ``sink`` with ``judge`` (a :class:`~referee.Judge`, a ``provider:model`` string or a
    Provider); ``clock`` (seconds) decides when a trace is quiet and the per-minute cap; ``alert_sink`` gets each
    alert's message (default: the ``referee.traces`` logger, which the CLI shows on stderr)."""

    def __init__(self, sink: TraceSink, config: MonitorConfig, *, judge: Any = None,
                 clock: Callable[[], float] = time.time, alert_sink: Callable[[str], None] | None = None,
                 exporter: EvaluationExporter | None = None) -> None:
        self.sink = sink
        self.config = config
        self.judge = judge
        self._clock = clock
        self._alert_sink = alert_sink or log.warning
        names = [metric_name(e) for e in config.evaluators]
        if len(set(names)) != len(names):
            raise UserError(f"monitor: two evaluators report as the same metric ({', '.join(names)}); give one an id")
        self._entries = dict(zip(names, config.evaluators, strict=True))
        if exporter is None and config.export_endpoint:
            exporter = EvaluationExporter(config.export_endpoint, headers=config.export_headers)
        self.exporter = exporter
        self._attempts: dict[tuple[str, str], int] = {}
        self._spend: list[tuple[float, float, float]] = []
        """(when, cost, the rate factor in force): a cost divided by its factor is what the full rate would spend."""
        self._started = clock()
        self.rate_factor = 1.0
        """The fraction of the configured sampling rate in force: below 1 when the budget lowered it."""
        self._said_factor = 1.0
        self.alerts: list[Alert] = []
        self.last_error: str | None = None
        self._last_at_ns = 0
        self._last_pass: Any = None
        """The cases, rows and scores of the last pass that had traces, freed when the next such pass replaces
        them: freeing 4,000 of each took 23 ms at the end of a `referee monitor --replay --once`, whose process
        then ends without freeing anything (a pass is at most ``batch`` traces)."""
        self._pruned_at = float("-inf")
        self._drift = {n: DriftDetector(n, reference_size=config.drift_reference, window=config.drift_window,
                                        k=config.drift_k, h=config.drift_h) for n in names}
        for name, det in self._drift.items():  # a restart picks the statistic up from the stored scores
            for s in sorted(sink.scores(evaluator=name), key=lambda s: s.at_ns):
                if s.status == "scored" and s.score is not None:
                    det.update(s.score, s.trace_id)

    @property
    def metrics(self) -> list[str]:
        """The monitored metrics' names, in the suite's order."""
        return list(self._entries)

    # -- one pass ---------------------------------------------------------------------------------------------

    def step(self) -> StepReport:
        report = StepReport()
        now = self._clock()
        if now - self._pruned_at >= PRUNE_EVERY_S:
            self._pruned_at = now
            days = self.config.retention_days
            self.sink.prune(older_than_ns=int((now - days * 86400) * 1e9) if days is not None else None,
                            max_traces=self.config.max_traces)
        self._adjust_rate(now)
        ready = self.sink.quiet_traces(before_ns=int((now - self.config.quiet_seconds) * 1e9), limit=self.config.batch)
        starts: dict[str, int] = {}

        def units() -> Iterator[_Unit]:
            # Each trace is decided and mapped when the runner has room for another case, so this work overlaps
            # with the judge calls already in flight instead of running before the first of them.
            for tid in ready:
                report.traces += 1
                got = self._decide(tid, now)
                if got:
                    starts[tid] = got[0]
                    yield from got[1]

        if ready:
            report.scored += self._evaluate(units(), report, starts)
        report.exported = self.export_pending()
        return report

    def _decide(self, tid: str, now: float) -> tuple[int, list[_Unit]] | None:
        """Whether the trace ``tid`` is evaluated: (its root span's start, its units), or None when it was closed
        (its reason counted) instead."""
        spans = self.sink.trace_spans(tid)
        if self.config.traces and not any(r.matches(spans) for r in self.config.traces):
            self._close(tid, "not_matched")
            return None
        decision = self.config.sampler.decide(tid, spans, factor=self.rate_factor)
        if not decision.sampled:
            # At the budget, what the lowered rate left out would not have been judged either: over_budget.
            over = decision.reason == "budget_lowered_rate" and self._over_budget(now)
            self._close(tid, "over_budget" if over else decision.reason)
            return None
        if self._over_budget(now):
            self._close(tid, "over_budget")
            return None
        root = _root_span(spans)
        span_id = str(root.get("spanId"))
        if self.sink.trace_truncated(tid):
            self._unscored(tid, span_id, "too_large", "trace over the span cap per trace")
            return None
        try:
            units = self._units(tid, spans, span_id)
        except TrajectoryError as exc:
            self._close(tid, "no_case", str(exc))
            return None
        if not units:
            self._close(tid, "no_matching_span")
            return None
        if any(len(json.dumps(u.case, default=str)) > self.config.max_input_chars for u in units):
            self._unscored(tid, span_id, "too_large", f"case over {self.config.max_input_chars} characters")
            return None
        return int(root.get("startTimeUnixNano") or 0), units

    def _units(self, tid: str, spans: list[dict[str, Any]], root_span: str) -> list[_Unit]:
        """The trace as one case, or (``spans:``) one case per chosen span."""
        if self.config.spans is None:
            return [_Unit(tid, "", root_span, case_from_spans(spans, case_id=tid))]
        chosen = [s for s in spans if self.config.spans.matches(s)]
        chosen.sort(key=lambda s: (int(s.get("startTimeUnixNano") or 0), str(s.get("spanId"))))
        return [_Unit(tid, str(s["spanId"]), str(s["spanId"]),
                      case_from_span(spans, str(s["spanId"]), case_id=f"{tid}:{s['spanId']}")) for s in chosen]

    def _has_score(self, unit: _Unit, name: str) -> bool:
        return (unit.unit, name) in self.sink.scored_units(unit.trace_id)

    def _close(self, trace_id: str, reason: str, detail: str | None = None) -> None:
        self.sink.count(f"skipped: {reason}", len(self._entries))
        self.sink.mark_trace(trace_id, reason)
        if not self.config.keep_unsampled and reason in _UNSAMPLED:
            self.sink.count("not kept: spans of unsampled traces", self.sink.drop_spans(trace_id))

    def _unscored(self, trace_id: str, span_id: str, reason: str, detail: str) -> None:
        at = int(self._clock() * 1e9)
        for name in self._entries:
            self.sink.record_score(Score(trace_id=trace_id, span_id=span_id, evaluator=name, status="unscored",
                                         error_type=reason, explanation=detail, at_ns=at))
        self.sink.count(f"skipped: {reason}", len(self._entries))
        self.sink.mark_trace(trace_id, reason)

    def spent_usd(self, now: float | None = None) -> float:
        """What the judge cost over the last hour (of the injected clock)."""
        now = self._clock() if now is None else now
        self._spend = [e for e in self._spend if e[0] > now - 3600]
        return sum(c for _, c, _ in self._spend)

    def _over_budget(self, now: float) -> bool:
        if self.config.budget_usd_per_hour is None:
            return False
        return self.spent_usd(now) >= self.config.budget_usd_per_hour

    def _adjust_rate(self, now: float) -> None:
        """Lower the sampling rate when the spend the full rate would make, projected to the hour, is over the
        budget: the rate in force is the configured one times budget / that projection, so the monitor keeps
        judging a smaller sample rather than stopping, and climbs back as the spend ages out of the hour. A fall
        to under half the rate last said, and the return to the full rate, are said (``alert_sink``) and
        counted."""
        budget = self.config.budget_usd_per_hour
        if budget is None:
            return
        spent = self.spent_usd(now)
        full = sum(c / f for _, c, f in self._spend)
        age = min(max(now - self._started, BUDGET_FLOOR_S), 3600.0)
        projected = full * 3600.0 / age
        new = 1.0 if projected <= budget else max(MIN_BUDGET_FACTOR, budget / projected)
        self.rate_factor = new
        said = self._said_factor
        if not (new < said / 2 or (new < 1.0 and said == 1.0) or (new == 1.0 and said < 1.0)):
            return
        self._said_factor = new
        rate = self.config.sampler.rate
        word = "lowered" if new < said else "raised"
        self.sink.count(f"budget: sampling rate {word}")
        self._alert_sink(f"budget: sampling rate {word} to {rate * new:.2%} of traces (configured {rate:.0%}; "
                         f"judge spend ${spent:.4f} in the last hour; at the full rate "
                         f"${projected:.4f}/hour against the budget ${budget:.4f}/hour)")

    def _evaluate(self, units: Iterator[_Unit], report: StepReport, starts: dict[str, int]) -> int:
        """Evaluate ``units`` evaluator by evaluator (the first evaluator's run takes them as it goes: see
        :meth:`step`), then record the scores (:meth:`_record`)."""
        from ..cases._case import CaseStream
        from ..run._evaluate import evaluate_async
        from ..runner._session import run_sync

        todo: list[_Unit] = []  # every unit taken, in the order taken
        rows_of: dict[str, dict[str, Any]] = {}
        prepared: dict[tuple[str, str], Score] = {}
        for i, (name, entry) in enumerate(self._entries.items()):
            batch: dict[str, _Unit] = {}  # by case id

            def cases(source: Iterator[_Unit], name: str = name,
                      batch: dict[str, _Unit] = batch) -> Iterator[dict[str, Any]]:
                for u in source:
                    if not self._has_score(u, name):  # scored before a restart: not judged again
                        batch[u.case["id"]] = u
                        yield u.case

            def arrived(rows: list[Any], name: str = name, batch: dict[str, _Unit] = batch) -> None:
                # Each score is made as its row arrives, while the calls still in flight leave the loop idle; it
                # is stored after the last answer, in the order the traces began (see _record).
                for row in rows:
                    u = batch.get(row.id)
                    if u is not None and row.status != "error":
                        prepared[(name, row.id)] = _score(u, name, row)

            pending = cases(_taking(units, todo) if i == 0 else iter(todo))
            first = next(pending, None)
            if first is None:  # nothing left to judge for this evaluator: no run
                continue
            stream = CaseStream(itertools.chain([first], pending), name=f"<monitor:{name}>", on_rows=arrived)
            try:
                # A pass is not a run of the history (a stream never is): its scores are the store's trace scores.
                result = run_sync(evaluate_async(stream, [entry], self.judge, progress=False,
                                                 threshold=self.config.threshold, name=f"monitor:{name}"))
            except (FatalRunError, ProviderError) as exc:
                # The judge is down or refuses us: the scores wait (the traces stay open for the next pass), and
                # the evaluators already run keep theirs.
                self.sink.count("skipped: judge_unavailable", len(batch))
                self.last_error = report.judge_unavailable = str(exc)
                break
            rows_of[name] = {r.id: r for r in result.rows}
        self._last_pass = (todo, rows_of, prepared)
        return self._record(todo, rows_of, report, starts, prepared)

    def _record(self, todo: list[_Unit], rows_of: dict[str, dict[str, Any]], report: StepReport,
                starts: dict[str, int], prepared: dict[tuple[str, str], Score]) -> int:
        """Store each evaluated unit's score per evaluator, in the order the traces began (the drift statistic's
        order, whatever order they arrived in); close each trace every score of which is stored."""
        recorded = 0
        needed: dict[str, int] = {}
        for u in todo:
            needed[u.trace_id] = needed.get(u.trace_id, 0) + len(self._entries)
        done: dict[str, int] = {tid: 0 for tid in needed}
        todo = sorted(todo, key=lambda u: (starts[u.trace_id], u.trace_id, u.unit))
        now = self._clock()
        # Each stored score is a nanosecond after the one before, in this order: a restart feeds the drift statistic
        # the stored scores by time, so it sees them in the order the live monitor did (the store breaks ties by
        # trace id, not by when a trace began).
        at_ns = max(int(now * 1e9), self._last_at_ns + 1)
        for name in self._entries:
            rows = rows_of.get(name, {})
            for u in todo:
                row = rows.get(u.case["id"])
                if row is None:  # scored before a restart, or not judged (the judge was down)
                    if self._has_score(u, name):
                        done[u.trace_id] += 1
                    continue
                if row.cost_usd:
                    self._spend.append((now, float(row.cost_usd), self.rate_factor))
                if row.status == "error":
                    key = (u.case["id"], name)
                    self._attempts[key] = self._attempts.get(key, 0) + 1
                    self.sink.count("skipped: evaluator_error")
                    if self._attempts[key] < DEFAULT_MAX_ATTEMPTS:
                        continue  # the score waits: the trace stays open and the next pass tries again
                score = prepared.get((name, row.id)) or _score(u, name, row)
                score.at_ns = at_ns
                if self.sink.record_score(score):
                    recorded += 1
                    self._last_at_ns, at_ns = at_ns, at_ns + 1
                    if score.score is not None:
                        alert = self._drift[name].update(score.score, u.trace_id)
                        if alert is not None:
                            self._raise(alert)
                            report.alerts.append(alert)
                done[u.trace_id] += 1
        for tid, n in done.items():
            if n == needed[tid]:
                self.sink.mark_trace(tid, "scored")
        return recorded

    def offline(self, metric: str) -> dict[str, Any] | None:
        """The newest offline run of the suite that scored ``metric`` (its mean, interval and cases), from a
        sink that keeps the run history; None when there is none. Context only: never an alert's reference."""
        look = getattr(self.sink, "offline_context", None)
        if not self.config.suite or not callable(look):
            return None
        try:
            found = look(self.config.suite, metric, sole=len(self._entries) == 1)
        except Exception as exc:  # noqa: BLE001 - context for an alert must never stop the alert
            self.last_error = f"offline run lookup: {type(exc).__name__}: {str(exc)[:200]}"
            return None
        return dict(found) if found else None

    def _raise(self, alert: Alert) -> None:
        if alert.offline is None:
            alert.offline = self.offline(alert.metric)
        self.alerts.append(alert)
        self._alert_sink(alert.message())
        record = getattr(self.sink, "record_alert", None)
        if callable(record):
            record(alert)
        if self.config.webhook:
            body = json.dumps({"text": alert.message(), "metric": alert.metric, "effect": alert.effect,
                               "interval": [alert.low, alert.high], "examples": alert.examples,
                               "offline": alert.offline}).encode()
            req = urllib.request.Request(self.config.webhook, data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=10) as resp:  # noqa: S310 - the user's own URL
                    resp.read(1024)
            except (OSError, http.client.HTTPException):  # down, refusing, or not speaking HTTP: the alert is
                self.sink.count("alert_webhook_failed")  # stored and printed all the same

    def export_pending(self, limit: int = 512) -> int:
        """Send the scores not yet exported; marks them only when the collector accepted them."""
        if self.exporter is None:
            return 0
        pending = self.sink.unexported(limit)
        if not pending:
            return 0
        if self.exporter.export(pending):
            self.sink.mark_exported(pending)
            return len(pending)
        self.sink.count("export_failed", len(pending))
        return 0

    def counts(self) -> dict[str, int]:
        return self.sink.counts()


@dataclass
class MetricSummary:
    """One monitored metric: traces scored, its mean and pass rate, traces not scored."""

    metric: str
    scored: int
    mean: float | None
    pass_rate: float | None
    unscored: int


def summarize(sink: TraceSink, metrics: Sequence[str]) -> list[MetricSummary]:
    """Each metric's stored scores summed up: traces scored, mean, pass rate, traces not scored."""
    out = []
    for m in metrics:
        ss = sink.scores(evaluator=m)
        vals = [s.score for s in ss if s.status == "scored" and s.score is not None]
        passes = [s.passed for s in ss if s.status == "scored" and s.passed is not None]
        out.append(MetricSummary(metric=m, scored=len(vals), mean=sum(vals) / len(vals) if vals else None,
                                 pass_rate=sum(passes) / len(passes) if passes else None,
                                 unscored=len(ss) - len(vals)))
    return out
