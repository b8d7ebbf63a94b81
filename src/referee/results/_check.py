"""One evaluator's typed result (:class:`CheckResult`); the row is built from it in one place,
:func:`referee.results._rows.result_row`.

Every evaluator returns a :class:`CheckResult`: the checks, the LLM judges, plugins and functions. It carries
everything a result row needs (score, verdict, status, rationale, criteria, the pairwise winner, evidence,
usage, cost, judge, raw reply, details), so a run with one evaluator writes that evaluator's own row, from the
command and from :func:`referee.evaluate` alike, and a suite's combined row keeps each evaluator's result
reachable through :meth:`ResultRow.check <referee.results.ResultRow.check>`.

This module imports no pydantic: a judge run builds its first requests before the result models load.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ._schema import CriterionScore, JudgeInfo, ResultRow, Usage


@dataclass
class CheckResult:
    """What one evaluator says about one case."""

    score: float | None
    """0-1 (None when unscored or error)."""
    passed: bool | None = None
    """The evaluator's own verdict where it has one (None: the run's threshold decides)."""
    reason: str = ""
    """Why: the row's ``rationale`` (for an unscored or error result without ``error``, also the error)."""
    status: Literal["scored", "unscored", "error"] = "scored"
    evidence: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    """Evaluator-specific data: the row's ``details`` (in a suite's combined row, under the evaluator's label)."""
    usage: Usage | None = None
    """Tokens the judge used (LLM evaluators)."""
    cost_usd: float | None = None
    judge: JudgeInfo | None = None
    """Which judge gave the verdict (provider, model, template hash)."""
    raw_reply: str | None = None
    """An excerpt of an unusable judge reply, for the record."""
    latency_ms: float | None = None
    criteria: list[CriterionScore] = field(default_factory=list)
    """The evaluator's own criteria (a rubric's, a template judge's reply objects, a gold file's)."""
    winner: Literal["a", "b", "tie"] | None = None
    """Pairwise judges: the reconciled winner over both orders."""
    position_bias_detected: bool | None = None
    error_message: str | None = None
    """What went wrong (the row's ``error``; default ``reason`` for an unscored or error result)."""
    flags: list[str] = field(default_factory=list)
    """Row markers (``cached``, ``ungrounded``, ``self_grading``, ...)."""

    @property
    def problem(self) -> str:
        """What a combined row says of this result when it is not scored (the error first)."""
        return self.error_message or self.reason or self.status

    @classmethod
    def from_row(cls, row: ResultRow, *, threshold: float | None = None, **details: Any) -> CheckResult:
        """A result row as one evaluator's result (the inverse of :func:`result_row`): score, verdict, criteria,
        winner and the typed judge fields. ``passed`` is ``score >= threshold`` when a threshold is given, else
        the row's own verdict; ``details`` (default: the row's) replace the row's details."""
        res = cls(score=row.score, passed=row.passed, reason=row.rationale or "", status=row.status,
                  details=dict(details) if details else dict(row.details), usage=row.usage, cost_usd=row.cost_usd,
                  judge=row.judge, raw_reply=row.raw_reply, latency_ms=row.latency_ms, criteria=list(row.criteria),
                  winner=row.winner, position_bias_detected=row.position_bias_detected, error_message=row.error,
                  flags=list(row.flags))
        if row.status == "scored" and row.score is not None and threshold is not None:
            res.passed = row.score >= threshold
        return res

    @classmethod
    def from_bool(cls, ok: bool, reason: str = "", **details: Any) -> CheckResult:
        return cls(score=1.0 if ok else 0.0, passed=ok, reason=reason, details=details)

    @classmethod
    def error(cls, message: str) -> CheckResult:
        return cls(score=None, passed=None, reason=message, status="error")


SUITE_EVALUATOR = "suite"
"""The ``evaluator`` of a row combining several evaluators (a suite's scoring rule)."""
