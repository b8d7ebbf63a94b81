"""Importers of message lists: the seed's ``trajectory`` list, OpenAI chat messages, Anthropic messages."""

from __future__ import annotations

import json
from typing import Any

from ._model import Step, Trajectory, TrajectoryError
from ._parse import _maybe_json, _role, float_or_none, int_or_none, parse_args, result_error

OPENAI_ROLES = {"system", "developer", "user", "assistant", "tool", "function"}
ANTHROPIC_ROLES = {"user", "assistant", "system"}


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
