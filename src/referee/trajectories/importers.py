"""Importers: the seed's ``trajectory`` list, OpenAI chat messages, Anthropic messages, OpenTelemetry GenAI spans.

Every importer raises :class:`TrajectoryError` naming the case and the step (or message / span) at fault;
callers turn that into an ``error`` row so one bad case never stops a run.

Tool errors: OpenAI messages have no error flag, so a tool result that is a JSON object with a non-empty
``error`` key counts as a failed call in every format (Anthropic's ``is_error`` and a span's ERROR status are
used where present).
"""

from __future__ import annotations

import datetime as _dt
import json
from typing import Any, TypeVar

from .. import _data
from ..cases import Case
from .model import Step, Trajectory, TrajectoryError

FORMATS = ("seed", "openai", "anthropic", "otel")
OPENAI_ROLES = {"system", "developer", "user", "assistant", "tool", "function"}
ANTHROPIC_ROLES = {"user", "assistant", "system"}
_N = TypeVar("_N", int, float)


# -- shared helpers -------------------------------------------------------------------------------------

def parse_args(raw: Any, *, case_id: str | None, at: int | str) -> Any:
    """Arguments as a JSON object: objects as they are, JSON text parsed; anything else is an error."""
    if raw is None or raw == "":
        return {}
    value = raw
    if isinstance(raw, str):
        try:
            value = _data.loads(raw)
        except _data.UnsafeData as exc:
            raise TrajectoryError(f"arguments refused: {exc}", case_id=case_id, step=at) from None
        except json.JSONDecodeError as exc:
            shown = raw if len(raw) <= 60 else raw[:60] + "..."
            raise TrajectoryError(f"arguments are not JSON ({exc.msg} at column {exc.colno}): {shown!r}",
                                  case_id=case_id, step=at) from exc
    if not isinstance(value, dict):
        raise TrajectoryError(f"arguments must be a JSON object, got {type(value).__name__}",
                              case_id=case_id, step=at)
    return value


def _maybe_json(value: Any) -> Any:
    if isinstance(value, str):
        s = value.strip()
        if s[:1] in ("{", "["):
            try:
                return _data.loads(s)
            except ValueError:  # not JSON, or refused (too deep, huge numbers): kept as the text it is
                return value
    return value


def result_error(result: Any) -> str | None:
    """The error carried by a tool result object (``{"error": ...}``), if any."""
    if isinstance(result, dict) and result.get("error") not in (None, "", False):
        err = result["error"]
        if isinstance(err, dict):
            return str(err.get("message") or json.dumps(err, sort_keys=True))
        return str(err)
    return None


def _number_or_none(v: Any, kind: type[_N]) -> _N | None:
    # Recorders write counts and costs as numbers or numeric text; anything else is "not recorded".
    if v is None or isinstance(v, bool):
        return None
    try:
        return kind(v)
    except (TypeError, ValueError):
        return None


def int_or_none(v: Any) -> int | None:
    """``int(v)``; None when absent, a boolean, or not a number."""
    return _number_or_none(v, int)


def float_or_none(v: Any) -> float | None:
    """``float(v)``; None when absent, a boolean, or not a number."""
    return _number_or_none(v, float)


def _role(msg: Any, roles: set[str], *, case_id: str | None, at: str) -> str:
    """The role of a chat message, which must be an object with one of ``roles``."""
    if not isinstance(msg, dict):
        raise TrajectoryError("a message must be an object", case_id=case_id, step=at)
    role = msg.get("role")
    if not isinstance(role, str) or role not in roles:  # a list or dict role would not even hash
        raise TrajectoryError(f"unknown role {role!r} (expected one of {', '.join(sorted(roles))})",
                              case_id=case_id, step=at)
    return role


# -- the seed shape -------------------------------------------------------------------------------------

_SEED_STEP_KEYS = frozenset({"step", "tool", "args", "arguments", "result", "output", "observation", "error",
                             "tokens", "input_tokens", "output_tokens", "cost_usd", "latency_ms", "call_id"})
"""Keys a seed step maps onto :class:`Step` fields; any other key is kept in ``Step.extra``."""


def from_seed(steps: list[Any], *, case_id: str | None = None) -> Trajectory:
    """``[{step, tool, args, result?, error?, tokens?, cost_usd?, latency_ms?}]``; ``step`` numbers, when
    given, must increase."""
    out: list[Step] = []
    last_num: int | None = None
    for i, raw in enumerate(steps):
        at: int | str = raw.get("step", i + 1) if isinstance(raw, dict) else i + 1
        if not isinstance(raw, dict):
            raise TrajectoryError(f"trajectory[{i}] must be an object, got {type(raw).__name__}",
                                  case_id=case_id, step=i + 1)
        if "step" in raw:
            num = raw["step"]
            if isinstance(num, bool) or not isinstance(num, int):
                raise TrajectoryError(f"'step' must be an integer, got {num!r}", case_id=case_id,
                                      step=f"trajectory[{i}]")
            if last_num is not None and num == last_num:
                raise TrajectoryError(f"duplicate step number {num} (trajectory[{i - 1}] and trajectory[{i}])",
                                      case_id=case_id, step=num)
            if last_num is not None and num < last_num:
                raise TrajectoryError(f"steps out of order: step {num} comes after step {last_num}",
                                      case_id=case_id, step=num)
            last_num = num
        tool = raw.get("tool")
        if not isinstance(tool, str) or not tool.strip():
            what = "missing" if tool in (None, "") else f"not a string ({tool!r})"
            raise TrajectoryError(f"tool name is {what}; every step needs 'tool'", case_id=case_id, step=at)
        args = parse_args(raw.get("args", raw.get("arguments")), case_id=case_id, at=at)
        result = raw.get("result", raw.get("output", raw.get("observation")))
        error = raw.get("error")
        if error in (None, "", False):
            error = result_error(result)
        tokens = raw.get("tokens")
        in_tok = int_or_none(raw.get("input_tokens"))
        out_tok = int_or_none(raw.get("output_tokens"))
        if isinstance(tokens, dict):
            in_tok = in_tok if in_tok is not None else int_or_none(tokens.get("input") or tokens.get("input_tokens"))
            out_tok = out_tok if out_tok is not None else int_or_none(tokens.get("output")
                                                                      or tokens.get("output_tokens"))
        elif tokens is not None and in_tok is None:
            in_tok = int_or_none(tokens)
        out.append(Step(
            index=len(out) + 1, tool=tool.strip(), args=args, result=result,
            error=None if error in (None, "", False) else str(error), call_id=raw.get("call_id"),
            input_tokens=in_tok, output_tokens=out_tok, cost_usd=float_or_none(raw.get("cost_usd")),
            latency_ms=float_or_none(raw.get("latency_ms")),
            extra={k: v for k, v in raw.items() if k not in _SEED_STEP_KEYS},
        ))
    return Trajectory(steps=out, source_format="seed")


# -- OpenAI chat messages -------------------------------------------------------------------------------

def _openai_text(content: Any) -> str | None:
    if content is None:
        return None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") in ("text", "output_text")]
        return "".join(parts) if parts else None
    return str(content)


def from_openai(messages: list[Any], *, case_id: str | None = None) -> Trajectory:
    """Chat Completions messages: assistant ``tool_calls`` matched to ``tool`` messages by ``tool_call_id``."""
    steps: list[Step] = []
    by_id: dict[str, Step] = {}
    final: str | None = None
    pending_function: Step | None = None
    for m_i, msg in enumerate(messages):
        at = f"messages[{m_i}]"
        role = _role(msg, OPENAI_ROLES, case_id=case_id, at=at)
        if role == "assistant":
            calls = msg.get("tool_calls") or []
            if not isinstance(calls, list):
                raise TrajectoryError("'tool_calls' must be a list", case_id=case_id, step=at)
            for c_i, call in enumerate(calls):
                cat = f"{at}.tool_calls[{c_i}]"
                fn = call.get("function") if isinstance(call, dict) else None
                name = fn.get("name") if isinstance(fn, dict) else None
                if not isinstance(name, str) or not name.strip():
                    raise TrajectoryError("tool name is missing (function.name)", case_id=case_id, step=cat)
                args = parse_args(fn.get("arguments") if isinstance(fn, dict) else None, case_id=case_id, at=cat)
                step = Step(index=len(steps) + 1, tool=name.strip(), args=args, call_id=call.get("id"))
                steps.append(step)
                if step.call_id:
                    by_id[str(step.call_id)] = step
            fc = msg.get("function_call")  # the legacy single-call shape
            if isinstance(fc, dict):
                name = fc.get("name")
                if not isinstance(name, str) or not name.strip():
                    raise TrajectoryError("tool name is missing (function_call.name)", case_id=case_id, step=at)
                pending_function = Step(index=len(steps) + 1, tool=name.strip(),
                                        args=parse_args(fc.get("arguments"), case_id=case_id, at=at))
                steps.append(pending_function)
            text = _openai_text(msg.get("content"))
            if text and not calls and not fc:
                final = text
        elif role == "tool":
            cid = msg.get("tool_call_id")
            step_for = by_id.get(str(cid)) if cid is not None else None
            if step_for is None:
                raise TrajectoryError(f"tool result for unknown tool_call_id {cid!r}", case_id=case_id, step=at)
            _attach_result(step_for, _maybe_json(_openai_text(msg.get("content"))))
        elif role == "function":
            if pending_function is None:
                raise TrajectoryError("function result without a preceding function_call", case_id=case_id,
                                      step=at)
            _attach_result(pending_function, _maybe_json(_openai_text(msg.get("content"))))
            pending_function = None
    return Trajectory(steps=steps, final_output=final, source_format="openai")


def _attach_result(step: Step, result: Any, is_error: bool = False) -> None:
    step.result = result
    if is_error:
        step.error = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
    else:
        step.error = result_error(result)


# -- Anthropic messages ---------------------------------------------------------------------------------

def _anthropic_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        return "".join(parts) if parts else None
    return None


def from_anthropic(messages: list[Any], *, case_id: str | None = None) -> Trajectory:
    """Messages API: ``tool_use`` blocks in assistant turns, ``tool_result`` blocks (``is_error``) in user turns."""
    steps: list[Step] = []
    by_id: dict[str, Step] = {}
    final: str | None = None
    for m_i, msg in enumerate(messages):
        at = f"messages[{m_i}]"
        role = _role(msg, ANTHROPIC_ROLES, case_id=case_id, at=at)
        content = msg.get("content")
        blocks = content if isinstance(content, list) else []
        has_tool_use = False
        for b_i, block in enumerate(blocks):
            bat = f"{at}.content[{b_i}]"
            if not isinstance(block, dict):
                raise TrajectoryError("a content block must be an object", case_id=case_id, step=bat)
            btype = block.get("type")
            if btype in ("tool_use", "server_tool_use"):
                has_tool_use = True
                name = block.get("name")
                if not isinstance(name, str) or not name.strip():
                    raise TrajectoryError("tool name is missing (tool_use.name)", case_id=case_id, step=bat)
                step = Step(index=len(steps) + 1, tool=name.strip(),
                            args=parse_args(block.get("input"), case_id=case_id, at=bat), call_id=block.get("id"))
                steps.append(step)
                if step.call_id:
                    by_id[str(step.call_id)] = step
            elif btype == "tool_result":
                tid = block.get("tool_use_id")
                target = by_id.get(str(tid)) if tid is not None else None
                if target is None:
                    raise TrajectoryError(f"tool_result for unknown tool_use_id {tid!r}", case_id=case_id, step=bat)
                raw = block.get("content")
                result = _maybe_json(_anthropic_text(raw) if isinstance(raw, list) else raw)
                _attach_result(target, result, is_error=bool(block.get("is_error")))
        if role == "assistant" and not has_tool_use:
            text = _anthropic_text(content)
            if text:
                final = text
    return Trajectory(steps=steps, final_output=final, source_format="anthropic")


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


# -- dispatch -------------------------------------------------------------------------------------------

def detect_format(data: Any) -> str:
    """Guess the format of a recorded run: ``seed``, ``openai``, ``anthropic`` or ``otel``."""
    if isinstance(data, dict):
        if "resourceSpans" in data or "spans" in data:
            return "otel"
        if isinstance(data.get("messages"), list):
            return detect_format(data["messages"])
        if "attributes" in data:
            return "otel"
        return "seed"
    if not isinstance(data, list):
        return "seed"
    dicts = [d for d in data if isinstance(d, dict)]
    if any("resourceSpans" in d or "attributes" in d or "spanId" in d or "span_id" in d for d in dicts):
        return "otel"
    if any("role" in d for d in dicts):
        for d in dicts:
            if d.get("tool_calls") or d.get("role") in ("tool", "function") or d.get("function_call"):
                return "openai"
            content = d.get("content")
            if isinstance(content, list) and any(
                isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result") for b in content
            ):
                return "anthropic"
        return "openai"
    return "seed"


def import_trajectory(data: Any, fmt: str | None = None, *, case_id: str | None = None) -> Trajectory:
    """Normalise a recorded run in any supported format (``fmt`` None: detected)."""
    fmt = fmt or detect_format(data)
    if fmt not in FORMATS:
        raise TrajectoryError(f"unknown trajectory format {fmt!r} (known: {', '.join(FORMATS)})", case_id=case_id)
    if fmt == "otel":
        return from_otel(data, case_id=case_id)
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        data = data["messages"]
    if not isinstance(data, list):
        raise TrajectoryError(f"expected a list of {'steps' if fmt == 'seed' else 'messages'}, got "
                              f"{type(data).__name__}", case_id=case_id)
    if fmt == "openai":
        return from_openai(data, case_id=case_id)
    if fmt == "anthropic":
        return from_anthropic(data, case_id=case_id)
    return from_seed(data, case_id=case_id)


def trajectory_of(case: Case) -> Trajectory:
    """The case's trajectory from ``trajectory`` (any format), ``messages`` or ``spans``; ``trajectory_format``
    forces a format. The case's ``output`` / ``final_output`` wins over a final answer found in the recording."""
    fmt = case.get("trajectory_format")
    if fmt is not None and not isinstance(fmt, str):
        raise TrajectoryError("'trajectory_format' must be a string", case_id=case.id, source=case.where)
    for key in ("trajectory", "messages", "spans", "resourceSpans"):
        if case.get(key) is not None:
            data = case.data if key == "resourceSpans" else case.get(key)
            try:
                traj = import_trajectory(data, fmt, case_id=case.id)
            except TrajectoryError as exc:
                if case.where and not exc.args[0].startswith(case.where):
                    exc.args = (f"{case.where}: {exc.args[0]}",)
                raise
            if case.output is not None:
                traj.final_output = case.output
            return traj
    raise TrajectoryError("no trajectory (expected a 'trajectory', 'messages' or 'spans' field)",
                          case_id=case.id, source=case.where)
