"""One evaluator's typed result (:class:`CheckResult`) and the one place a row is built from it (:func:`result_row`).

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


_ROW: type[ResultRow] | None = None


def result_row(case: Any, result: CheckResult, *, evaluator: str, category: str | None = None,
               repeat: int | None = None, turn: int | None = None, metadata: dict[str, Any] | None = None,
               latency_ms: float | None = None) -> ResultRow:
    """The row of one evaluator's result on ``case`` (anything with ``id``, ``metadata`` and, optionally,
    ``category``): the command's row, and a one-evaluator run's. ``category`` (default the case's) and
    ``latency_ms`` (default the result's) are the run's."""
    global _ROW
    if _ROW is None:  # the models load while a run's first requests are in flight
        from ._schema import ResultRow

        _ROW = ResultRow
    scored = result.status == "scored" and result.score is not None
    lat = result.latency_ms if result.latency_ms is not None else latency_ms
    # Only the fields that differ from the defaults: validating fewer keys keeps a judge run's per-row cost what
    # it was when each judge built its row itself.
    fields: dict[str, Any] = {
        "id": case.id,
        "status": result.status if scored or result.status != "scored" else "error",
        "category": category if category is not None else getattr(case, "category", None),
        "evaluator": evaluator,
    }
    if result.reason:
        fields["rationale"] = result.reason
    if result.criteria:
        fields["criteria"] = result.criteria
    if result.judge is not None:
        fields["judge"] = result.judge
    if result.usage is not None:
        fields["usage"] = result.usage
    if result.cost_usd is not None:
        fields["cost_usd"] = result.cost_usd
    if lat is not None:
        fields["latency_ms"] = round(lat, 3)
    if repeat is not None:
        fields["repeat"] = repeat
    if turn is not None:
        fields["turn"] = turn
    if result.winner is not None:
        fields["winner"] = result.winner
    if result.position_bias_detected is not None:
        fields["position_bias_detected"] = result.position_bias_detected
    if result.raw_reply is not None:
        fields["raw_reply"] = result.raw_reply
    if result.flags:
        fields["flags"] = result.flags
    meta = metadata if metadata is not None else case.metadata
    if meta:
        fields["metadata"] = meta
    if result.details:
        fields["details"] = result.details
    if not result.criteria and isinstance(result.details.get("criteria"), list):
        # A check that keeps its parts as plain dicts in ``details["criteria"]`` (the trajectory composite):
        # on its own row they are the row's criteria.
        details = dict(result.details)
        fields["criteria"] = criteria_of(details.pop("criteria"))
        fields["details"] = details
    if result.passed is not None:
        # Unscored: a verdict already settled by what was graded (a failed critical criterion) stands.
        fields["passed"] = result.passed
    if scored:
        fields["score"] = result.score
        if result.error_message is not None:
            fields["error"] = result.error_message
    else:
        fields["error"] = result.error_message or result.reason or "no score"
    return _ROW(**fields)


def criteria_of(items: list[Any]) -> list[CriterionScore]:
    """Criteria kept as plain dicts (a combined row's ``details``, a check's parts) as typed criteria."""
    from ._schema import CriterionScore

    out: list[CriterionScore] = []
    for c in items:
        if isinstance(c, dict) and "id" in c:
            status = c.get("status", "scored")
            out.append(CriterionScore.model_validate({
                **{k: v for k, v in c.items() if k in CriterionScore.model_fields},
                "score": c.get("score") if status == "scored" else None,
                "evidence": [str(e) for e in c.get("evidence") or []]}))
    return out


SUITE_EVALUATOR = "suite"
"""The ``evaluator`` of a row combining several evaluators (a suite's scoring rule)."""


def checks_of(row: ResultRow) -> dict[str, CheckResult]:
    """Each evaluator's typed result on ``row``, by its label: a one-evaluator row is that evaluator's result;
    a suite's combined row holds one per evaluator (its entry in ``criteria`` and its ``details["checks"]``)."""
    if row.evaluator != SUITE_EVALUATOR:
        return {row.evaluator: CheckResult.from_row(row)}
    kept: dict[str, Any] = row.details.get("checks") or {}
    out: dict[str, CheckResult] = {}
    for c in row.criteria:
        d = dict(kept.get(c.id) or {})
        crit = d.pop("criteria", None)
        winner = d.pop("winner", None)
        bias = d.pop("position_bias_detected", None)
        out[c.id] = CheckResult(
            score=c.score if c.status == "scored" else None, passed=c.passed, reason=c.rationale or "",
            status=c.status, evidence=list(c.evidence), details=d,
            criteria=criteria_of(crit) if isinstance(crit, list) else [],
            winner=winner if winner in ("a", "b", "tie") else None,
            position_bias_detected=bias if isinstance(bias, bool) else None, error_message=c.error)
    return out
