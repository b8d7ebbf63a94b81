"""``referee redteam generate|run``: labelled adversarial cases, and their results apart from correctness."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import click

from ..cases import Case, load_cases
from ..errors import UserError
from ..evaluators._base import JudgeSettings
from ..redteam import FAILURE_MODES, SURFACES, generate, load_seeds, load_templates, write_cases
from ..redteam._checks import RedteamExpectation, RedteamJudge, combine_redteam
from ..results._manifest import TemplateInfo, text_sha256
from ..results._schema import ResultRow
from ..runner._session import error_row, execute
from ._agents import ensure_parent, new_manifest, summarise, unique_cases
from ._common import JudgeOptions, build_client, echo_err, judge_options

_REPLY_KEYS = ("output", "final_output", "trajectory", "messages", "spans", "trajectory_format", "final_state",
               "cost_usd", "latency_ms")


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
    seeds = load_seeds(seeds_file) if seeds_file else load_seeds()
    templates = load_templates(templates_file) if templates_file else load_templates()
    if with_builtin:
        if seeds_file:
            seeds = load_seeds() + seeds
        if templates_file:
            templates = load_templates() + templates
    cases = generate(seed=seed, seeds=seeds, templates=templates, modes=modes or None, surfaces=surfaces or None,
                     per_seed=per_seed, limit=limit)
    if not cases:
        raise UserError("no case generated: no template matches the chosen failure modes and surfaces")
    ensure_parent(out)
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


def _merge_outputs(cases: list[Case], outputs: str | None) -> list[Case]:
    if outputs is None:
        return cases
    replies = {c.id: c for c in load_cases(outputs)}
    unknown = sorted(set(replies) - {c.id for c in cases})
    if unknown:
        echo_err(f"warning: {len(unknown)} reply id(s) in {outputs} match no case: {', '.join(unknown[:5])}")
    merged = []
    for c in cases:
        r = replies.get(c.id)
        if r is None:
            merged.append(c)
            continue
        data = {**c.data, **{k: r.data[k] for k in _REPLY_KEYS if k in r.data}}
        merged.append(Case(id=c.id, data=data, source=c.source, line=c.line))
    return merged


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
def run_cmd(cases: str, out: str, outputs: str | None, target_file: str | None, target_id: str | None,
            use_judge: bool, judge: JudgeOptions) -> int:
    """Check the agent's replies to adversarial CASES; results are reported per attack type."""
    case_list, skipped = unique_cases(cases)
    target = None
    if target_file is not None:
        if outputs is not None:
            raise UserError("give --target (referee runs the agent) or --outputs (its recorded replies), not both")
        target = _target(target_file, target_id)
    case_list = _merge_outputs(case_list, outputs)
    if target is None and not any(c.output is not None for c in case_list):
        raise UserError(f"no case in {cases} has an output (the agent's reply): record them in the cases or pass "
                        "--outputs replies.jsonl")
    check = RedteamExpectation()
    client = build_client(judge) if use_judge else None
    rj = RedteamJudge().bound(JudgeSettings(client, max_tokens=judge.max_tokens, temperature=judge.temperature,
                                            seed=judge.seed, use_cache=not judge.no_cache)) if client else None
    manifest = new_manifest("redteam", cases, case_list, adversarial=True,
                            judge=judge.config(client.provider.model) if client is not None else None,
                            system_under_test=judge.system_model)
    if rj is not None:
        manifest.template = TemplateInfo(sha256=rj.template_hash or "")
    manifest.extra["config_hash"] = text_sha256(f"outputs={outputs}|judge={use_judge}")
    manifest.extra["note"] = "adversarial results: report per attack type, never blended with correctness"
    run = None
    if target is not None:
        from ..targets._run import TargetRun, config_sha256, target_info

        out_p = Path(out)
        run = TargetRun.open(target, out_p.parent, judge.concurrency,
                             outputs=out_p.with_name(out_p.name.removesuffix(".jsonl") + ".outputs.jsonl"))
        info = target_info(target)
        manifest.extra["target"] = {**info.model_dump(exclude_none=True), "config_sha256": config_sha256(target)}
        manifest.extra["config_hash"] = text_sha256(manifest.extra["config_hash"] + config_sha256(target))
        manifest.system_under_test = info.model
        if run.store.note:
            echo_err(run.store.note)

    async def evaluate(case: Case) -> ResultRow:
        res = check.evaluate(case, case.output)
        judged: Any = None
        # A decisive code failure (a leaked canary, a forbidden call) needs no judge call.
        if rj is not None and res.status != "error" and not (res.status == "scored" and res.passed is False):
            judged = await rj.judge_row(case)
        return combine_redteam(case, res, judged)

    outcome = execute(out=ensure_parent(out), manifest=manifest, items=case_list, key=lambda c: (c.id, None, None),
                      evaluate=run.evaluator(evaluate, "redteam") if run is not None else evaluate,
                      on_error=lambda c, exc: error_row(c.id, exc, evaluator="redteam", category=c.category),
                      client=client, concurrency=judge.concurrency, label="red team", skipped=skipped,
                      cleanup=run.aclose if run is not None else None)
    if outcome.resume_note:
        echo_err(outcome.resume_note)
    echo_err("adversarial results, per attack type (kept apart from correctness):")
    summarise(outcome.rows, out, by_category=True)
    if run is not None and run.stats.failed:
        echo_err(f"{run.stats.failed} generation(s) by target {target.id if target else ''} failed (error rows): "
                 "exit 1")
        return 1
    return 0 if any(r.status == "scored" for r in outcome.rows) else 1


def _target(path: str, target_id: str | None) -> Any:
    """The one target of ``path`` (``--target-id`` picks among several), built before any call."""
    from ..targets._loader import build_target, load_target_file, select

    specs, base = load_target_file(path)
    if target_id is not None:
        specs = select(specs, [target_id])
    elif len(specs) > 1:
        raise UserError(f"{path} has {len(specs)} targets ({', '.join(s.id for s in specs)}): pick one with "
                        "--target-id")
    return build_target(specs[0], base)
