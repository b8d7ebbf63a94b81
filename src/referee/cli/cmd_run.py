"""``referee run SUITE.yaml``: run a suite's checks and judges on its cases, write results, apply its gates."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click
from click.core import ParameterSource

from ..errors import UserError
from . import invoked_argv
from ._common import JudgeOptions, build_client, echo_err, judge_options

# JudgeOptions field -> (click parameter name, suite judge default name)
_FROM_SUITE = {
    "provider": ("provider", "provider"), "model": ("model", "model"), "base_url": ("base_url", "base_url"),
    "max_tokens": ("max_tokens", "max_tokens"), "temperature": ("temperature", "temperature"),
    "seed": ("seed", "seed"), "timeout": ("timeout", "timeout"), "max_retries": ("max_retries", "max_retries"),
    "concurrency": ("concurrency", "concurrency"), "input_price": ("input_price", "input_price_per_mtok"),
    "output_price": ("output_price", "output_price_per_mtok"),
}


def merge_judge_options(jo: JudgeOptions, defaults: object | None) -> JudgeOptions:
    """Flags and environment variables win; the suite's ``judge:`` settings replace built-in defaults only."""
    if defaults is None:
        return jo
    ctx = click.get_current_context(silent=True)
    changes = {}
    for attr, (param, key) in _FROM_SUITE.items():
        value = getattr(defaults, key, None)
        if value is None:
            continue
        source = ctx.get_parameter_source(param) if ctx is not None else None
        if source in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT):
            continue
        changes[attr] = value
    return dataclasses.replace(jo, **changes)


def default_out(suite_path: str) -> Path:
    p = Path(suite_path)
    return p.with_name(p.stem + "_results.jsonl")


@click.command("run")
@click.argument("suite_file", metavar="SUITE", type=click.Path(dir_okay=False))
@click.option("--out", "-o", type=click.Path(dir_okay=False), default=None,
              help="Results JSONL (default: <suite>_results.jsonl beside the suite); the manifest goes beside it.")
@click.option("--filter", "filters", multiple=True, metavar="PATTERN",
              help="Run a subset: id:GLOB, category:GLOB (or a bare GLOB for either) and/or evaluator:GLOB. "
                   "Repeatable.")
@click.option("--cases", "cases_file", type=click.Path(dir_okay=False), default=None,
              help="Run the suite on this cases file instead of the one it names (e.g. a new model's outputs).")
@click.option("--dry-run", is_flag=True,
              help="Show the number of judge calls and the estimated cost; call nothing, write nothing.")
@click.option("--no-judge", is_flag=True, help="Leave out the LLM evaluators (run the programmatic checks only).")
@click.option("--no-gates", is_flag=True, help="Report only: do not apply the suite's gates (exit 0).")
@judge_options(default_concurrency=8)
def command(suite_file: str, out: str | None, filters: tuple[str, ...], cases_file: str | None, dry_run: bool,
            no_judge: bool, no_gates: bool, judge: JudgeOptions) -> int:
    """Run SUITE (YAML): every evaluator on every case, one row per case, then the suite's gates
    (exit 0 pass, 1 a gate failed, 2 an invalid suite or usage error)."""
    from ..suites import load_suite
    from ..suites.gating import apply_gates, echo_failures, evaluator_table
    from ..suites.runner import bind_judge, run_suite
    from ..suites.runner import dry_run as estimate

    suite = load_suite(suite_file)
    if cases_file:
        from ..cases import load_cases

        suite = dataclasses.replace(suite, cases=load_cases(cases_file).cases, cases_path=cases_file)
    if filters:
        suite = suite.filtered(list(filters))
    if no_judge and suite.llm_specs:
        kept = [s for s in suite.specs if not s.is_llm]
        if not kept:
            raise UserError(f"--no-judge leaves no evaluator in {suite_file}")
        suite = dataclasses.replace(suite, specs=kept)
    jo = merge_judge_options(judge, suite.judge)

    if dry_run:
        est = estimate(suite, max_tokens=jo.max_tokens, input_price=jo.input_price, output_price=jo.output_price)
        click.echo(f"{suite.name}: {len(suite.cases)} case(s), {len(suite.specs)} evaluator(s): "
                   f"{', '.join(s.label for s in suite.specs)}")
        click.echo(est.describe(jo.input_price is not None and jo.output_price is not None))
        return 0

    client = None
    judge_config = None
    if suite.llm_specs:
        from ..evaluators.checks.judge import JudgeSettings

        try:
            client = build_client(jo)
        except UserError as exc:
            raise UserError(f"{exc} (the suite has LLM evaluators: {', '.join(s.label for s in suite.llm_specs)}; "
                            "run only the checks with --no-judge)") from exc
        settings = JudgeSettings(client=client, max_tokens=jo.max_tokens, temperature=jo.temperature,
                                 seed=jo.seed, use_cache=not jo.no_cache)
        suite = bind_judge(suite, settings)
        judge_config = jo.config(client.provider.model)
    # --concurrency (or its env var) wins, then the suite's top-level `concurrency:`, then `judge.concurrency`
    ctx = click.get_current_context(silent=True)
    from_flag = ctx is not None and ctx.get_parameter_source("concurrency") in (
        ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)
    concurrency = jo.concurrency if from_flag else (suite.concurrency or jo.concurrency)
    out_path = Path(out) if out else default_out(suite_file)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    outcome = run_suite(suite, out_path, client=client, concurrency=concurrency,
                        command=invoked_argv(), judge_config=judge_config)
    if outcome.resume_note:
        echo_err(outcome.resume_note)
    n_adv = sum(1 for c in suite.cases if c.metadata.get("adversarial") is True)
    if 0 < n_adv < len(suite.cases):
        echo_err(f"warning: {n_adv} of {len(suite.cases)} cases are adversarial (red-team); in one results file "
                 "they would blend into correctness numbers: run them as their own suite, or score with "
                 "--adversarial-categories")
    echo_failures(outcome.new_rows)
    table = evaluator_table(outcome.rows)
    if table:
        click.echo(table)
    t = outcome.manifest.totals
    cost = f", cost ${t.cost_usd:.4f}" if t.cost_usd is not None else ""
    calls = f" ({t.provider_calls} judge calls, {t.cached_calls} from cache{cost})" if client is not None else ""
    echo_err(f"{t.scored} scored, {t.unscored} unscored, {t.error} error -> {out_path}{calls}, {t.wall_s:.1f}s")
    if no_gates:
        return 0
    return apply_gates(out_path, suite.gates, threshold=suite.scoring.threshold, base_dir=suite.base_dir)
