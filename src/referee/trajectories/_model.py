"""The normalised trajectory: what an agent did, step by step, whatever format it was recorded in.

Every importer (the seed's ``trajectory`` list, OpenAI chat messages, Anthropic content blocks, OpenTelemetry
GenAI spans) produces the same :class:`Trajectory`, so checks and the judge never care where it came from.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..errors import RefereeError


class TrajectoryError(RefereeError, ValueError):
    """A trajectory that cannot be read; the message names the case and the step."""

    def __init__(self, message: str, *, case_id: str | None = None, step: int | str | None = None,
                 source: str | None = None) -> None:
        self.case_id = case_id
        self.step = step
        self.reason = message
        where = []
        if case_id is not None:
            where.append(f"case '{case_id}'")
        if step is not None:
            where.append(f"step {step}")
        prefix = ", ".join(where)
        if source:  # file:line first, as in every other referee error
            prefix = f"{source}: {prefix}" if prefix else source
        super().__init__((prefix + ": " if prefix else "") + message)


@dataclass
class Step:
    """One tool call (and its result) made by the agent."""

    index: int
    """1-based position in the trajectory (after ordering)."""
    tool: str
    args: Any = field(default_factory=dict)
    """Arguments as parsed JSON (an object almost always)."""
    result: Any = None
    error: str | None = None
    """The tool's error message when the call failed."""
    call_id: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    latency_ms: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.error is not None

    def signature(self) -> str:
        """Tool plus canonical arguments: two calls with the same signature are identical calls."""
        return self.tool + "|" + json.dumps(self.args, sort_keys=True, ensure_ascii=False, default=str)

    def to_seed(self) -> dict[str, Any]:
        """The seed's case shape ``{step, tool, args, ...}`` (only fields that are set)."""
        out: dict[str, Any] = {"step": self.index, "tool": self.tool, "args": self.args}
        for key in ("result", "error", "call_id", "input_tokens", "output_tokens", "cost_usd", "latency_ms"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        for key, value in self.extra.items():  # e.g. args_recorded: false survives an import round trip
            out.setdefault(key, value)
        return out


@dataclass
class Trajectory:
    """An agent run normalised from any supported recording: its tool-call steps, final output and the run's
    tokens, cost and latency when recorded."""

    steps: list[Step] = field(default_factory=list)
    final_output: Any = None
    source_format: str = "seed"
    input_tokens: int | None = None
    """Tokens of the whole run (model calls included) when the recording has them."""
    output_tokens: int | None = None
    cost_usd: float | None = None
    latency_ms: float | None = None

    @property
    def tools(self) -> list[str]:
        return [s.tool for s in self.steps]

    def total_cost(self) -> float | None:
        if self.cost_usd is not None:
            return self.cost_usd
        costs = [s.cost_usd for s in self.steps if s.cost_usd is not None]
        return sum(costs) if costs else None

    def total_tokens(self) -> int | None:
        if self.input_tokens is not None or self.output_tokens is not None:
            return (self.input_tokens or 0) + (self.output_tokens or 0)
        vals = [(s.input_tokens or 0) + (s.output_tokens or 0) for s in self.steps
                if s.input_tokens is not None or s.output_tokens is not None]
        return sum(vals) if vals else None

    def total_latency(self) -> float | None:
        if self.latency_ms is not None:
            return self.latency_ms
        vals = [s.latency_ms for s in self.steps if s.latency_ms is not None]
        return sum(vals) if vals else None

    def to_seed(self) -> list[dict[str, Any]]:
        return [s.to_seed() for s in self.steps]
