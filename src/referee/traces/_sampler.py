"""Which traces are evaluated: a rate decided by a hash of the trace id (a rerun samples the same traces, and
anyone can recompute the decision), traces matching an ``always`` rule whatever the rate, and a cap per minute.

Every decision carries its reason, so what was not evaluated is counted, never dropped silently.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._util._hints import refuse_unknown
from .._util._numbers import whole_number
from ..errors import UserError

_RULE_FIELDS = ("service", "span_name", "status", "attributes")
_SCALE = float(1 << 64)


def trace_fraction(trace_id: str) -> float:
    """The trace id's place in [0, 1): the first 8 bytes of SHA-256 of its hex text. Hashing (rather than reading
    the id's own random bits) keeps the rate honest for ids that are not random (sequential, zero-padded)."""
    digest = hashlib.sha256(trace_id.lower().encode("ascii", "replace")).digest()
    return int.from_bytes(digest[:8], "big") / _SCALE


@dataclass
class Rule:
    """A filter on a trace's spans: every given field must match on at least one span. ``status: error`` matches a
    span with ERROR status; ``attributes`` maps names to a value (or ``"*"``: present with any value)."""

    service: str | None = None
    span_name: str | None = None
    status: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, spec: Mapping[str, Any], where: str) -> Rule:
        if not isinstance(spec, Mapping):
            raise UserError(f"{where}: expected a mapping such as {{status: error}} (fields: service, span_name, "
                            f"status, attributes), got {spec!r}")
        refuse_unknown(spec, _RULE_FIELDS, where, noun="field")
        status = spec.get("status")
        if status not in (None, "error", "ok", "unset"):
            raise UserError(f"{where}.status: expected error, ok or unset, got {status!r}")
        attrs = spec.get("attributes") or {}
        if not isinstance(attrs, Mapping):
            raise UserError(f"{where}.attributes: expected a mapping of attribute names to values")
        return cls(service=spec.get("service"), span_name=spec.get("span_name"), status=status,
                   attributes=dict(attrs))

    def _span_matches(self, span: Mapping[str, Any]) -> bool:
        if self.service is not None and span.get("service") != self.service:
            return False
        if self.span_name is not None and span.get("name") != self.span_name:
            return False
        if self.status is not None:
            code = int((span.get("status") or {}).get("code") or 0)
            if {"unset": 0, "ok": 1, "error": 2}[self.status] != code:
                return False
        attrs = span.get("attributes") or {}
        for key, want in self.attributes.items():
            if key not in attrs or (want != "*" and attrs[key] != want):
                return False
        return True

    def matches(self, spans: Sequence[Mapping[str, Any]]) -> bool:
        return any(self._span_matches(s) for s in spans)


@dataclass
class Decision:
    """Whether a trace is evaluated, and why."""

    sampled: bool
    reason: str
    """``rate``, ``always`` (sampled), ``sampled_out``, ``budget_lowered_rate`` (under the configured rate, over
    the rate the budget lowered it to) or ``over_cap`` (skipped)."""


class Sampler:
    """``rate`` in [0, 1]; ``always`` rules sample a matching trace at any rate; ``per_minute`` caps the traces
    sampled in each clock minute (None: no cap; ``always`` traces count against it too)."""

    def __init__(self, rate: float = 1.0, *, always: Sequence[Rule] = (), per_minute: int | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        if not (isinstance(rate, int | float) and not isinstance(rate, bool) and math.isfinite(rate)
                and 0.0 <= rate <= 1.0):
            raise UserError(f"sampling rate must be a number from 0 to 1, got {rate!r}")
        if per_minute is not None:
            per_minute = whole_number(per_minute, "sampling per_minute", minimum=0)
        self.rate = float(rate)
        self.always = list(always)
        self.per_minute = per_minute
        self._clock = clock
        self._minute: int | None = None
        self._in_minute = 0

    def rate_sampled(self, trace_id: str) -> bool:
        """The rate decision alone (what a rerun reproduces)."""
        return trace_fraction(trace_id) < self.rate

    def decide(self, trace_id: str, spans: Sequence[Mapping[str, Any]] = (), *, factor: float = 1.0) -> Decision:
        """``factor`` (0 to 1) lowers the rate (a budget's doing): the traces it keeps are a subset of those the
        full rate keeps, still decided by the hash."""
        if any(rule.matches(spans) for rule in self.always):
            reason = "always"
        elif trace_fraction(trace_id) < self.rate * factor:
            reason = "rate"
        elif self.rate_sampled(trace_id):
            return Decision(False, "budget_lowered_rate")
        else:
            return Decision(False, "sampled_out")
        if self.per_minute is not None:
            minute = int(self._clock() // 60)
            if minute != self._minute:
                self._minute, self._in_minute = minute, 0
            if self._in_minute >= self.per_minute:
                return Decision(False, "over_cap")
            self._in_minute += 1
        return Decision(True, reason)
