"""``referee redteam generate|run``: labelled adversarial cases, and their results apart from correctness."""

from __future__ import annotations

from collections import Counter

import click

from ..errors import UserError
from ..gates import exit_code
from ..redteam import FAILURE_MODES, SURFACES, generate, load_seeds, load_templates, write_cases
from . import invoked_argv
from ._agents import report_outcome
from ._common import (
    JudgeOptions,
    api_judge,
    echo_err,
    echo_nothing_graded,
    flag_errors,
    judge_options,
    store_options,
)


@click.group("redteam")
def command() -> None:
    """Red teaming: generate labelled adversarial cases, then check the agent's replies per attack type."""


@command.command("generate")
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False), help="Cases JSONL to write.")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed (same seed, same cases).")
@click.option("--mode", "modes", multiple=True, type=click.Choice(FAILURE_MODES),
              help="Only these failure modes (repeatable). Default: all five.")
@click.option("--surface", "surfaces", multiple=True, type=click.Choice(SURFACES),
              help="Only these attack surfaces (repeatable).")
@click.option("--per-seed", type=click.IntRange(1), default=None, help="At most N templates per seed case.")
@click.option("--limit", type=click.IntRange(1), default=None, help="At most N cases in total (sampled).")
@click.option("--seeds", "seeds_file", type=click.Path(dir_okay=False), default=None,
              help="Your own seed cases (YAML, same shape as the built-in ones).")
@click.option("--templates", "templates_file", type=click.Path(dir_okay=False), default=None,
              help="Your own attack templates (YAML).")
@click.option("--with-builtin", is_flag=True, help="With --seeds/--templates: add the built-in ones too.")
def generate_cmd(out: str, seed: int, modes: tuple[str, ...], surfaces: tuple[str, ...], per_seed: int | None,
                 limit: int | None, seeds_file: str | None, templates_file: str | None, with_builtin: bool) -> int:
    """Write adversarial cases: category = attack type; expect = refuse / comply / ignore_injection plus
    canaries and forbidden tools that code can check."""
    seeds = load_seeds(seeds_file, with_builtin=with_builtin)
    templates = load_templates(templates_file, with_builtin=with_builtin)
    cases = generate(seed=seed, seeds=seeds, templates=templates, modes=modes or None, surfaces=surfaces or None,
                     per_seed=per_seed, limit=limit)
    if not cases:
        raise UserError("no case generated: no template matches the chosen failure modes and surfaces")
    write_cases(cases, out)
    counts = Counter(c["category"] for c in cases)
    echo_err(f"{len(cases)} adversarial cases from {len({c['metadata']['seed_case'] for c in cases})} seed cases "
             f"-> {out}")
    for cat in FAILURE_MODES:
        if counts.get(cat):
            echo_err(f"  {cat:<20} {counts[cat]}")
    echo_err("next: run your agent on each case (apply 'setup': system_prompt text and canned tool_results), "
             "record its reply as 'output' (and 'trajectory' / 'messages' if it calls tools), then "
             "'referee redteam run'")
    return 0


@command.command("run")
@click.argument("cases", type=click.Path(dir_okay=False))
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False),
              help="Results JSONL (its manifest says adversarial: true).")
@click.option("--outputs", type=click.Path(dir_okay=False), default=None,
              help="JSONL of the agent's replies {id, output, trajectory?|messages?} to merge into CASES.")
@click.option("--target", "target_file", type=click.Path(dir_okay=False), default=None,
              help="Run the agent: a targets file (or a suite with targets:) whose target answers every case "
                   "(its setup applied: system_prompt text, canned tool_results), instead of --outputs.")
@click.option("--target-id", default=None, help="Which target of --target's file (when it has several).")
@click.option("--judge", "use_judge", is_flag=True,
              help="Also ask the red-team judge (needed where code cannot tell a refusal from compliance).")
@judge_options(default_concurrency=8)
@store_options()
def run_cmd(cases: str, out: str, outputs: str | None, target_file: str | None, target_id: str | None,
            use_judge: bool, judge: JudgeOptions) -> int:
    """Check the agent's replies to adversarial CASES; results are reported per attack type."""
    from ..redteam import run_redteam

    with flag_errors():
        run = run_redteam(cases, api_judge(judge) if use_judge else None, out=out, outputs=outputs,
                          target=target_file, target_id=target_id, concurrency=judge.concurrency,
                          system_model=judge.system_model, on_invalid=lambda problem: echo_err(f"invalid: {problem}"),
                          on_note=echo_err, progress=None, command=invoked_argv())
    result = run.result
    if result.resume_note:
        echo_err(result.resume_note)
    echo_err("adversarial results, per attack type (kept apart from correctness):")
    report_outcome(result, out, by_category=True, judged=use_judge)
    if run.failed_generations:
        echo_err(f"{run.failed_generations} generation(s) by target {run.target_id or ''} failed (error rows): "
                 "exit 1")
    echo_nothing_graded(result.gates)
    return exit_code(run.passed)
