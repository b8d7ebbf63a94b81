"""``referee run SUITE.yaml``: run a suite's checks and judges on its cases, write results, apply its gates."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import click

from ..errors import UserError
from ..runner import totals_line
from . import invoked_argv
from ._common import (
    JudgeOptions,
    build_client,
    echo_err,
    echo_failures,
    echo_nothing_graded,
    echo_verdict,
    judge_options,
    store_options,
    suite_judge,
)


def with_panel_judges(suite: Any, jo: JudgeOptions, judges: tuple[str, ...]) -> tuple[Any, JudgeOptions]:
    """``--judge`` (repeated) makes the suite's LLM evaluators a panel (over the suite's ``judges:``). With a
    panel, the run's judge (its manifest entry and totals) is the panel's first; ``--base-url`` stays for the
    judges of the run's provider, and ``--input/output-price-per-mtok`` price every judge without prices."""
    from ..suites import panel_members, with_panel

    if judges:
        if not suite.llm_specs:
            raise UserError("--judge: the suite has no LLM evaluator for a panel to judge")
        suite = with_panel(suite, list(judges))
    members = panel_members(suite)
    if members and jo.input_price is not None and jo.output_price is not None:
        # Prices given on the command line price every judge that has none of its own.
        members = [m if m.input_price_per_mtok is not None else dataclasses.replace(
            m, input_price_per_mtok=jo.input_price, output_price_per_mtok=jo.output_price) for m in members]
        suite = with_panel(suite, members)
    first = members[0] if members else None
    if first is not None and isinstance(first.provider, str):
        same = first.provider == jo.provider
        jo = dataclasses.replace(
            jo, provider=first.provider, model=first.model, base_url=first.base_url or (jo.base_url if same else None),
            input_price=first.input_price_per_mtok if first.input_price_per_mtok is not None else (
                jo.input_price if same else None),
            output_price=first.output_price_per_mtok if first.output_price_per_mtok is not None else (
                jo.output_price if same else None))
    return suite, jo


def _check_aligned(suite: Any, jo: JudgeOptions, force: bool) -> None:
    """Each aligned judge against the judge this run really uses (flags and environment included)."""
    from ..alignment import JudgeRef

    for s in suite.specs:
        if s.aligned is not None:
            s.aligned.check_judge(JudgeRef(provider=jo.provider, model=jo.model), force=force)


def default_out(suite_path: str) -> Path:
    p = Path(suite_path)
    return p.with_name(p.stem + "_results.jsonl")


@click.command("run")
@click.argument("suite_file", metavar="SUITE", type=click.Path(dir_okay=False))
@click.option("--out", "-o", type=click.Path(), default=None,
              help="Results JSONL (default: <suite>_results.jsonl beside the suite); the manifest goes beside it. "
                   "With targets: a folder (default: <suite>_results/) with one results file per target.")
@click.option("--filter", "filters", multiple=True, metavar="PATTERN",
              help="Run a subset: id:GLOB, category:GLOB (or a bare GLOB for either) and/or evaluator:GLOB. "
                   "Repeatable.")
@click.option("--cases", "cases_file", type=click.Path(dir_okay=False), default=None,
              help="Run the suite on this cases file instead of the one it names (e.g. a new model's outputs).")
@click.option("--dry-run", is_flag=True,
              help="Show the number of judge calls and the estimated cost; call nothing, write nothing.")
@click.option("--no-judge", is_flag=True, help="Leave out the LLM evaluators (run the programmatic checks only).")
@click.option("--judge", "panel_judges", multiple=True, metavar="PROVIDER:MODEL",
              help="A panel: judge every LLM evaluator with each of these (repeat; replaces the suite's judges:) "
                   "and combine by the suite's panel: rule (default majority; docs/panels.md).")
@click.option("--no-gates", is_flag=True, help="Report only: do not apply the suite's gates (exit 0, or 1 when "
                                               "nothing was graded; with targets, also when a generation failed).")
@click.option("--targets", "target_ids", default=None, metavar="ID,ID",
              help="Run only these targets of the suite (comma-separated ids).")
@click.option("--markdown", "markdown_out", type=click.Path(dir_okay=False), default=None,
              help="Write the summary and gate verdicts as Markdown (a pull-request comment; with targets, the targets "
                   "table too); it is also appended to $GITHUB_STEP_SUMMARY when that is set.")
@click.option("--engine", default="local", show_default=True, envvar="REFEREE_ENGINE",
              metavar="local|ray[=ADDRESS]",
              help="Where cases are evaluated: this process, or sharded over a Ray cluster (extra 'ray'): a "
                   "local one, or ray=HOST:PORT / ray=auto for a running one. Env: REFEREE_ENGINE.")
@click.option("--rpm", type=click.FloatRange(min=0, min_open=True), default=None,
              help="At most this many judge calls started per minute per provider (with --engine ray: across "
                   "every worker, as --concurrency is; with targets: across all of them). A target's own calls "
                   "are paced by its rate_limit, not by --rpm.")
@click.option("--repeat", type=click.IntRange(1), default=1, show_default=True,
              help="Evaluate every case N times (LLM evaluators with distinct seeds, cache bypassed); referee score "
                   "then reports each case's spread and the flaky cases.")
@click.option("--retry-unscored", is_flag=True,
              help="Resuming into an earlier run's results: judge again the cases it left unscored (error rows "
                   "are always judged again), asking the judge afresh instead of reading its cached reply.")
@click.option("--verbose", "-v", is_flag=True, help="The full score report (paired tests, power, more cases).")
@click.option("--baseline", "baseline", default=None, metavar="FILE|RUN",
              help="Gate against this run instead of the suite's gates.baseline: a results file, or a run in the "
                   "history (main or any branch, last, a run id, @COMMIT).")
@click.option("--force-aligned", is_flag=True,
              help="Run an entry's aligned judge (aligned:) even with another judge model than it was fitted for "
                   "(a warning instead of a refusal).")
@judge_options(default_concurrency=8)
@store_options()
def command(suite_file: str, out: str | None, filters: tuple[str, ...], cases_file: str | None, dry_run: bool,
            panel_judges: tuple[str, ...], force_aligned: bool,
            no_judge: bool, no_gates: bool, target_ids: str | None, markdown_out: str | None, engine: str,
            rpm: float | None, repeat: int, retry_unscored: bool, verbose: bool, baseline: str | None,
            judge: JudgeOptions) -> int:
    """Run SUITE (YAML): every evaluator on every case, one row per case, then the suite's gates
    (exit 0 pass, 1 a gate failed or nothing was graded, 2 an invalid suite or usage error)."""
    from ..runner import retrying_unscored

    with retrying_unscored(retry_unscored):
        return _run(suite_file, out, filters, cases_file, dry_run, no_judge, no_gates, target_ids, markdown_out,
                    engine, rpm, judge, verbose=verbose, panel_judges=panel_judges, repeat=repeat,
                    baseline=baseline, force_aligned=force_aligned)


def _run(suite_file: str, out: str | None, filters: tuple[str, ...], cases_file: str | None, dry_run: bool,
         no_judge: bool, no_gates: bool, target_ids: str | None, markdown_out: str | None, engine: str,
         rpm: float | None, judge: JudgeOptions, *, verbose: bool, panel_judges: tuple[str, ...],
         repeat: int, baseline: str | None = None, force_aligned: bool = False) -> int:
    from ..run import run_suite
    from ..run.engines import get_engine
    from ..suites import evaluator_table, load_suite

    # A dry run imports no plugin module.
    suite = load_suite(suite_file, run_user_code=not dry_run, force_aligned=force_aligned)
    if cases_file:
        from ..cases import load_cases

        suite = dataclasses.replace(suite, cases=load_cases(cases_file).cases, cases_path=cases_file)
    if filters:
        suite = suite.filtered(list(filters))
    if baseline is not None:
        # A file given here is relative to the working folder; a run name is resolved when the gates run.
        given = baseline
        try:
            is_file = Path(baseline).is_file()
        except OSError:  # a name too long to be a file's: a run name, looked up (and refused) as one
            is_file = False
        if is_file:
            from ..store import file_note

            given = str(Path(baseline).resolve())
            if note := file_note(baseline):
                echo_err(note)
        suite = dataclasses.replace(suite, gates=suite.gates.model_copy(update={"baseline": given}))
    if no_judge and suite.llm_specs:
        kept = [s for s in suite.specs if not s.is_llm]
        if not kept:
            raise UserError(f"--no-judge leaves no evaluator in {suite_file}")
        suite = dataclasses.replace(suite, specs=kept)
    jo = suite_judge(judge, suite)
    _check_aligned(suite, jo, force_aligned)
    chosen = get_engine(engine, rpm=rpm)  # a bad --engine is a usage error before anything runs
    from ..runner import check_env

    check_env()  # and a bad number knob in the environment (a run of targets alone has no judge client)
    suite, jo = with_panel_judges(suite, jo, panel_judges)

    all_target_ids = [t.id for t in suite.targets]
    if target_ids is not None:
        from ..targets import select

        if not suite.targets:
            raise UserError(f"--targets: {suite_file} has no targets")
        suite = dataclasses.replace(suite, targets=select(suite.targets, [t.strip() for t in target_ids.split(",")
                                                                          if t.strip()]))
    if suite.targets and repeat > 1:
        raise UserError("--repeat: not with targets (repeat the judging of one target's outputs file instead)")
    if dry_run:
        from .. import estimate_run

        est = estimate_run(suite, provider=jo.provider, model=jo.model, base_url=jo.base_url,
                           max_tokens=jo.max_tokens, input_price=jo.input_price, output_price=jo.output_price,
                           batch=jo.batch, repeat=repeat)
        for line in est.lines:
            click.echo(line)
        return 0

    suite, client, judge_config = bind_judge(suite, jo)
    concurrency = jo.concurrency
    if suite.targets:
        if client is not None:  # the key is checked; each target's run builds (and closes) its own client
            await_close(client)
        return run_with_targets(suite, suite_file, out, jo, concurrency=concurrency, no_gates=no_gates,
                                judge_config=judge_config, markdown_out=markdown_out,
                                engine=chosen, all_target_ids=all_target_ids, verbose=verbose)
    out_path = Path(out) if out else default_out(suite_file)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    outcome = run_suite(suite, out_path, client=client, concurrency=concurrency,
                        command=invoked_argv(), judge_config=judge_config, system_model=jo.system_model,
                        engine=chosen, repeat=repeat)
    if outcome.resume_note:
        echo_err(outcome.resume_note)
    n_adv = sum(1 for c in suite.cases if c.metadata.get("adversarial") is True)
    if 0 < n_adv < len(suite.cases):
        echo_err(f"warning: {n_adv} of {len(suite.cases)} cases are adversarial (red-team); in one results file "
                 "they would blend into correctness numbers: run them as their own suite, or score with "
                 "--adversarial-categories")
    echo_failures(outcome.new_rows, limit=10)
    table = evaluator_table(outcome.rows)
    if table:
        click.echo(table)
    echo_err(totals_line(outcome.manifest.totals, out_path, judged=client is not None))
    if no_gates:  # report only; the verdict rule still holds: a run that graded nothing is not a pass
        echo_look(out_path)
        return echo_verdict(outcome.manifest.totals.scored, len(outcome.rows))
    code, verdicts, summary = gate_and_show(out_path, suite.gates, threshold=suite.scoring.threshold,
                                            base_dir=suite.base_dir, verbose=verbose)
    echo_nothing_graded(verdicts)
    if markdown_out or os.environ.get("GITHUB_STEP_SUMMARY"):
        from ..calibrate import panel_agreement
        from ..reports import image_refs, render_markdown
        from ..results import read_results

        # The panel's figures as `referee score` computes them, from the rows as written.
        panels = panel_agreement(read_results(out_path).rows) if outcome.manifest.extra.get("panel") else []
        write_markdown(render_markdown(summary, verdicts, code, images=image_refs(suite.cases), panels=panels),
                       markdown_out)
    echo_look(out_path)
    return code


def echo_look(written: Path) -> None:
    """Where to look next at what a run wrote: the viewer (a targets folder: every target side by side), or one
    HTML file."""
    view = f"look at it: referee view {written} --open   (cases, charts, labels in a browser)"
    if written.is_dir():
        echo_err(view)
    else:
        echo_err(f"{view}, or referee report {written} --html {written.with_suffix('.html')}")


def bind_judge(suite: Any, jo: JudgeOptions) -> tuple[Any, Any, Any]:
    """(suite with its LLM evaluators bound to a new judge client, the client, the judge config); the client is
    None when the suite has no LLM evaluator."""
    if not suite.llm_specs:
        return suite, None, None
    from ..evaluators import JudgeSettings

    try:
        client = build_client(jo)
    except UserError as exc:
        raise UserError(f"{exc} (the suite has LLM evaluators: {', '.join(s.label for s in suite.llm_specs)}; "
                        "--no-judge runs only the checks)") from exc
    settings = JudgeSettings(client=client, max_tokens=jo.max_tokens, temperature=jo.temperature,
                             seed=jo.seed, use_cache=not jo.no_cache)
    from ..run import bind_settings

    return bind_settings(suite, settings), client, jo.config(client.provider.model)


def await_close(client: Any) -> None:
    import asyncio

    asyncio.run(client.aclose())


def default_out_dir(suite_path: str) -> Path:
    p = Path(suite_path)
    return p.with_name(p.stem + "_results")


def run_with_targets(suite: Any, suite_file: str, out: str | None, jo: JudgeOptions, *, concurrency: int,
                     no_gates: bool, judge_config: Any = None, markdown_out: str | None = None,
                     engine: Any = None, all_target_ids: list[str] | None = None, verbose: bool = False) -> int:
    """``referee.run_targets`` with the command's options, printed: each target's totals, the comparison table,
    the gates of each gated target; the Markdown written."""
    from .. import run_targets

    out_dir = Path(out) if out else default_out_dir(suite_file)
    if out_dir.suffix in (".jsonl", ".json", ".ndjson") or out_dir.is_file():
        raise UserError(f"--out {out_dir}: with targets, --out is a folder (one results file per target goes in it)")
    run = run_targets(suite, out_dir, bind=lambda s: bind_judge(s, jo)[:2], concurrency=concurrency,
                      gates=not no_gates, use_cache=not jo.no_cache, batch=jo.batch, engine=engine,
                      command=invoked_argv(), judge_config=judge_config, all_target_ids=all_target_ids,
                      reporter=_TargetsPrinter(verbose))
    for line in run.nothing_graded:
        echo_err(f"error: {line}")
    write_markdown(run.markdown, markdown_out)
    echo_look(out_dir)
    return run.exit_code


class _TargetsPrinter:
    """Prints each step of ``run_targets`` as it completes: what was paid for shows even if a later step fails."""

    def __init__(self, verbose: bool = False) -> None:
        self.verbose = verbose

    def ran(self, outcomes: list[Any]) -> None:
        for o in outcomes:
            for note in o.notes:
                echo_err(note)
            echo_failures(o.outcome.new_rows, limit=10)
            t = o.outcome.manifest.totals
            g = o.generation
            gen_cost = f", generation cost ${g.cost_usd:.4f}" if g.cost_usd is not None else ""
            # A rerun is served from the response cache: said here, so "generated" is not read as paid again.
            gen_cache = f", {g.cached_calls} of {g.calls} calls from the cache" if g.calls else ""
            judged = (f" ({t.provider_calls} judge calls, {t.cached_calls} from cache)"
                      if t.provider_calls or t.cached_calls else "")
            echo_err(totals_line(t, o.results, judged=False, timed=False, lead=(
                f"{o.target.id}: generated {g.generated} ({g.reused} reused from {o.outputs.name}, {g.failed} "
                f"failed{gen_cost}{gen_cache}); {t.scored} scored, ")) + judged)

    def compared(self, comparison: Any, failed_generations: int) -> None:
        from ..targets import render_comparison

        click.echo(render_comparison(comparison))
        if failed_generations:
            echo_err(f"{failed_generations} generation(s) failed (error rows, reasons above): exit 1")

    def gating(self, target: str, baseline: str | None) -> None:
        echo_err(f"gates on target {target}" + (f" against baseline {baseline}:" if baseline else ":"))

    def gated(self, gate: Any) -> None:
        from ..reports import render_terminal

        render_terminal(gate.summary, gate.gates, gate.code, verbose=self.verbose)


def write_markdown(md: str, path: str | None) -> None:
    """``--markdown`` and, when set, ``$GITHUB_STEP_SUMMARY`` (appended: other steps write there too)."""
    from ..reports import write_markdown as write

    warning = write(md, path, step_summary=os.environ.get("GITHUB_STEP_SUMMARY"))
    if warning:
        echo_err(f"warning: {warning}")


def gate_and_show(results: Path, gates: Any, *, threshold: float, base_dir: Path,
                  verbose: bool = False) -> tuple[int, list[Any], Any]:
    """(exit code, gate results, summary) of ``results`` under ``gates``, printed as ``referee score`` does."""
    from ..reports import render_terminal
    from ..suites import gate_summary, summary_exit_code

    summary, verdicts = gate_summary(results, gates, threshold=threshold, base_dir=base_dir)
    code = summary_exit_code(summary, verdicts)
    render_terminal(summary, verdicts, code, verbose=verbose)
    return code, verdicts, summary
