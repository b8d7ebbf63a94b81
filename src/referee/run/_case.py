"""One case through every evaluator of a suite: :class:`CaseEvaluator` runs the checks inline, sandboxed code in
threads and the judges concurrently, and the per-case combination rules turn their results into the case's row:
:func:`own_row` (a suite of one evaluator writes that evaluator's own row) and :func:`combine` (several: the
suite's scoring rule, ``weighted_mean``, ``all_pass`` or ``min``, over the evaluators' results). The engines
(``run/engines``) call :meth:`CaseEvaluator.evaluate` wherever a case runs."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..cases._case import Case
from ..evaluators._base import CheckResult, Evaluator, result_row
from ..evaluators._output_text import ImageNotText
from ..results._check import SUITE_EVALUATOR
from ..results._combine import suite_score
from ..suites._loader import EvalSpec, Suite

if TYPE_CHECKING:  # the row models load when the first row is made, while a run's first calls are in flight
    from ..results._schema import JudgeInfo, ResultRow, Usage

EVALUATOR_LABEL = SUITE_EVALUATOR


def _safe_check(spec: EvalSpec, case: Case, output: Any) -> CheckResult:
    try:
        res = spec.evaluator.evaluate(case, output)
    except ImageNotText as exc:  # nothing a text check can read: never an invented pass or fail
        return CheckResult(score=None, passed=None, reason=str(exc), status="unscored")
    except Exception as exc:  # noqa: BLE001 - a check that raises is an error row, never a stopped run
        return CheckResult.error(f"raised {type(exc).__name__}: {exc}")
    return _checked(spec, res)


def _checked(spec: EvalSpec, res: Any) -> CheckResult:
    if not isinstance(res, CheckResult):
        return CheckResult.error(f"{spec.label} returned {type(res).__name__}, not a CheckResult")
    if res.status == "scored" and (res.score is None or not 0.0 <= res.score <= 1.0 or res.score != res.score):
        return CheckResult.error(f"{spec.label} returned score {res.score!r}; scores are 0-1")
    if spec.aligned is not None and res.status == "scored" and res.score is not None:
        return _mapped(spec, res)
    return res


def _mapped(spec: EvalSpec, res: CheckResult) -> CheckResult:
    """The judge's score through its aligned judge's map: the row keeps the raw score beside the mapped one and
    names the alignment; its verdict is the map's pass mark on the raw score (else the run's threshold decides)."""
    al = spec.aligned
    assert al is not None and res.score is not None
    raw = res.score
    mapped = min(1.0, max(0.0, al.map_score(raw)))
    pass_mark = al.map.pass_mark if al.map is not None else None
    details = {**res.details, "raw_score": raw, "alignment": al.hash}
    return dataclasses.replace(res, score=mapped, details=details,
                               passed=(raw >= pass_mark) if pass_mark is not None else None)


def _has_async(spec: EvalSpec) -> bool:
    """Whether the evaluator has its own ``evaluate_async`` (function plugins, judges)."""
    return type(spec.evaluator).evaluate_async is not Evaluator.evaluate_async


def _output_of(case: Case, spec: EvalSpec) -> Any:
    return case.output if spec.field == "output" else case.get(spec.field)


@dataclass
class CaseEvaluator:
    """Evaluates one case with every spec of a suite and combines the results into one row."""

    suite: Suite
    code_slots: asyncio.Semaphore | None = None
    _fast: bool = field(init=False, default=True)

    def __post_init__(self) -> None:
        self._fast = not any(s.is_llm or s.blocking or _has_async(s) for s in self.suite.specs)

    async def evaluate(self, case: Case) -> ResultRow:
        t0 = time.perf_counter()
        if self._fast:
            results = [_safe_check(s, case, _output_of(case, s)) for s in self.suite.specs]
        elif len(self.suite.specs) == 1:
            # One evaluator is awaited directly: a gather's task costs ~40 us a case, a turn of the loop ~8 us.
            # The turn is still given: a plain function's evaluate_async never yields, and without it the rows
            # would reach the results file (and the history) only at the end of the run (a kill -9 loses them).
            results = [await self._one(self.suite.specs[0], case)]
            await asyncio.sleep(0)
        else:
            results = list(await asyncio.gather(*(self._one(s, case) for s in self.suite.specs)))
        return combine(self.suite, case, results, (time.perf_counter() - t0) * 1000)

    async def _one(self, spec: EvalSpec, case: Case) -> CheckResult:
        output = _output_of(case, spec)
        if spec.is_llm:
            try:
                return _checked(spec, await spec.evaluator.evaluate_async(case, output))
            except Exception as exc:  # noqa: BLE001
                from ..runner._engine import is_fatal

                if is_fatal(exc):
                    raise  # a bad key or unknown model repeats for every case: stop the run
                return CheckResult.error(f"{spec.label}: {type(exc).__name__}: {exc}")
        if spec.blocking:
            if self.code_slots is None:  # made once, so every case shares the same bound
                self.code_slots = asyncio.Semaphore(os.cpu_count() or 2)
            async with self.code_slots:
                return await asyncio.to_thread(_safe_check, spec, case, output)
        if _has_async(spec):
            try:
                return _checked(spec, await spec.evaluator.evaluate_async(case, output))
            except Exception as exc:  # noqa: BLE001
                return CheckResult.error(f"raised {type(exc).__name__}: {exc}")
        return _safe_check(spec, case, output)


def _passed(spec: EvalSpec, r: CheckResult, default_threshold: float) -> bool | None:
    if r.status != "scored" or r.score is None:
        return None
    if spec.threshold is not None:
        return r.score >= spec.threshold
    if r.passed is not None:
        return r.passed
    return r.score >= default_threshold


def combine(suite: Suite, case: Case, results: Sequence[CheckResult], latency_ms: float) -> ResultRow:
    """One row from one case's evaluator results: with one evaluator, that evaluator's own row (the command's
    row: its name as ``evaluator``, its criteria, winner, flags and details); with several, the combined row
    (the suite's scoring rule; each evaluator one of its ``criteria``, its details under
    ``details["checks"][label]``, its typed result at ``row.check(label)``)."""
    if len(results) == 1:
        return own_row(suite, case, suite.specs[0], results[0], latency_ms)
    sc = suite.scoring
    criteria: list[dict[str, Any]] = []
    usage: Usage | None = None
    cost: float | None = None
    judge: JudgeInfo | None = None
    raw_reply: str | None = None
    details: dict[str, Any] = {}
    bad: list[str] = []
    statuses = set()
    scores: list[float] = []
    weights: list[float] = []
    all_pass = True
    critical_failed: list[str] = []
    for spec, r in zip(suite.specs, results, strict=True):
        statuses.add(r.status)
        passed = _passed(spec, r, sc.threshold)
        if r.usage is not None:
            usage = r.usage if usage is None else usage + r.usage
        if r.cost_usd is not None:
            cost = (cost or 0.0) + r.cost_usd
        judge = r.judge or judge
        raw_reply = r.raw_reply or raw_reply
        kept = _kept_details(r)
        if kept:
            details[spec.label] = kept
        reason = r.reason if r.status == "scored" else r.problem
        # Plain dicts with only the keys that differ from the defaults: validating the whole row once is
        # twice as fast as building each CriterionScore (this loop runs 500,000 times in the benchmark).
        crit: dict[str, Any] = {"id": spec.label}
        if spec.name != spec.label:
            crit["name"] = spec.name
        if r.status != "scored":
            crit["status"] = r.status
        else:
            crit["score"] = r.score
        if passed is not None:
            crit["passed"] = passed
        if spec.weight != 1.0:
            crit["weight"] = spec.weight
        if spec.critical:
            crit["critical"] = True
        if reason:
            crit["rationale"] = reason
        if r.evidence:
            crit["evidence"] = [str(e) for e in r.evidence[:5]]
        if r.status == "error":
            crit["error"] = reason
        criteria.append(crit)
        if r.status != "scored":
            bad.append(f"{spec.label} {r.status}: {reason}")
            continue
        assert r.score is not None
        scores.append(r.score)
        weights.append(spec.weight)
        if not passed:
            all_pass = False
            bad.append(f"{spec.label}: {reason}" if reason else f"{spec.label} failed")
            if spec.critical:
                critical_failed.append(spec.label)
    common: dict[str, Any] = {
        "id": case.id, "category": case.category, "evaluator": EVALUATOR_LABEL, "criteria": criteria,
        "latency_ms": round(latency_ms, 3),
    }
    if judge is not None:
        common["judge"] = judge
    if usage is not None:
        common["usage"] = usage
    if cost is not None:
        common["cost_usd"] = cost
    meta = case.metadata
    if meta:
        common["metadata"] = meta
    if details:
        common["details"] = {"checks": details}
    from ..results._schema import ResultRow

    if "error" in statuses or "unscored" in statuses:
        status: Literal["error", "unscored"] = "error" if "error" in statuses else "unscored"
        return ResultRow.model_validate({
            **common, "status": status, "error": "; ".join(b for b in bad if f" {status}: " in b)[:1000],
            "rationale": "; ".join(bad)[:1000] or None, "raw_reply": raw_reply})
    score = suite_score(sc.mode, scores, weights, all_passed=all_pass, critical_failed=bool(critical_failed))
    flags = ["critical_failed"] if critical_failed else []
    ok = score >= sc.threshold and not critical_failed
    rationale = "; ".join(bad[:3]) if bad else f"all {len(criteria)} evaluators passed"
    if flags:
        common["flags"] = flags
    return ResultRow.model_validate({**common, "status": "scored", "score": round(score, 6), "passed": ok,
                                     "rationale": rationale[:1000]})


def _kept_details(r: CheckResult) -> dict[str, Any]:
    """What a combined row keeps of one evaluator's result beyond its criterion entry: its details, its own
    criteria and its winner (read back typed by ``row.check(label)``)."""
    if not (r.criteria or r.winner is not None or r.position_bias_detected is not None):
        return r.details
    kept: dict[str, Any] = {}
    if r.criteria:
        kept["criteria"] = [c.model_dump(mode="json", exclude_defaults=True) for c in r.criteria]
    kept.update(r.details)
    if r.winner is not None or r.position_bias_detected is not None:
        kept.update(winner=r.winner, position_bias_detected=r.position_bias_detected)
    return kept


def own_row(suite: Suite, case: Case, spec: EvalSpec, r: CheckResult, latency_ms: float) -> ResultRow:
    """The row of a suite with one evaluator: the evaluator's own row (:func:`result_row`, as its command writes
    it), under the suite's rules where they decide more than the evaluator did: an entry's ``threshold`` sets
    ``passed``, ``all_pass`` scoring makes the score 1 or 0, and a failed ``critical`` entry scores 0."""
    label = spec.evaluator.row_evaluator if spec.label == spec.name else spec.label
    score = r.score
    if r.status == "scored" and score is not None and (
            spec.threshold is not None or spec.critical or suite.scoring.mode == "all_pass"):
        passed = _passed(spec, r, suite.scoring.threshold)
        r = dataclasses.replace(r, passed=passed)
        critical_failed = bool(spec.critical) and not passed
        if suite.scoring.mode == "all_pass" or critical_failed:  # else the suite's rule leaves one score as it is
            r.score = suite_score(suite.scoring.mode, [score], [1.0], all_passed=bool(passed),
                                  critical_failed=critical_failed)
        if critical_failed:
            r.flags = [*r.flags, "critical_failed"]
    return result_row(case, r, evaluator=label, category=getattr(spec.evaluator, "category", None),
                      latency_ms=latency_ms)
