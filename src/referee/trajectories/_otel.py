"""The one mapping from OpenTelemetry spans to what referee evaluates: steps of a trajectory, a case's input,
output and retrieved contexts. ``referee import`` (recorded OTLP/JSON exports) and the live receiver
(:mod:`referee.traces`) both read spans through :func:`span_view` here, so a span means the same thing
whichever way it arrived.

Two attribute conventions are read:

- the OpenTelemetry **GenAI semantic conventions** (status *development*; names as of semantic-conventions
  v1.41.0 and its successor semantic-conventions-genai v0.1.0): ``gen_ai.operation.name`` (``chat``,
  ``text_completion``, ``generate_content``, ``invoke_agent``, ``execute_tool``, ``retrieval``),
  ``gen_ai.input.messages`` / ``gen_ai.output.messages``, ``gen_ai.tool.*``, ``gen_ai.usage.*``,
  ``gen_ai.retrieval.query.text`` / ``gen_ai.retrieval.documents``;
- **OpenInference** (Arize's conventions, spec ``spec/semantic_conventions.md`` as published with
  openinference-semantic-conventions 0.1.x): ``openinference.span.kind`` (``LLM``, ``TOOL``, ``AGENT``,
  ``CHAIN``, ``RETRIEVER``), ``input.value`` / ``output.value``, ``llm.input_messages.N.message.*``,
  ``llm.output_messages.N.message.*``, ``llm.token_count.*``, ``tool.name``, ``tool_call.id``,
  ``retrieval.documents.N.document.*``.

A span with neither is :func:`span_view` ``None``: the receiver counts it and skips it.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass, field
from typing import Any

from ._model import Step, Trajectory, TrajectoryError
from ._parse import _maybe_json, int_or_none, parse_args, result_error

GENAI_CONVENTIONS = "OpenTelemetry GenAI semantic conventions (development; semantic-conventions v1.41.0)"
OPENINFERENCE_CONVENTIONS = "OpenInference semantic conventions (openinference-semantic-conventions 0.1.x)"

_LLM_OPS = ("chat", "text_completion", "generate_content")

# -- OTLP/JSON values -----------------------------------------------------------------------------------

def _any_value(v: Any) -> Any:
    """An OTLP/JSON ``AnyValue`` as a plain value."""
    if not isinstance(v, dict):
        return v
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in v:
            return v[key]
    if "intValue" in v:
        return int_or_none(v["intValue"])
    if "arrayValue" in v:
        return [_any_value(x) for x in (v["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in v:
        return {str(kv.get("key")): _any_value(kv.get("value")) for kv in (v["kvlistValue"] or {}).get("values", [])}
    return None


def _attributes(span: dict[str, Any]) -> dict[str, Any]:
    attrs = span.get("attributes") or {}
    if isinstance(attrs, dict):
        return attrs
    if isinstance(attrs, list):  # OTLP: [{key, value: AnyValue}]
        return {str(a.get("key")): _any_value(a.get("value")) for a in attrs if isinstance(a, dict)}
    return {}


def _span_list(data: Any) -> list[Any]:
    """Spans from an OTLP/JSON export (``resourceSpans``), a ``{"spans": [...]}`` object or a plain list."""
    if isinstance(data, dict):
        if "resourceSpans" in data:
            spans: list[Any] = []
            for rs in data.get("resourceSpans") or []:
                for ss in (rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans") or []):
                    spans.extend(ss.get("spans") or [])
            return spans
        if isinstance(data.get("spans"), list):
            return list(data["spans"])
        return [data]
    if isinstance(data, list):
        if data and all(isinstance(d, dict) and "resourceSpans" in d for d in data):
            return [s for d in data for s in _span_list(d)]
        return list(data)
    return []


def _time_ns(span: dict[str, Any], nano_key: str, iso_key: str) -> int | None:
    if span.get(nano_key) is not None:
        return int_or_none(span[nano_key])
    iso = span.get(iso_key)
    if isinstance(iso, str):
        try:
            t = _dt.datetime.fromisoformat(iso.replace("Z", "+00:00"))
        except ValueError:
            return None
        if t.tzinfo is None:
            t = t.replace(tzinfo=_dt.UTC)
        return int(t.timestamp() * 1e9)
    return None


def _span_error(span: dict[str, Any], attrs: dict[str, Any]) -> str | None:
    status = span.get("status") or {}
    code = status.get("code", status.get("status_code")) if isinstance(status, dict) else None
    failed = code in (2, "2", "STATUS_CODE_ERROR", "ERROR")
    if failed or attrs.get("error.type"):
        return str(status.get("message") or status.get("description") or attrs.get("error.type") or "error")
    return None


# -- message text ---------------------------------------------------------------------------------------

def _parts_text(msg: dict[str, Any]) -> str:
    return "".join(str(p.get("content", "")) for p in msg.get("parts") or []
                   if isinstance(p, dict) and p.get("type") == "text")


def _output_text(value: Any) -> str | None:
    """Text of ``gen_ai.output.messages`` (a JSON string of ``[{role, parts: [{type, content}]}]``)."""
    value = _maybe_json(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(_parts_text(m) for m in value if isinstance(m, dict)) or None
    return None


def _first_user(value: Any) -> str | None:
    """The first user message's text of ``gen_ai.input.messages``."""
    msgs = _maybe_json(value)
    for m in msgs if isinstance(msgs, list) else []:
        if isinstance(m, dict) and m.get("role") == "user":
            text = _parts_text(m)
            if text:
                return text
    return None


_INDEXED = re.compile(r"^(?P<prefix>.+?)\.(?P<i>\d+)\.(?P<rest>.+)$")


def _indexed(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """OpenInference's flattened lists (``llm.input_messages.0.message.role``) as ``[{"message.role": ...}]``,
    in index order; a structured list under the bare prefix is read too."""
    direct = _maybe_json(attrs.get(prefix))
    if isinstance(direct, list):
        return [d for d in direct if isinstance(d, dict)]
    items: dict[int, dict[str, Any]] = {}
    head = prefix + "."
    for key, value in attrs.items():
        if isinstance(key, str) and key.startswith(head):
            i, _, rest = key[len(head):].partition(".")
            if i.isdigit() and rest:
                items.setdefault(int(i), {})[rest] = value
    return [items[i] for i in sorted(items)]


# -- one span, whatever its convention ------------------------------------------------------------------

@dataclass
class SpanView:
    """What a span means to referee, read from either convention."""

    convention: str
    """``genai`` or ``openinference``."""
    kind: str
    """``llm``, ``tool``, ``agent``, ``retriever`` or ``other`` (a chain / workflow span)."""
    tool: str | None = None
    args: Any = None
    """The tool call's arguments as recorded (JSON text or an object); None when not recorded."""
    result: Any = None
    call_id: str | None = None
    input_text: str | None = None
    """The user's input: the first user message (model spans), the query (retrieval), ``input.value``."""
    output_text: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    documents: list[str] = field(default_factory=list)
    """Retrieved documents' text (retrieval spans), in rank order."""
    error: str | None = None


def _tokens(v: Any) -> int | None:
    """A token count, which is never negative: a negative one (a recorder's bug or an overflow) is not recorded,
    since summed with the others it would lower the run's usage and pass a token budget it broke."""
    n = int_or_none(v)
    return n if n is not None and n >= 0 else None


def _genai_view(span: dict[str, Any], attrs: dict[str, Any]) -> SpanView:
    name = str(span.get("name", ""))
    op = attrs.get("gen_ai.operation.name")
    is_tool = op == "execute_tool" or (op is None and ("gen_ai.tool.name" in attrs or name.startswith("execute_tool")))
    v = SpanView(convention="genai", kind="other", error=_span_error(span, attrs),
                 input_tokens=_tokens(attrs.get("gen_ai.usage.input_tokens")),
                 output_tokens=_tokens(attrs.get("gen_ai.usage.output_tokens")))
    if is_tool:
        v.kind = "tool"
        tool = attrs.get("gen_ai.tool.name")
        v.tool = tool.strip() if isinstance(tool, str) else None
        v.args = attrs.get("gen_ai.tool.call.arguments")
        v.result = _maybe_json(attrs.get("gen_ai.tool.call.result"))
        cid = attrs.get("gen_ai.tool.call.id")
        v.call_id = str(cid) if cid is not None else None
        return v
    if op == "retrieval":
        v.kind = "retriever"
        q = attrs.get("gen_ai.retrieval.query.text")
        v.input_text = str(q) if q is not None else None
        docs = _maybe_json(attrs.get("gen_ai.retrieval.documents"))
        for d in docs if isinstance(docs, list) else []:
            text = d.get("content") if isinstance(d, dict) else d
            if isinstance(text, str) and text:
                v.documents.append(text)
        return v
    if op in _LLM_OPS or op == "invoke_agent":
        v.kind = "agent" if op == "invoke_agent" else "llm"
        v.input_text = _first_user(attrs.get("gen_ai.input.messages"))
        v.output_text = _output_text(attrs.get("gen_ai.output.messages"))
    return v


def _oi_messages_text(msgs: list[dict[str, Any]], role: str | None) -> str | None:
    for m in msgs:
        if role is None or m.get("message.role") == role:
            c = m.get("message.content")
            if isinstance(c, str) and c:
                return c
    return None


def _oi_view(span: dict[str, Any], attrs: dict[str, Any]) -> SpanView:
    kind = str(attrs.get("openinference.span.kind", "")).upper()
    v = SpanView(convention="openinference", kind="other", error=_span_error(span, attrs),
                 input_tokens=_tokens(attrs.get("llm.token_count.prompt")),
                 output_tokens=_tokens(attrs.get("llm.token_count.completion")))
    iv, ov = attrs.get("input.value"), attrs.get("output.value")
    if kind == "TOOL":
        v.kind = "tool"
        tool = attrs.get("tool.name")
        v.tool = tool.strip() if isinstance(tool, str) else None
        v.args = iv
        v.result = _maybe_json(ov)
        cid = attrs.get("tool_call.id")
        v.call_id = str(cid) if cid is not None else None
        return v
    if kind == "RETRIEVER":
        v.kind = "retriever"
        v.input_text = str(iv) if iv is not None else None
        for d in _indexed(attrs, "retrieval.documents"):
            text = d.get("document.content")
            if isinstance(text, str) and text:
                v.documents.append(text)
        return v
    if kind == "LLM":
        v.kind = "llm"
        v.input_text = _oi_messages_text(_indexed(attrs, "llm.input_messages"), "user")
        v.output_text = _oi_messages_text(_indexed(attrs, "llm.output_messages"), None) or \
            (str(ov) if ov is not None else None)
        return v
    v.kind = "agent" if kind == "AGENT" else "other"
    v.input_text = str(iv) if isinstance(iv, str | int | float) else None
    v.output_text = str(ov) if isinstance(ov, str | int | float) else None
    return v


def follows_convention(attrs: dict[str, Any]) -> bool:
    """Whether :func:`span_view` reads these attributes (a ``gen_ai.*`` name or ``openinference.span.kind``):
    the receiver's cheap test before anything is stored."""
    return "openinference.span.kind" in attrs or any(isinstance(k, str) and k.startswith("gen_ai.") for k in attrs)


def span_view(span: dict[str, Any], attrs: dict[str, Any] | None = None) -> SpanView | None:
    """The span read by the GenAI conventions (any ``gen_ai.*`` attribute) or OpenInference
    (``openinference.span.kind``); None when it follows neither."""
    attrs = _attributes(span) if attrs is None else attrs
    if any(isinstance(k, str) and k.startswith("gen_ai.") for k in attrs):
        return _genai_view(span, attrs)
    if "openinference.span.kind" in attrs:
        return _oi_view(span, attrs)
    return None


# -- spans -> trajectory and case -----------------------------------------------------------------------

_Entries = list[tuple[int | None, int, dict[str, Any], SpanView]]
"""Spans read by a convention, in start-time order: (start, position in the list, span, its view)."""


def _ordered(spans: list[Any], case_id: str | None) -> _Entries:
    entries = []
    for i, span in enumerate(spans):
        if not isinstance(span, dict):
            raise TrajectoryError("a span must be an object", case_id=case_id, step=f"spans[{i}]")
        view = span_view(span)
        if view is not None:
            entries.append((_time_ns(span, "startTimeUnixNano", "start_time"), i, span, view))
    # Start time decides the order; spans without one keep their file position relative to each other.
    entries.sort(key=lambda e: (e[0] is None, e[0] or 0, e[1]))
    return entries


def from_otel(data: Any, *, case_id: str | None = None) -> Trajectory:
    """Tool spans (GenAI ``execute_tool``, OpenInference ``TOOL``) ordered by start time become steps; token
    usage of the other spans is summed for the whole run; the last model or agent span's output is the final
    output."""
    spans = _span_list(data)
    if not spans:
        raise TrajectoryError("no spans found (expected an OTLP/JSON export or a list of spans)", case_id=case_id)
    return _trajectory(_ordered(spans, case_id), case_id)


def _trajectory(entries: _Entries, case_id: str | None) -> Trajectory:
    if not entries:
        raise TrajectoryError("no span has OpenTelemetry GenAI attributes (gen_ai.operation.name, "
                              "gen_ai.tool.name, ...) or OpenInference ones (openinference.span.kind); "
                              "is this a GenAI trace?", case_id=case_id)
    steps: list[Step] = []
    in_tok = out_tok = 0
    have_tokens = False
    final: str | None = None
    for start, i, span, v in entries:
        name = str(span.get("name", ""))
        at = f"span '{name}' (spans[{i}])" if name else f"spans[{i}]"
        if v.kind == "tool":
            if not v.tool:
                raise TrajectoryError("tool span without gen_ai.tool.name (OpenInference: tool.name)",
                                      case_id=case_id, step=at)
            args = parse_args(v.args, case_id=case_id, at=at)
            end = _time_ns(span, "endTimeUnixNano", "end_time")
            steps.append(Step(
                index=len(steps) + 1, tool=v.tool, args=args, result=v.result,
                error=v.error or result_error(v.result), call_id=v.call_id,
                latency_ms=(end - start) / 1e6 if start is not None and end is not None else None,
                extra={} if v.args is not None else {"args_recorded": False},
            ))
            continue
        if v.input_tokens is not None or v.output_tokens is not None:
            have_tokens = True
            in_tok += v.input_tokens or 0
            out_tok += v.output_tokens or 0
        if v.kind in ("llm", "agent") and v.output_text:
            final = v.output_text
    return Trajectory(steps=steps, final_output=final, source_format="otel",
                      input_tokens=in_tok if have_tokens else None, output_tokens=out_tok if have_tokens else None)


def otel_input(data: Any) -> str | None:
    """The user's input: the earliest model or agent span's first user message (GenAI) or ``input.value``
    (OpenInference); a retrieval span's query when no other span has one."""
    return _input(_ordered([s for s in _span_list(data) if isinstance(s, dict)], None))


def _input(entries: _Entries) -> str | None:
    views = [v for _s, _i, _sp, v in entries]
    for kinds in (("agent", "llm", "other"), ("retriever",)):  # a retrieval query only when nothing else
        for v in views:
            if v.kind in kinds and v.input_text:
                return v.input_text
    return None


def otel_contexts(data: Any) -> list[str]:
    """Every retrieved document's text of the retrieval spans, in span then rank order."""
    return _contexts(_ordered([s for s in _span_list(data) if isinstance(s, dict)], None))


def _contexts(entries: _Entries) -> list[str]:
    docs: list[str] = []
    for _start, _i, _span, v in entries:
        if v.kind == "retriever":
            docs.extend(v.documents)
    return docs


def case_from_spans(spans: list[dict[str, Any]], *, case_id: str) -> dict[str, Any]:
    """One trace as a case in referee's case shape: ``input``, ``output`` (the final answer), ``trajectory``
    (when a tool was called), ``contexts`` (when documents were retrieved) and the token usage. Raises
    :class:`TrajectoryError` when no span follows either convention."""
    listed = _span_list(spans)
    if not listed:
        raise TrajectoryError("no spans found (expected an OTLP/JSON export or a list of spans)", case_id=case_id)
    entries = _ordered(listed, case_id)  # each span read once (its messages are JSON to parse), used three times
    traj = _trajectory(entries, case_id)
    case: dict[str, Any] = {"id": case_id, "input": _input(entries) or "", "output": traj.final_output}
    if traj.steps:
        case["trajectory"] = traj.to_seed()
        case["final_output"] = traj.final_output
    contexts = _contexts(entries)
    if contexts:
        case["contexts"] = contexts
    if traj.input_tokens is not None or traj.output_tokens is not None:
        case["usage"] = {"input_tokens": traj.input_tokens, "output_tokens": traj.output_tokens}
    return case


def case_from_span(spans: list[dict[str, Any]], span_id: str, *, case_id: str) -> dict[str, Any]:
    """One chosen span of a trace as a case: its own input (a retrieval span's query, a model span's user message)
    and retrieved documents as ``contexts``; the output is the span's own (a model span) or else the trace's final
    answer, so a retrieval span is judged on what was answered from it."""
    span = next((s for s in spans if isinstance(s, dict) and str(s.get("spanId")) == span_id), None)
    if span is None:
        raise TrajectoryError(f"no span {span_id} in the trace", case_id=case_id)
    view = span_view(span)
    if view is None:
        raise TrajectoryError("the span follows neither the GenAI conventions nor OpenInference", case_id=case_id,
                              step=f"span '{span.get('name', '')}'")
    whole = case_from_spans(spans, case_id=case_id)
    case: dict[str, Any] = {"id": case_id, "input": view.input_text or whole["input"],
                            "output": view.output_text or whole["output"]}
    if view.documents:
        case["contexts"] = list(view.documents)
    return case
