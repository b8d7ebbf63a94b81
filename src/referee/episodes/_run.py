"""Episodes over many scenarios and tries: one result row per (case, try), through the one session runner
(rows written as they complete, resume after a crash, manifest totals)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..cases._case import Case
from ..errors import UserError
from ..evaluators._base import Evaluator, JudgeSettings
from ..results._check import CheckResult
from ..results._rows import result_row
from ..results._schema import ResultRow, Usage
from ..runner._session import execute_async, run_sync
from ._agents import Agent
from ._code import EnvironmentSources
from ._environment import Environment, load_environment
from ._episode import Episode, Limits, run_episode
from ._reliability import Reliability, reliability
from ._reward import SUCCESS, check_gold_actions, reward_of
from ._scenario import Scenario, is_scenario, scenario_of
from ._simulator import Simulator

EVALUATOR = "episode"


def _cases(cases: str | Path | Iterable[Case | dict[str, Any]]) -> tuple[list[Case], str, Path | None]:
    """The cases, their label and their folder (where a module the user named may be found; it is never put on
    the import path for good: a scenario set's own files must not shadow a module imported later)."""
    from ..cases import cases_from, load_cases

    if isinstance(cases, str | Path):
        return list(load_cases(cases).cases), str(cases), Path(cases).resolve().parent
    return list(cases_from(list(cases)).cases), "(in memory)", None


def build_environment(scenario: Scenario, case: Case, sources: EnvironmentSources | None = None) -> Environment:
    """The scenario's environment: a tau2 domain, or the class it names when ``sources`` admits it (the code
    the person running it named; by default none)."""
    spec = scenario.environment
    if spec.domain is not None:
        from ._tau2 import tau2_environment

        env: Environment = tau2_environment(spec.domain, spec.task or case.id)
        return env
    assert spec.cls is not None
    cls = (sources or EnvironmentSources()).resolve(spec.cls, case)
    return load_environment(cls, spec.options, f"{spec.cls} (case '{case.id}')")


def episode_case(case: Case, ep: Episode) -> Case:
    """The case as the trajectory checks and judges read it: the tool calls as ``trajectory``, the words as
    ``turns``, the agent's last message as ``output``."""
    data = {**case.data, "trajectory": ep.steps, "trajectory_format": "seed", "turns": ep.turns(),
            "output": ep.final_output}
    return Case(id=case.id, data=data, source=case.source, line=case.line)


@dataclass
class EpisodeRun:
    """The rows of a run of episodes (one per case and try) and where they were written."""

    rows: list[ResultRow]
    out: Path | None = None

    def reliability(self, k: int = 1) -> Reliability:
        return reliability(self.rows, k)


async def run_episodes_async(cases: str | Path | Iterable[Case | dict[str, Any]], agent: Agent,
                             simulator: Simulator, *, judge: JudgeSettings | None = None, repeat: int = 1,
                             limits: Limits | None = None, checks: Sequence[Evaluator] = (),
                             out: str | Path | None = None, concurrency: int = 4,
                             seed: int | None = None, close: bool = True,
                             command: Sequence[str] = (), environments: Sequence[str | type] | None = None,
                             trust_scenario_code: bool = False) -> EpisodeRun:
    """Run every scenario ``repeat`` times (each try its own seed, ``seed + try``, so tries are distinct
    samples that a rerun replays from the cache). ``checks`` (trajectory checks, any evaluator) are run on each
    episode and recorded beside the reward. Bad scenarios raise InputError before anything is paid for. The
    agent, the simulator and the judge's client are closed at the end (``close=False``: left open).

    ``environments``: the environment code the scenarios may name (module names, ``module:Class`` references or
    classes); a scenario file is data and names code only from this list, unless ``trust_scenario_code``. A
    module named here and not installed is also looked for beside the cases file."""
    if not isinstance(repeat, int) or repeat < 1:
        raise UserError(f"repeat={repeat!r}: must be a whole number >= 1")
    loaded, label, folder = _cases(cases)
    sources = EnvironmentSources.of(environments, trust=trust_scenario_code, folder=folder)
    plan: list[tuple[Case, Scenario, Environment]] = []
    for c in loaded:
        if not is_scenario(c):
            raise UserError(f"{c.where or label}: case '{c.id}' is not a simulated conversation (it needs 'user:' "
                            "and 'environment:')")
        sc = scenario_of(c)
        env = build_environment(sc, c, sources)
        check_gold_actions(sc, env, c)
        plan.append((c, sc, env))
    items = [(i, r) for i in range(len(plan)) for r in range(repeat)]

    async def one(item: tuple[int, int]) -> ResultRow:
        i, r = item
        case, sc, env = plan[i]
        try_seed = (seed or 0) + r if repeat > 1 else seed
        ep = await run_episode(sc, env.fresh(), agent, simulator, limits=limits, seed=try_seed)
        rw = await reward_of(sc, ep, env, case, judge)
        details: dict[str, Any] = {"episode": ep.to_record(), "reward": rw.to_record()}
        ec = episode_case(case, ep)
        if checks:
            details["checks"] = {}
            for chk in checks:
                res = await chk.evaluate_async(ec, ec.output)
                details["checks"][chk.name] = {"status": res.status, "score": res.score, "passed": res.passed,
                                               "reason": res.reason}
        usage = Usage(input_tokens=ep.agent.input_tokens + ep.user.input_tokens,
                      output_tokens=ep.agent.output_tokens + ep.user.output_tokens,
                      calls=ep.agent.calls + ep.user.calls, cached_calls=ep.agent.cached + ep.user.cached)
        costs = [x for x in (ep.agent.cost_usd, ep.user.cost_usd,
                             rw.judge.cost_usd if rw.judge is not None else None) if x is not None]
        if rw.judge is not None and rw.judge.usage is not None:
            usage = usage + rw.judge.usage
        scored = rw.status == "scored" and rw.reward is not None
        res = CheckResult(score=rw.reward if scored else None,
                          passed=(rw.reward is not None and rw.reward >= SUCCESS) if scored else None,
                          reason=rw.reason, status=rw.status if not scored else "scored",  # type: ignore[arg-type]
                          details=details, usage=usage, cost_usd=round(sum(costs), 8) if costs else None,
                          latency_ms=ep.latency_ms, flags=list(ep.flags),
                          judge=rw.judge.judge if rw.judge is not None else None,
                          error_message=ep.error if rw.status == "error" else None)
        return result_row(case, res, evaluator=EVALUATOR, repeat=r if repeat > 1 else None,
                          metadata={"termination": ep.termination})

    def on_error(item: tuple[int, int], exc: BaseException) -> ResultRow:
        i, r = item
        return result_row(plan[i][0], CheckResult(score=None, status="error",
                                                  error_message=f"{type(exc).__name__}: {exc}"),
                          evaluator=EVALUATOR, repeat=r if repeat > 1 else None)

    def key(item: tuple[int, int]) -> tuple[str, int | None, int | None]:
        return plan[item[0]][0].id, item[1] if repeat > 1 else None, None

    def manifest() -> Any:
        from ..results._manifest import RunManifest

        digest = None if label != "(in memory)" else hashlib.sha256(json.dumps(
            [c.data for c, _, _ in plan], sort_keys=True, default=str).encode()).hexdigest()
        return RunManifest.for_cases("episodes", label, [c.id for c, _, _ in plan], command=list(command),
                                     sha256=digest,
                                     extra={"agent": agent.identity(), "repeat": repeat,
                                            "simulator": {"provider": simulator.client.provider.name,
                                                          "model": simulator.client.provider.model}})

    outcome = await execute_async(out=Path(out) if out is not None else None, manifest=manifest, items=items,
                                  key=key, evaluate=one, on_error=on_error, client=None,
                                  concurrency=concurrency, label="episodes", show_progress=False,
                                  cleanup=_closer(agent, simulator, judge) if close else None)
    rows = list(outcome.rows)
    order = {(plan[i][0].id, r if repeat > 1 else None): n for n, (i, r) in enumerate(items)}
    rows.sort(key=lambda x: order.get((x.id, x.repeat), len(order)))
    return EpisodeRun(rows=rows, out=Path(out) if out is not None else None)


def _closer(agent: Agent, simulator: Simulator, judge: JudgeSettings | None) -> Any:
    async def close() -> None:
        await agent.aclose()
        await simulator.aclose()
        if judge is not None and judge.client is not None:
            await judge.client.aclose()

    return close


def run_episodes(*args: Any, **kwargs: Any) -> EpisodeRun:
    """:func:`run_episodes_async` from synchronous code."""
    return run_sync(run_episodes_async(*args, **kwargs))
