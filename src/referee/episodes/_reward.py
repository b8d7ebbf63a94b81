"""An episode's reward, as tau2-bench defines it: a product over the scenario's reward basis.

- ``state``: the final state's hash equals the state the gold actions produce on a fresh environment (and the
  ``expected.state`` when given); when not, the diff is recorded.
- ``actions``: every gold action appears among the agent's tool calls (its ``compare_args``, else all of the
  call's arguments, equal).
- ``outputs``: every required output appears in an agent message (case-insensitive, commas removed from the
  message: tau2's rule).
- ``assertions``: every natural-language assertion holds, judged over the transcript (no judge: unscored).

An episode that ended prematurely (any end but the user's or the agent's stop) has reward 0: scored, failed,
never unscored. A simulated user that named a gold action (``user_leak``), a simulator that failed or an
environment that cannot be hashed grade nothing: the row is unscored or an error, never a pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..cases._case import Case
from ..errors import InputError
from ..evaluators._base import JudgeSettings
from ..results._check import CheckResult
from ..results._combine import reward_product
from ._environment import Environment, EnvironmentFailed, state_diff, state_digest
from ._episode import NORMAL_ENDS, Episode
from ._scenario import GoldAction, Scenario

SUCCESS = 1.0 - 1e-6
"""A reward at or above this is a success (tau2's rule for a floating product)."""


@dataclass
class Reward:
    """An episode's reward: the product, each part of the basis, why, and the checks behind each part."""

    reward: float | None
    parts: dict[str, float | None] = field(default_factory=dict)
    basis: tuple[str, ...] = ()
    status: str = "scored"
    reason: str = ""
    checks: dict[str, Any] = field(default_factory=dict)
    judge: CheckResult | None = None

    def to_record(self) -> dict[str, Any]:
        return {"reward": self.reward, "basis": list(self.basis), "parts": self.parts, **self.checks}


def gold_state(scenario: Scenario, env: Environment) -> tuple[str, Any, list[str]]:
    """The gold actions replayed on a fresh environment: its state hash, its state and the actions that raised
    (recorded; tau2 logs them and goes on)."""
    gold = env.fresh()
    errors = []
    for i, a in enumerate(scenario.expected.actions or []):
        _, err = gold.call(a.tool, a.args)
        if err is not None:
            errors.append(f"gold action {i + 1} {a.tool}: {err}")
    return gold.state_hash(), gold.snapshot(), errors


def check_gold_actions(scenario: Scenario, env: Environment, case: Case) -> None:
    """Every gold action names a tool of the environment with arguments that fit its types, or InputError
    naming the case's file, line and field (``expected.actions[0].args.order_id``). Checked before anything is
    paid for: a gold action that cannot run leaves the gold state at the initial one, which an agent that does
    nothing would match."""
    for i, a in enumerate(scenario.expected.actions or []):
        problem = env.argument_problem(a.tool, a.args)
        if problem is None:  # an argument compared that the tool does not take would match every call of it
            known = env.argument_names(a.tool) or []
            problem = next(((f"compare_args[{j}]", f"the tool takes no argument '{n}' (arguments: "
                             f"{', '.join(known) or 'none'})") for j, n in enumerate(a.compare_args or [])
                            if n not in known), None)
        if problem is not None:
            where, why = problem
            raise InputError(f"case '{case.id}': gold action {i + 1} ({a.tool}): {why}", file=case.source or None,
                             line=case.line, field=f"expected.actions[{i}].{where}")


def action_matches(gold: GoldAction, call: dict[str, Any]) -> bool:
    if gold.tool != call.get("tool"):
        return False
    raw = call.get("args")
    args: dict[str, Any] = raw if isinstance(raw, dict) else {}
    keys = list(args) if gold.compare_args is None else gold.compare_args
    return {k: v for k, v in args.items() if k in keys} == {k: v for k, v in gold.args.items() if k in keys}


def communicated(info: str, episode: Episode) -> bool:
    return any(info.lower() in str(m["content"]).lower().replace(",", "")
               for m in episode.messages if m["role"] == "assistant" and isinstance(m.get("content"), str))


async def reward_of(scenario: Scenario, episode: Episode, env: Environment, case: Case,
                    judge: JudgeSettings | None = None) -> Reward:
    """The reward of ``episode`` under ``scenario`` (the module's rules); ``env`` gives the fresh state the gold
    actions are replayed on, ``judge`` the settings the assertions are judged with."""
    basis = scenario.expected.reward_basis()
    if episode.termination == "user_leak":
        return Reward(None, basis=basis, status="unscored", reason=episode.error or "user leak")
    if episode.termination in ("user_error", "environment_error"):
        return Reward(None, basis=basis, status="error", reason=episode.error or episode.termination)
    if episode.termination not in NORMAL_ENDS:
        return Reward(0.0, basis=basis, reason=f"ended prematurely ({episode.termination}): "
                      f"{episode.error or 'no normal end'}")
    exp = scenario.expected
    parts: dict[str, float | None] = {}
    checks: dict[str, Any] = {}
    why: list[str] = []
    if "state" in basis:
        ok = True
        if exp.actions is not None:
            try:
                gh, gs, gerr = gold_state(scenario, env)
            except EnvironmentFailed as exc:
                return Reward(None, basis=basis, status="error", reason=str(exc))
            match = gh == episode.final_hash
            checks["state"] = {"gold_hash": gh, "final_hash": episode.final_hash, "match": match}
            if gerr:
                checks["state"]["gold_errors"] = gerr
            if not match:
                ok = False
                checks["state"]["diff"] = state_diff(gs, episode.final_state)
        if exp.state is not None:
            want = state_digest(exp.state, "expected.state")
            got = state_digest(episode.final_state)
            checks["expected_state"] = {"match": want == got}
            if want != got:
                ok = False
                checks["expected_state"]["diff"] = state_diff(exp.state, episode.final_state)
        parts["state"] = 1.0 if ok else 0.0
        if not ok:
            why.append("the final state differs from the gold state")
    if "actions" in basis:
        found = [any(action_matches(a, s) for s in episode.steps) for a in exp.actions or []]
        checks["actions"] = [{"tool": a.tool, "args": a.args, "matched": f}
                             for a, f in zip(exp.actions or [], found, strict=True)]
        parts["actions"] = 1.0 if all(found) else 0.0
        if not all(found):
            why.append("gold actions not called: " + ", ".join(
                a.tool for a, f in zip(exp.actions or [], found, strict=True) if not f))
    if "outputs" in basis:
        said = [communicated(o, episode) for o in exp.outputs]
        checks["outputs"] = [{"output": o, "met": s} for o, s in zip(exp.outputs, said, strict=True)]
        parts["outputs"] = 1.0 if all(said) else 0.0
        if not all(said):
            why.append("not said to the user: " + ", ".join(
                repr(o) for o, s in zip(exp.outputs, said, strict=True) if not s))
    judged: CheckResult | None = None
    if "assertions" in basis:
        judged = await judge_assertions(scenario, episode, case, judge)
        if judged.status != "scored":
            return Reward(None, parts=parts, basis=basis, status=judged.status,
                          reason=f"assertions not judged: {judged.problem}", checks=checks, judge=judged)
        if len(judged.criteria) != len(exp.assertions):  # an assertion nobody graded never holds by default
            return Reward(None, parts=parts, basis=basis, status="unscored", checks=checks, judge=judged,
                          reason=f"the judge graded {len(judged.criteria)} of {len(exp.assertions)} assertions")
        met = [c.passed if c.passed is not None else (c.score or 0.0) >= 0.5 for c in judged.criteria]
        checks["assertions"] = [{"assertion": a, "met": m, "rationale": c.rationale}
                                for a, m, c in zip(exp.assertions, met, judged.criteria, strict=True)]
        parts["assertions"] = 1.0 if met and all(met) else 0.0
        if parts["assertions"] == 0.0:
            why.append("an assertion does not hold")
    return Reward(reward_product([parts[b] or 0.0 for b in basis]), parts=parts, basis=basis, checks=checks, judge=judged,
                  reason="; ".join(why) or f"every part of the reward basis holds ({', '.join(basis)})")


async def judge_assertions(scenario: Scenario, episode: Episode, case: Case,
                           judge: JudgeSettings | None) -> CheckResult:
    """The assertions as the conversation judge's criteria, over the whole transcript (tool calls included)."""
    from ..evaluators._conversation import ConversationJudge

    if judge is None or judge.client is None:
        return CheckResult(score=None, status="unscored", reason="no judge configured for the assertions")
    criteria = {f"assertion_{i + 1}": a for i, a in enumerate(scenario.expected.assertions)}
    j = ConversationJudge(mode="conversation", criteria=criteria).bound(judge)
    turns = []
    for m in episode.messages:
        if m["role"] == "tool":
            turns.append({"role": "tool", "content": m["content"]})
        elif m.get("tool_calls"):
            turns.append({"role": "assistant", "content": {"text": m.get("content"), "tool_calls": m["tool_calls"]}})
        else:
            turns.append({"role": m["role"], "content": m["content"]})
    view = Case(id=case.id, data={"turns": turns}, source=case.source, line=case.line)
    return await j.evaluate_async(view, None)
