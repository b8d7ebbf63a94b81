"""The ``trajectory`` check: the deterministic trajectory checks of :mod:`._trajectory_checks` combined with the
outcome into one verdict (a correct final answer reached by a broken trajectory never scores 1.0), and the
result row of ``referee trajectory``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..cases._case import Case
from ..results._combine import goal_times_process
from ..results._schema import ResultRow
from ..trajectories import TrajectoryError, trajectory_of
from ._base import CheckResult, Evaluator, register, result_row
from ._trajectory_checks import _TrajectoryEvaluator, _where, expectations

# -- the combination ------------------------------------------------------------------------------------

PROCESS_CHECKS = ("tool_not_used", "tool_used", "tool_sequence", "tool_args", "trajectory_budget",
                  "no_repeated_calls", "tool_errors_handled")
"""Checks about *how* the agent worked. ``goal_reached`` is about *what* it achieved."""
CRITICAL_CHECKS = frozenset({"tool_not_used"})
_ALWAYS_ON = ("no_repeated_calls", "tool_errors_handled")
_EXPECT_KEYS = {
    "tool_not_used": ("tools_not_used", "forbidden_tools"), "tool_used": ("tools_used", "tools"),
    "tool_sequence": ("sequence",), "tool_args": ("args",),
    "trajectory_budget": ("max_steps", "max_cost_usd", "max_tokens", "max_latency_ms"), "goal_reached": ("goal",),
}


def combine(outcome: float | None, process: list[tuple[str, CheckResult]], *, cap: float) -> tuple[float, bool, str]:
    """The combination rule, in one place.

    ``score = outcome x mean(process scores)``; when any process check failed the score is capped at
    ``cap`` (0.5 by default, below the usual 0.7 pass threshold); a failed critical check (a forbidden tool
    was called) makes it 0. ``outcome`` is the goal check's score (1.0 when the case states no goal).
    Unscored checks take no part. So a correct final answer reached by a broken trajectory scores at most
    ``cap`` and fails.
    """
    scored = [(n, r.score, r.passed) for n, r in process if r.status == "scored" and r.score is not None]
    failed = [n for n, _, passed in scored if passed is False]
    score, decided = goal_times_process(outcome, [s for _, s, _ in scored], process_failed=bool(failed),
                                        critical_failed=any(n in CRITICAL_CHECKS for n in failed), cap=cap)
    rule = {"critical": "critical check failed", "capped": f"capped at {cap:g}: process check failed",
            "product": "goal x process"}[decided]
    return score, not failed and (1.0 if outcome is None else outcome) >= 1.0, rule


@register
@dataclass
class TrajectoryCheck(Evaluator):
    """All applicable checks on one case, combined into one score (see :func:`combine`).

    ``checks``: names to run (default: every check whose expectation the case states, plus
    ``no_repeated_calls`` and ``tool_errors_handled`` always). ``options``: ``{check: {option: value}}``.
    """

    name: ClassVar[str] = "trajectory"
    checks: list[str] | None = None
    options: dict[str, dict[str, Any]] = field(default_factory=dict)
    cap: float = 0.5

    def __post_init__(self) -> None:
        known = set(PROCESS_CHECKS) | {"goal_reached"}
        for n in [*(self.checks or []), *self.options]:
            if n not in known:
                raise ValueError(f"unknown trajectory check '{n}' (known: {', '.join(sorted(known))})")
        if not 0.0 <= self.cap <= 1.0:
            raise ValueError("cap must be within 0-1")
        from ..errors import OptionError
        from ._base import registry
        from ._options import build_evaluator

        # Build every sub-check once, now, with its options type-checked as a suite's are, so a bad option is
        # reported (at its path) before any case runs rather than as an error row per case.
        self._built: dict[str, _TrajectoryEvaluator] = {}
        for n in sorted(known):
            try:
                ev = build_evaluator(registry()[n], dict(self.options.get(n) or {}))
            except OptionError as exc:
                raise OptionError.of([(f"options.{n}" + (f".{p}" if p else ""), m) for p, m in exc.problems]
                                     ) from None
            assert isinstance(ev, _TrajectoryEvaluator)
            self._built[n] = ev

    def selected(self, case: Case) -> list[str]:
        if self.checks is not None:
            return list(self.checks)
        exp = expectations(case)
        names = [n for n in (*PROCESS_CHECKS, "goal_reached")
                 if n in _ALWAYS_ON or n in self.options or any(exp.get(k) is not None for k in _EXPECT_KEYS.get(n, ()))]
        return names

    def evaluate(self, case: Case, output: Any) -> CheckResult:
        try:
            traj = trajectory_of(case)
        except TrajectoryError as exc:
            return CheckResult.error(str(exc))
        results: list[tuple[str, CheckResult]] = []
        for n in self.selected(case):
            ev = self._built[n]
            try:
                res = ev.check(case, traj, output if output is not None else traj.final_output)
            except (ValueError, TypeError, re.error) as exc:
                res = CheckResult.error(str(exc))
            results.append((n, res))
        errors = [f"{n}: {r.reason}" for n, r in results if r.status == "error"]
        criteria = [{"id": n, "status": r.status, "score": r.score, "passed": r.passed, "rationale": r.reason,
                     "critical": n in CRITICAL_CHECKS, "evidence": r.evidence} for n, r in results]
        summary = {"steps": len(traj.steps), "tools": traj.tools, "format": traj.source_format}
        if errors:
            res = CheckResult.error(f"{_where(case)}case '{case.id}': " + "; ".join(errors))
            res.details = {"criteria": criteria, "trajectory": summary}
            return res
        goal = next((r for n, r in results if n == "goal_reached"), None)
        outcome = goal.score if goal is not None and goal.status == "scored" else None
        process = [(n, r) for n, r in results if n != "goal_reached"]
        score, passed, rule = combine(outcome, process, cap=self.cap)
        failed = [f"{n}: {r.reason}" for n, r in results if r.passed is False]
        goal_stated = bool(expectations(case).get("goal")) or bool(self.options.get("goal_reached"))
        if goal is not None and goal.status == "unscored" and goal_stated and rule != "critical check failed":
            # The goal multiplies the score: a stated goal that cannot be checked leaves the score unknown.
            res = CheckResult(score=None, status="unscored",
                              reason=f"goal_reached: {goal.reason}" + (f"; {'; '.join(failed)}" if failed else ""))
            res.details = {"criteria": criteria, "trajectory": summary}
            return res
        reason = "; ".join(failed) if failed else "trajectory and goal checks passed"
        unscored = [f"{n}: {r.reason}" for n, r in results if r.status == "unscored"]
        if unscored:  # say what was not checked, so a pass is never silently partial
            reason += " (not checked: " + "; ".join(unscored) + ")"
        return CheckResult(score=round(score, 6), passed=passed, reason=reason,
                           evidence=[e for _, r in results for e in r.evidence],
                           details={"criteria": criteria, "trajectory": summary, "rule": rule,
                                    "outcome": outcome})


def check_row(case: Case, result: CheckResult, *, evaluator: str, category: str | None = None) -> ResultRow:
    """A result row from a check's result (:func:`~referee.evaluators._base.result_row`); the composite's
    per-check results (``details["criteria"]``) become ``criteria``."""
    return result_row(case, result, evaluator=evaluator, category=category or case.category)


# The red-team check and the suite form of the trajectory judge live in their own modules; importing them here
# registers them with the other built-ins.
from . import _redteam as _redteam_checks  # noqa: E402,F401
from . import _trajectory_judge  # noqa: E402,F401
