"""``referee simulate CASES --out R``: simulated conversations: a simulated user and the agent under test, the
agent's tools changing an environment, each episode rewarded by what it changed; ``--repeat k`` tries each case
k times and reports pass^k.

One call of :func:`referee.episodes.run_episodes`: the flags in, a line per case and the reliability figures out.
Compare two agent versions with ``referee score NEW --baseline OLD`` (paired, with the gates)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import click

from . import invoked_argv, keep_until_exit
from ._common import (
    JudgeOptions,
    api_judge,
    echo_err,
    flag_errors,
    judge_configured,
    judge_options,
    store_options,
)


@click.command("simulate")
@click.argument("cases", type=click.Path(dir_okay=False), required=False)
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False), help="Results JSONL (one row per try).")
@click.option("--tau2", "tau2_domain", type=click.Choice(["mock", "retail", "airline"]), default=None,
              help="Play a tau2-bench domain's tasks instead of CASES (the extra 'tau2').")
@click.option("--tasks", default=None, help="With --tau2: comma-separated task ids (default: every task).")
@click.option("--environment", "environments", multiple=True, metavar="MODULE[:CLASS]",
              help="Environment code the scenarios may name (repeatable): a module (any of its classes) or "
                   "module:Class. A scenario file is data; it runs only code named here. A module that is not "
                   "installed is looked for beside CASES.")
@click.option("--trust-scenario-code", is_flag=True,
              help="Import whatever environment.class the scenarios name (only for a scenario set you trust: "
                   "its classes run with your rights).")
@click.option("--agent", "agent_ref", default=None,
              help="The agent as module:function (Python) or an http(s):// URL; else --agent-model.")
@click.option("--agent-provider", default="openai", show_default=True, help="The agent model's provider.")
@click.option("--agent-model", default=None, help="The agent model (with the environment's tools).")
@click.option("--agent-base-url", default=None, help="The agent model's endpoint (OpenAI-compatible servers).")
@click.option("--agent-system", type=click.Path(dir_okay=False, exists=True), default=None,
              help="A file with the agent's system prompt (with --tau2: default the domain's policy).")
@click.option("--user-provider", default="openai", show_default=True, help="The simulated user's provider.")
@click.option("--user-model", default=None, help="The simulated user's model.")
@click.option("--user-base-url", default=None, help="The simulated user's endpoint.")
@click.option("--repeat", type=click.IntRange(1, 1000), default=1, show_default=True,
              help="Tries per case (each its own seed); pass^k is printed for k = 1 .. 8 and k = repeat.")
@click.option("--max-steps", type=click.IntRange(1, 1000), default=20, show_default=True,
              help="Model calls in one agent turn before it is cut (agent_max_steps).")
@click.option("--repeat-limit", type=click.IntRange(2, 1000), default=5, show_default=True,
              help="The same tool call this many times in a row ends the episode (agent_loop).")
@click.option("--tool-timeout", type=click.FloatRange(min=0, min_open=True, max=86400), default=None,
              help="Seconds one tool call may take; past it the episode is an environment_error and the others go "
                   "on (each call then runs in a worker thread; default: no bound, tools run in the episode's "
                   "thread).")
@judge_options(default_concurrency=4)
@store_options()
def command(cases: str | None, out: str, tau2_domain: str | None, tasks: str | None, environments: tuple[str, ...],
            trust_scenario_code: bool, agent_ref: str | None,
            agent_provider: str, agent_model: str | None, agent_base_url: str | None, agent_system: str | None,
            user_provider: str, user_model: str | None, user_base_url: str | None, repeat: int, max_steps: int,
            repeat_limit: int, tool_timeout: float | None, judge: JudgeOptions) -> int:
    """Play every scenario of CASES (user:, environment:, expected:) with a simulated user; the judge flags
    (--provider, --model) judge the scenarios' natural-language assertions."""
    from ..episodes import (
        Limits,
        agent_from,
        model_agent,
        read_text,
        run_episodes,
        simulator,
        tau2_cases,
        tau2_policy,
    )
    from ..errors import UserError

    if (cases is None) == (tau2_domain is None):
        raise UserError("give CASES or --tau2 DOMAIN (one of them)")
    with flag_errors():
        scenarios = cases if tau2_domain is None else tau2_cases(
            tau2_domain, tasks.split(",") if tasks else None)
        cache = not judge.no_cache
        if agent_ref is not None:
            agent = agent_from(agent_ref, Path(cases).parent if cases else None)
        else:
            system = read_text(agent_system)
            if system is None and tau2_domain is not None:
                system = tau2_policy(tau2_domain)
            agent = model_agent(agent_provider, agent_model, base_url=agent_base_url, system=system,
                                timeout=judge.timeout, max_retries=judge.max_retries, cache=cache)
        sim = simulator(user_provider, user_model, base_url=user_base_url, timeout=judge.timeout,
                        max_retries=judge.max_retries, cache=cache)
        settings = None
        if judge_configured(judge.provider):
            j = api_judge(judge)
            settings = j.settings(j.client())
        run = run_episodes(scenarios, agent, sim, judge=settings, repeat=repeat,
                           limits=Limits(max_steps=max_steps, repeat_limit=repeat_limit, tool_timeout=tool_timeout), out=out,
                           concurrency=judge.concurrency, seed=judge.seed, command=invoked_argv(),
                           environments=list(environments), trust_scenario_code=trust_scenario_code)
    keep_until_exit(run)
    by_case: dict[str, list[str]] = {}
    for r in run.rows:
        end = str(r.metadata.get("termination", r.status))
        mark = "pass" if r.passed else ("fail" if r.status == "scored" else r.status)
        by_case.setdefault(r.id, []).append(f"{mark}({end})")
    for cid, tries in by_case.items():
        click.echo(f"{cid}: {' '.join(tries)}")
    ends = Counter(str(r.metadata.get("termination", r.status)) for r in run.rows)
    click.echo("ends: " + ", ".join(f"{k} {v}" for k, v in sorted(ends.items())))
    for k in sorted({*range(1, min(repeat, 8) + 1), repeat}):
        rel = run.reliability(k)
        click.echo(f"pass^{k} {rel.pass_hat_k}   pass@{k} {rel.pass_at_k}   ({rel.cases} cases)")
    rel = run.reliability(1)
    if rel.flaky:
        click.echo(f"flaky ({len(rel.flaky)}): {', '.join(rel.flaky[:20])}")
    scored = sum(r.status == "scored" for r in run.rows)
    if not scored:
        echo_err("nothing graded: no episode has a reward (see the rows' errors)")
        return 1
    click.echo(f"{scored}/{len(run.rows)} tries graded; rows in {out}")
    return 0
