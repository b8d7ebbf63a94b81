"""The one place a result row is built from an evaluator's result (:func:`result_row`): a judge's command row
and the row of a run with one evaluator are the same row.

Imports no pydantic until the first row is built: a judge run builds its first requests before the result
models load.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._check import CheckResult
    from ._schema import ResultRow

_ROW: type[ResultRow] | None = None


def result_row(case: Any, result: CheckResult, *, evaluator: str, category: str | None = None,
               repeat: int | None = None, turn: int | None = None, metadata: dict[str, Any] | None = None,
               latency_ms: float | None = None) -> ResultRow:
    """The row of one evaluator's result on ``case`` (anything with ``id``, ``metadata`` and, optionally,
    ``category``): the command's row, and a one-evaluator run's. ``category`` (for a case without its own) and
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
        # the case's own category wins; ``category`` is the run's default for a case without one
        "category": own if (own := getattr(case, "category", None)) is not None else category,
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
        from ._schema import criteria_of

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
