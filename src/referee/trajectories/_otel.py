"""The importer of OpenTelemetry GenAI spans (OTLP/JSON exports and span lists)."""

from __future__ import annotations

import datetime as _dt
from typing import Any

from ._model import Step, Trajectory, TrajectoryError
from ._parse import _maybe_json, int_or_none, parse_args, result_error

# -- OpenTelemetry GenAI spans --------------------------------------------------------------------------

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


def _output_text(value: Any) -> str | None:
    """Text of ``gen_ai.output.messages`` (a JSON string of ``[{role, parts: [{type, content}]}]``)."""
    value = _maybe_json(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = []
        for msg in value:
            if isinstance(msg, dict):
                for part in msg.get("parts") or []:
                    if isinstance(part, dict) and part.get("type") == "text":
                        texts.append(str(part.get("content", "")))
        return "".join(texts) or None
    return None


def from_otel(data: Any, *, case_id: str | None = None) -> Trajectory:
    """``execute_tool`` spans (``gen_ai.tool.name``, ``gen_ai.tool.call.arguments`` / ``.result``) ordered by
    start time; token usage of the other GenAI spans (``gen_ai.usage.*``) is summed for the whole run."""
    spans = _span_list(data)
    if not spans:
        raise TrajectoryError("no spans found (expected an OTLP/JSON export or a list of spans)", case_id=case_id)
    entries = []
    any_genai = False
    for i, span in enumerate(spans):
        if not isinstance(span, dict):
            raise TrajectoryError("a span must be an object", case_id=case_id, step=f"spans[{i}]")
        attrs = _attributes(span)
        if any(isinstance(k, str) and k.startswith("gen_ai.") for k in attrs):
            any_genai = True
        entries.append((_time_ns(span, "startTimeUnixNano", "start_time"), i, span, attrs))
    if not any_genai:
        raise TrajectoryError("no span has OpenTelemetry GenAI attributes (gen_ai.operation.name, "
                              "gen_ai.tool.name, ...); is this a GenAI trace?", case_id=case_id)
    # Start time decides the order; spans without one keep their file position relative to each other.
    entries.sort(key=lambda e: (e[0] is None, e[0] or 0, e[1]))
    steps: list[Step] = []
    in_tok = out_tok = 0
    have_tokens = False
    final: str | None = None
    for start, i, span, attrs in entries:
        name = str(span.get("name", ""))
        at = f"span '{name}' (spans[{i}])" if name else f"spans[{i}]"
        op = attrs.get("gen_ai.operation.name")
        is_tool = op == "execute_tool" or (op is None and "gen_ai.tool.name" in attrs) or \
            (op is None and name.startswith("execute_tool"))
        if is_tool:
            tool = attrs.get("gen_ai.tool.name")
            if not isinstance(tool, str) or not tool.strip():
                raise TrajectoryError("execute_tool span without gen_ai.tool.name", case_id=case_id, step=at)
            raw_args = attrs.get("gen_ai.tool.call.arguments")
            args = parse_args(raw_args, case_id=case_id, at=at)
            result = _maybe_json(attrs.get("gen_ai.tool.call.result"))
            end = _time_ns(span, "endTimeUnixNano", "end_time")
            error = _span_error(span, attrs) or result_error(result)
            steps.append(Step(
                index=len(steps) + 1, tool=tool.strip(), args=args, result=result, error=error,
                call_id=attrs.get("gen_ai.tool.call.id"),
                latency_ms=(end - start) / 1e6 if start is not None and end is not None else None,
                extra={} if raw_args is not None else {"args_recorded": False},
            ))
            continue
        it = int_or_none(attrs.get("gen_ai.usage.input_tokens"))
        ot = int_or_none(attrs.get("gen_ai.usage.output_tokens"))
        if it is not None or ot is not None:
            have_tokens = True
            in_tok += it or 0
            out_tok += ot or 0
        if op in ("chat", "invoke_agent", "text_completion", "generate_content"):
            text = _output_text(attrs.get("gen_ai.output.messages"))
            if text:
                final = text
    return Trajectory(steps=steps, final_output=final, source_format="otel",
                      input_tokens=in_tok if have_tokens else None, output_tokens=out_tok if have_tokens else None)
