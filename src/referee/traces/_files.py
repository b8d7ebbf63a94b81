"""Files around the monitor: the monitor file (a suite's ``monitor:`` section with its ``evaluators`` and
``judge``), recorded OTLP exports replayed into the sink, and selected traces written as a case file."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._util import _yaml
from .._util._hints import refuse_unknown
from ..errors import InputError, UserError
from ..store import label_of_suite
from ..trajectories import TrajectoryError, case_from_spans
from ._ingest import DEFAULT_MAX_DECODED_BYTES, ingest
from ._monitor import MonitorConfig
from ._otlp import OTLPDecodeError, decode_traces
from ._redact import Redactor
from ._sink import TraceSink

if TYPE_CHECKING:
    from ..suites import SuiteInvalid

log = logging.getLogger(__name__)


def _redactor(section: dict[str, Any], where: str, *, run_user_code: bool = True) -> Redactor:
    spec = section.get("redact") or {}
    if not isinstance(spec, dict):
        raise UserError(f"{where}.redact: expected {{patterns: [regex, ...], hook: module:function}}")
    refuse_unknown(spec, {"patterns", "hook"}, f"{where}.redact")
    patterns = spec.get("patterns") or []
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        raise UserError(f"{where}.redact.patterns: expected a list of regular expressions")
    for i, p in enumerate(patterns):  # each pattern's own line, before the redactor compiles them all
        try:
            Redactor([p])
        except UserError as exc:
            raise UserError(f"{where}.redact.patterns[{i}]: {exc}") from None
    hook = None
    if spec.get("hook"):
        if not run_user_code:  # `referee validate`: the hook's module is looked up, never imported
            from ..suites import module_findable

            module = str(spec["hook"]).split(":")[0]
            if not module_findable(module):
                raise UserError(f"{where}.redact.hook: cannot find module '{module}' (not imported: no user code "
                                "runs here)")
        else:
            from ..evaluators._plugins import import_dotted

            try:
                hook = import_dotted(str(spec["hook"]))
            except UserError as exc:  # named as the section's other fields are, so its line is found
                raise UserError(f"{where}.redact.hook: {exc}") from None
            if not callable(hook):
                raise UserError(f"{where}.redact.hook: {spec['hook']} is not callable")
    return Redactor(patterns, hook)


def load_monitor(path: str | Path, *, clock: Callable[[], float] | None = None,
                 run_user_code: bool = True) -> tuple[MonitorConfig, Any, Redactor]:
    """(the monitor's configuration, the file's judge (``provider:model`` or None), the redaction hook) of a
    suite file with a ``monitor:`` section. Its evaluators are checked as a suite's are, before any trace is
    read: a typo is said at the start, not at the first pass. ``run_user_code=False`` (``referee validate``):
    no plugin module and no redaction hook is imported."""
    return _monitor_of(path, *_yaml.parse_nodes(_yaml.read_text(str(path)), str(path)), clock=clock,
                       run_user_code=run_user_code)


_WHERE = re.compile(r"(monitor(?:\.[^\s.:\[\]]+|\[\d+\])*): ")
"""The path a monitor section's error starts with (``monitor.sampling.always[0].status: ...``)."""


def _located(exc: UserError, path: str | Path, lines: dict[tuple[str | int, ...], int]) -> SuiteInvalid:
    """A monitor section's error as a suite's problem: its file, the line of the field it names (or of the
    nearest enclosing one that is in the file) and that field's path."""
    from ..suites import Problem, SuiteInvalid

    message = str(exc)
    m = _WHERE.match(message)
    if m is None:
        return SuiteInvalid([Problem(str(path), lines.get(("monitor",)), "", message)])
    keys: tuple[str | int, ...] = tuple(int(t[1:-1]) if t.startswith("[") else t
                                        for t in re.findall(r"\[\d+\]|[^.\[\]]+", m.group(1)))
    while keys and keys not in lines:
        keys = keys[:-1]
    return SuiteInvalid([Problem(str(path), lines.get(keys), m.group(1), message[m.end():])])


def _monitor_of(path: str | Path, node: Any, data: Any, *, clock: Callable[[], float] | None,
                run_user_code: bool) -> tuple[MonitorConfig, Any, Redactor]:
    from ..suites import SuiteInvalid, check_suite

    if not isinstance(data, dict) or not isinstance(data.get("monitor"), dict):
        raise InputError("expected a suite with a 'monitor:' section (docs/monitoring.md)", file=str(path))
    evaluators = data.get("evaluators")
    if not isinstance(evaluators, list) or not evaluators:
        raise InputError("'evaluators' must list at least one evaluator", file=str(path))
    _, problems = check_suite(path, run_user_code=run_user_code, monitor_only_ok=True)
    if problems:
        raise SuiteInvalid(problems)
    section = dict(data["monitor"])
    try:
        redactor = _redactor(section, "monitor", run_user_code=run_user_code)
        section.pop("redact", None)
        config = (MonitorConfig.parse(section, evaluators) if clock is None
                  else MonitorConfig.parse(section, evaluators, clock=clock))
    except UserError as exc:
        raise _located(exc, path, _yaml.line_map(node)) from None
    config.suite = label_of_suite(str(path), data.get("name") if isinstance(data.get("name"), str) else None)
    judge = data.get("judge")
    if isinstance(judge, dict):
        judge = judge.get("provider") and ":".join(str(x) for x in (judge["provider"], judge.get("model")) if x)
    return config, judge, redactor


def check_monitor(path: str | Path) -> MonitorConfig | None:
    """The ``monitor:`` section of the suite at ``path`` checked as ``referee monitor`` reads it, running no user
    code (``referee validate``): its configuration, or None when the suite has no such section. Raises
    ``UserError`` saying what is wrong."""
    node, data = _yaml.parse_nodes(_yaml.read_text(str(path)), str(path))
    if not isinstance(data, dict) or "monitor" not in data:
        return None
    return _monitor_of(path, node, data, clock=None, run_user_code=False)[0]


def replay(files: Sequence[str | Path], sink: TraceSink, redactor: Redactor, *, received_ns: int,
           max_bytes: int = DEFAULT_MAX_DECODED_BYTES, sample_rate: float | None = None) -> int:
    """Recorded OTLP trace exports into the sink, through the receiver's own decoding, sampling at ingest
    (``sample_rate``) and redaction: a ``.json`` file is one ``ExportTraceServiceRequest`` in OTLP/JSON, a
    ``.jsonl`` file one per line (the collector's file exporter), anything else one protobuf request. Returns
    the spans stored."""
    stored = 0
    for f in files:
        p = Path(f)
        if p.stat().st_size > max_bytes:
            raise InputError(f"over {max_bytes} bytes", file=str(p))
        with p.open("rb") as fh:  # read within the bound: a pipe or a device has no size to check first
            raw = fh.read(max_bytes + 1)
        if len(raw) > max_bytes:
            raise InputError(f"over {max_bytes} bytes", file=str(p))
        bodies: list[tuple[int | None, bytes, str]]
        if p.suffix.lower() in (".jsonl", ".ndjson"):
            bodies = [(n, line, "application/json") for n, line in enumerate(raw.splitlines(), 1) if line.strip()]
        elif p.suffix.lower() == ".json":
            bodies = [(None, raw, "application/json")]
        else:
            bodies = [(None, raw, "application/x-protobuf")]
        for line, body, ctype in bodies:
            try:
                decoded = decode_traces(body, ctype)
            except OTLPDecodeError as exc:
                raise InputError(str(exc), file=str(p), line=line) from None
            stored += ingest(sink, decoded, redactor, received_ns=received_ns, sample_rate=sample_rate).stored
    return stored


_TRACE_ID = re.compile(r"[0-9a-fA-F]{32}")


def traces_to_cases(sink: TraceSink, *, metric: str | None = None, below: float | None = None,
                    failed: bool = False, trace_ids: Sequence[str] = (), recent: int = 0,
                    errors: bool = False) -> list[dict[str, Any]]:
    """Selected traces as cases the offline suite runs (spans were redacted before they were stored): those
    scored under ``below`` on ``metric`` (any metric when None), those that ``failed`` it, ``trace_ids``
    (an alert's examples), the ``recent`` traces that arrived last, scored or not, and (``errors``) every trace
    with a span whose status is ERROR. Each case keeps its trace id and score in ``metadata``. A trace id that
    is not 32 hexadecimal digits is a ``UserError`` (it can name no stored trace); case does not matter."""
    for t in trace_ids:
        if not _TRACE_ID.fullmatch(t):
            raise UserError(f"--trace {t[:80]!r}: a trace id is 32 hexadecimal digits")
    trace_ids = [t.lower() for t in trace_ids]
    chosen: dict[str, dict[str, Any]] = {t: {} for t in [*trace_ids, *(sink.recent_traces(recent) if recent else []),
                                                         *(sink.error_traces() if errors else [])]}
    stored = sink.scores(evaluator=metric)
    if metric is not None and not stored:
        # A metric with no score while others have some is a misspelt name, not "nothing matched".
        known = sorted({s.evaluator for s in sink.scores()})
        if known:
            from .._util._hints import did_you_mean

            raise UserError(f"metric {metric!r}: no stored score{did_you_mean(metric, known)} (stored: "
                            f"{', '.join(known[:20])}{', ...' if len(known) > 20 else ''})")
    for s in stored:
        if s.status != "scored" or s.score is None:
            continue
        if (below is not None and s.score < below) or (failed and s.passed is False):
            chosen.setdefault(s.trace_id, {})[s.evaluator] = s.score
    cases = []
    for tid, scores in chosen.items():
        spans = sink.trace_spans(tid)
        if not spans:
            continue
        try:
            case = case_from_spans(spans, case_id=tid)
        except TrajectoryError as exc:
            log.warning("skipped trace %s: %s", tid, exc)
            continue
        case["metadata"] = {"trace_id": tid, "production_scores": scores}
        cases.append(case)
    return cases


def write_cases(cases: Sequence[dict[str, Any]], out: str | Path) -> Path:
    """The cases as JSONL at ``out`` (its folder created)."""
    p = Path(out)
    p.parent.mkdir(parents=True, exist_ok=True)
    with open(p, "w", encoding="utf-8") as fh:
        for c in cases:
            fh.write(json.dumps(c, ensure_ascii=False, default=str) + "\n")
    return p
