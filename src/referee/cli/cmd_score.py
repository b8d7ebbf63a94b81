"""``referee score RESULTS [--baseline B] [gates]``: aggregate results files and gate CI on them.

A drop-in for agent-eval's ``score_eval.py``: the same flags, defaults and exit codes (0 pass,
1 a gate failed, 2 a usage or input error), plus referee's statistics, verdicts and report formats.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from ..aggregate import (
    PASS_RULES,
    ScoreOptions,
    all_cases,
    load_table,
    load_tables,
    normalise_category,
    printable,
    summarize,
)
from ..errors import UserError
from ..gates import GateConfig, evaluate_gates, exit_code, graded_counts, verdict, with_graded_check
from ..stats import DEFAULT_N_BOOT, DEFAULT_SEED
from ._common import echo_err, echo_nothing_graded

_MAX_WARNINGS = 20

# Flags that only mean something against a baseline: given without one, the seed exits 2.
_BASELINE_ONLY = {
    "fail_on_regression": "--fail-on-regression",
    "fail_on_cost_regression": "--fail-on-cost-regression",
    "fail_on_latency_regression": "--fail-on-latency-regression",
    "cost_tolerance": "--cost-regression-tolerance",
    "latency_tolerance": "--latency-regression-tolerance",
    "fail_on_significant_regression": "--fail-on-significant-regression",
    "fail_on_inconclusive": "--fail-on-inconclusive",
    "allow_case_set_change": "--allow-case-set-change",
    "regression_min_drop": "--regression-min-drop",
}

_RATE = click.FloatRange(0.0, 1.0)


@click.command("score")
@click.argument("results", metavar="RESULTS|RUN", type=click.Path(dir_okay=False))
@click.option("--baseline", "-b", default=None, metavar="FILE|RUN",
              help="The reference run to compare with: its results file, or a run in the history: main (or any "
                   "branch), last, a run id, @COMMIT (an existing file wins).")
@click.option("--threshold", type=_RATE, default=0.7, show_default=True, help="A case passes when score >= this.")
@click.option("--pass-rule", type=click.Choice(PASS_RULES), default="threshold", show_default=True,
              help="threshold: a row passes when score >= --threshold (score_eval.py's rule). evaluator: by the row's "
                   "own 'passed' verdict (gold, suites, rubric --fail-below, ...), by the threshold where it "
                   "has none. Applies to every rate, test, gate and report.")
@click.option("--json-out", type=click.Path(dir_okay=False), default=None, help="Write the JSON summary here.")
@click.option("--fail-under", type=_RATE, default=None, help="Exit 1 when the pass rate is under this.")
@click.option("--fail-on-regression", is_flag=True,
              help="Exit 1 when a case that passed in the baseline fails now (needs --baseline).")
@click.option("--regression-min-drop", type=_RATE, default=None,
              help="A case still passing whose score fell by more than X since the baseline is a regression "
                   "too (kind magnitude_drop; --fail-on-regression fails on it). Needs --baseline.")
@click.option("--fail-on-cost-regression", is_flag=True,
              help="Exit 1 when mean cost > baseline mean cost x (1 + tolerance).")
@click.option("--fail-on-latency-regression", is_flag=True,
              help="Exit 1 when mean latency > baseline mean latency x (1 + tolerance).")
@click.option("--cost-regression-tolerance", "cost_tolerance", type=click.FloatRange(min=0), default=0.2,
              show_default=True)
@click.option("--latency-regression-tolerance", "latency_tolerance", type=click.FloatRange(min=0), default=0.2,
              show_default=True)
@click.option("--fail-if-mean-cost-above", type=click.FloatRange(min=0), default=None,
              help="Absolute ceiling on mean cost per row (USD).")
@click.option("--fail-if-mean-latency-above", type=click.FloatRange(min=0), default=None,
              help="Absolute ceiling on mean latency per row (ms).")
@click.option("--cost-latency-rows", "cost_rows", type=click.Choice(["scored", "all"]), default="scored",
              show_default=True,
              help="Rows whose cost_usd and latency_ms enter the means and their gates: scored (score_eval.py's "
                   "meaning: its runners write no row for a case they could not grade) or all (unscored and "
                   "error rows too: retries of a failed call then move the means).")
@click.option("--ci", "ci_flag", is_flag=True,
              help="Confidence intervals: referee always computes and shows them; with --json-out this adds the "
                   "score_eval.py's confidence, per_category_confidence and multiple_comparisons_correction keys.")
@click.option("--fail-on-significant-regression", is_flag=True,
              help="Exit 1 when any drop vs the baseline is significant after Benjamini-Hochberg.")
@click.option("--fail-on-inconclusive", is_flag=True,
              help="Exit 1 unless the verdict is NO REGRESSION or IMPROVED (a drop within noise fails too).")
@click.option("--n-boot", type=click.IntRange(10), default=DEFAULT_N_BOOT, show_default=True,
              help="Bootstrap resamples.")
@click.option("--boot-seed", type=click.IntRange(0), default=DEFAULT_SEED, show_default=True,
              help="Bootstrap seed.")
@click.option("--fail-if-unscored-above", type=_RATE, default=None,
              help="Exit 1 when the share of unscored + error rows is above RATE.")
@click.option("--min-case-pass-rate", type=_RATE, default=None,
              help="Exit 1 when a case passes in fewer than this share of its repeats.")
@click.option("--target-drop", type=click.FloatRange(0, 1, min_open=True), default=0.05, show_default=True,
              help="Pass-rate drop to plan for: prints how many cases would detect it.")
@click.option("--allow-case-set-change", is_flag=True,
              help="Compare the shared cases even when the two files hold different case ids.")
@click.option("--adversarial-categories", default=None,
              help="Comma-separated categories (attack types) reported apart from correctness.")
@click.option("--junit-xml", type=click.Path(dir_okay=False), default=None,
              help="Write JUnit XML (one testcase per case).")
@click.option("--markdown", "markdown_out", type=click.Path(dir_okay=False), default=None,
              help="Write a Markdown summary (PR comment).")
@click.option("--cases", "cases_path", type=click.Path(dir_okay=False), default=None,
              help="The cases file, so the Markdown summary names the images of the cases it lists (default: "
                   "the cases file the run's manifest names, when unchanged).")
@click.option("--no-step-summary", is_flag=True,
              help="Do not append the Markdown summary to $GITHUB_STEP_SUMMARY when it is set.")
@click.option("--strict", is_flag=True, help="Malformed or invalid lines are errors (exit 2), not warnings.")
@click.option("--verbose", "-v", is_flag=True,
              help="The full report: the paired tests' table and up to 10 cases per list (3 by default).")
@click.pass_context
def command(ctx: click.Context, results: str, baseline: str | None, threshold: float, pass_rule: str,
            json_out: str | None,
            fail_under: float | None, fail_on_regression: bool, regression_min_drop: float | None,
            fail_on_cost_regression: bool,
            fail_on_latency_regression: bool, cost_tolerance: float, latency_tolerance: float,
            fail_if_mean_cost_above: float | None, fail_if_mean_latency_above: float | None, cost_rows: str,
            ci_flag: bool, cases_path: str | None,
            fail_on_significant_regression: bool, fail_on_inconclusive: bool, n_boot: int, boot_seed: int,
            fail_if_unscored_above: float | None, min_case_pass_rate: float | None, target_drop: float,
            allow_case_set_change: bool, adversarial_categories: str | None, junit_xml: str | None,
            markdown_out: str | None, no_step_summary: bool, strict: bool, verbose: bool) -> int:
    """Pass rates and means with confidence intervals, per category, the failures behind them, regressions
    against --baseline, and CI gates (exit 0 pass, 1 gate failed or, with a gate, nothing scored, 2 usage or
    input error)."""
    if baseline is None:
        for name, flag in _BASELINE_ONLY.items():
            if ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE:
                raise UserError(f"{flag} needs --baseline")
    given = results
    results = _stored_results(ctx, results)
    adv = frozenset(normalise_category(c) for c in (adversarial_categories or "").split(",") if c.strip())
    opts = ScoreOptions(threshold=threshold, n_boot=n_boot, boot_seed=boot_seed, adversarial_categories=adv,
                        target_drop=target_drop, allow_case_set_change=allow_case_set_change, pass_rule=pass_rule,
                        cost_rows=cost_rows, regression_min_drop=regression_min_drop)
    if baseline:
        b = resolve_named_baseline(baseline, results)
        if b.path is not None:
            table, base_table = load_tables([results, str(b.path)], strict=strict)
        else:
            table, base_table = load_table(results, strict=strict), b.table()
    else:
        table, base_table = load_table(results, strict=strict), None
    summary = summarize(table, opts, baseline=base_table, min_case_pass_rate=min_case_pass_rate)
    if results != given:
        summary.path = f"run {Path(results).parent.name}"

    for w in summary.warnings[:_MAX_WARNINGS]:
        echo_err(f"warning: {printable(w)}")
    if len(summary.warnings) > _MAX_WARNINGS:
        echo_err(f"warning: ... and {len(summary.warnings) - _MAX_WARNINGS} more warnings")

    gates = evaluate_gates(summary, GateConfig(
        fail_under=fail_under, fail_on_regression=fail_on_regression,
        fail_on_cost_regression=fail_on_cost_regression, fail_on_latency_regression=fail_on_latency_regression,
        cost_tolerance=cost_tolerance, latency_tolerance=latency_tolerance, max_mean_cost=fail_if_mean_cost_above,
        max_mean_latency=fail_if_mean_latency_above, fail_on_significant_regression=fail_on_significant_regression,
        fail_on_inconclusive=fail_on_inconclusive, max_unscored_rate=fail_if_unscored_above,
        min_case_pass_rate=min_case_pass_rate,
    ))
    # The verdict rule when a gate is given (a gate over results with no scored row passes nothing); with no
    # gate, score is a report of results already written: exit 0, as the seed's score_eval.py.
    code = 0
    if gates:
        gates = with_graded_check(gates, summary)
        code = exit_code(verdict(gates, graded_counts(summary)[0]))
    echo_nothing_graded(gates)
    for g in gates:
        if g.failed:  # the seed's stderr line, which CI logs and scripts look for
            echo_err(f"GATE FAILED: {g.flag}: {printable(g.message)}")

    from ..reports import render_terminal

    render_terminal(summary, gates, code, verbose=verbose)
    extra = {}
    panels: list[Any] = []
    if table.manifest is not None and table.manifest.extra.get("panel"):
        # A judge panel ran: how far its judges agree and how many independent votes they are worth.
        from ..calibrate import panel_agreement
        from ..reports import render_panel_agreement
        from ..results import read_results

        panels = panel_agreement(read_results(results).rows, n_boot=n_boot, seed=boot_seed)
        render_panel_agreement(panels)
        extra["panels"] = [p.to_dict() for p in panels]
    if json_out:
        from ..reports import write_json

        write_json(json_out, summary, gates, code, ci=ci_flag, extra=extra)
    if junit_xml:
        from ..reports import write_junit

        cases, adv_cases = all_cases(table, opts)
        write_junit(junit_xml, cases, adv_cases, threshold, pass_rule=pass_rule)
    step_summary = None if no_step_summary else os.environ.get("GITHUB_STEP_SUMMARY")
    if cases_path and not (markdown_out or step_summary):
        echo_err("warning: --cases names the images of the Markdown summary, and no Markdown is written "
                 "(give --markdown)")
    if markdown_out or step_summary:
        from ..cases import load_cases
        from ..reports import render_markdown, score_image_refs, write_markdown

        images, image_warnings = score_image_refs(
            results, summary, cases=list(load_cases(cases_path)) if cases_path else None)
        for w in image_warnings:
            echo_err(f"warning: {printable(w)}")
        warning = write_markdown(render_markdown(summary, gates, code, panels=panels, images=images), markdown_out,
                                 step_summary=step_summary)
        if warning:
            echo_err(f"warning: {warning}")
    return code


_FILE_SUFFIXES = frozenset({".jsonl", ".json", ".csv", ".gz", ".ndjson", ".txt"})


def _stored_results(ctx: click.Context, results: str) -> str:
    """RESULTS as given when it is a file (a file wins); else the run it names in the history (a run id or prefix,
    last, @COMMIT, a branch), exported to a temporary folder removed when the command ends, so every output
    (JSON, JUnit, Markdown, panels) reads it as it reads a file."""
    import tempfile

    from ..store import current, export_run, find_run, looks_like_name, open_store

    # A path that names a results file (by its suffix) is a file, found or not: "file not found" says it best.
    if Path(results).exists() or not looks_like_name(results) or Path(results).suffix.lower() in _FILE_SUFFIXES:
        return results
    if not current().readable:
        raise UserError(f"{results}: file not found (and the run history is off, REFEREE_STORE=off, so a run "
                        "cannot be looked up by name)")
    try:
        st = open_store(None, create=False)
    except UserError as exc:
        raise UserError(f"{results}: file not found, and {exc}") from None
    with st:
        try:
            run = find_run(st, results)
        except UserError as exc:
            raise UserError(f"{results}: file not found, and {exc}") from None
        # The folder is named after the run: the report's header names the run, not a temporary path.
        tmp = tempfile.TemporaryDirectory(prefix="referee-score-")
        ctx.call_on_close(tmp.cleanup)
        folder = Path(tmp.name) / run.id[:12]
        folder.mkdir()
        path, n = export_run(st, run.id, folder / "results.jsonl")
        where = st.display_url
    if not n:  # said of the run, not of the temporary file it was exported to
        raise UserError(f"run {run.id[:12]} ({run.status}) has no rows to score, in {where}")
    echo_err(f"results: run {run.id[:12]} ({run.place()}), {n} rows, from {where}")
    return str(path)


def resolve_named_baseline(baseline: str, results: str) -> Any:
    """``--baseline``: a file, or a run in the history of the same suite and configuration as ``results``
    (its manifest); the choice and why go to stderr."""
    from ..results import RunManifest
    from ..store import resolve_baseline

    try:
        candidate = RunManifest.read(results)
    except (OSError, ValueError):
        candidate = None
    b = resolve_baseline(baseline, base_dir=Path("."), candidate=candidate)
    for note in b.notes:
        echo_err(note)
    if b.run is not None:
        echo_err(b.describe())
    return b
