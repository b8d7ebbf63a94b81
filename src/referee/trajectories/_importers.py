"""Importers: the seed's ``trajectory`` list, OpenAI chat messages, Anthropic messages, OpenTelemetry GenAI spans.

Every importer raises :class:`TrajectoryError` naming the case and the step (or message / span) at fault;
callers turn that into an ``error`` row so one bad case never stops a run.

Tool errors: OpenAI messages have no error flag, so a tool result that is a JSON object with a non-empty
``error`` key counts as a failed call in every format (Anthropic's ``is_error`` and a span's ERROR status are
used where present).
"""

from __future__ import annotations

from typing import Any

from ..cases._case import Case
from ._messages import ANTHROPIC_ROLES, OPENAI_ROLES, _attach_result, from_anthropic, from_openai, from_seed
from ._model import Trajectory, TrajectoryError
from ._otel import _attributes, _span_list, _time_ns, from_otel
from ._parse import _maybe_json, float_or_none, int_or_none, parse_args, result_error

FORMATS = ("seed", "openai", "anthropic", "otel")

# The importers live in _messages.py (seed, OpenAI, Anthropic) and _otel.py (spans), their shared helpers in
# _parse.py; this module dispatches and keeps the import paths callers use.
__all__ = [
    "ANTHROPIC_ROLES", "FORMATS", "OPENAI_ROLES", "_attach_result", "_attributes", "_maybe_json", "_span_list",
    "_time_ns", "detect_format", "float_or_none", "from_anthropic", "from_openai", "from_otel", "from_seed",
    "import_trajectory", "int_or_none", "parse_args", "result_error", "trajectory_of",
]

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
