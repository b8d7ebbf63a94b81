"""``referee synth``: generate test cases from documents (or existing cases), keeping only those that pass the
gates; a case file, a rejections file and a coverage report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ..errors import UserError
from ..synth import (
    CRITIC_THRESHOLD,
    KINDS,
    MAX_ROUNDS,
    NEAR_DUPLICATE,
    Splitter,
    estimate_synth,
    gate_lines,
    load_redactor,
    synth,
)
from ._common import JudgeOptions, api_judge, echo_err, flag_errors, judge_options

DEFAULT_RECENT_TRACES = 1000
"""Traces read by --from-traces when no selection is given: the ones that arrived last."""


def _weights(values: tuple[str, ...], flag: str) -> dict[str, float] | None:
    if not values:
        return None
    out: dict[str, float] = {}
    for v in values:
        name, sep, w = v.rpartition("=") if "=" in v else (v, "", "1")
        try:
            out[name.strip()] = float(w)
        except ValueError:
            raise UserError(f"{flag} {v}: expected NAME or NAME=WEIGHT (a number)") from None
    return out


def _traces(store_url: str | None, metric: str | None, below: float | None, failed: bool, ids: tuple[str, ...],
            recent: int | None, errors: bool = False) -> list[dict[str, Any]]:
    """The selected stored traces as cases (``referee traces to-cases``'s selection)."""
    selection = [f for f, on in (("--trace-metric", metric), ("--trace-below", below is not None),
                                 ("--trace-failed", failed), ("--trace-errors", errors), ("--trace", ids),
                                 ("--recent-traces", recent)) if on]
    if selection and not (below is not None or failed or errors or ids or recent):
        raise UserError("--trace-metric selects with --trace-below or --trace-failed")
    from ..traces import open_sink, traces_to_cases

    sink = open_sink(store_url, create=False)  # reading: a store that is not there is said, never made
    chosen = traces_to_cases(sink, metric=metric, below=below, failed=failed, trace_ids=ids, errors=errors,
                             recent=recent or (0 if selection else DEFAULT_RECENT_TRACES))
    if not chosen:
        raise UserError("--from-traces: no stored trace matches the selection"
                        + (f" ({', '.join(selection)})" if selection else " (the run history holds no trace)"))
    echo_err(f"{len(chosen)} stored trace(s) as sources")
    return chosen


@click.command("synth")
@click.argument("documents", nargs=-1, type=click.Path(exists=True))
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False),
              help="Cases JSONL to write (rejected candidates go to <out>.rejected.jsonl).")
@click.option("--n", "n", type=click.IntRange(1, 100_000), default=20, show_default=True,
              help="How many cases to keep.")
@click.option("--from-cases", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Existing cases to write variations of (their contexts and references are the source).")
@click.option("--from-traces", is_flag=True,
              help="Stored production traces as sources (their retrieved documents, their questions as examples), "
                   "read from --store or the run history in force; select with --trace-below, --trace-failed, "
                   "--trace-errors, --trace, else the --recent-traces that arrived last.")
@click.option("--trace-metric", default=None, help="With --trace-below / --trace-failed: this metric (default any).")
@click.option("--trace-below", type=click.FloatRange(0, 1), default=None, help="Traces scored under this.")
@click.option("--trace-failed", is_flag=True, help="Traces that failed the metric's threshold.")
@click.option("--trace-errors", is_flag=True, help="Traces with a span whose status is ERROR, scored or not.")
@click.option("--trace", "trace_ids", multiple=True, help="A trace id; repeatable.")
@click.option("--recent-traces", type=click.IntRange(1, 100_000), default=None,
              help="The traces that arrived last (default 1000 when no other selection is given).")
@click.option("--existing", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="The suite's cases: a generated case too close to one of them is a duplicate.")
@click.option("--labelled", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Labelled cases (calibration, alignment): never duplicated either.")
@click.option("--kind", "kinds", multiple=True, metavar="KIND[=WEIGHT]",
              help=f"Query kinds and their proportions (repeatable; one of {', '.join(KINDS)}). Default: "
                   "single_hop=0.4 multi_hop=0.2 comparison=0.1 unanswerable=0.15 adversarial=0.15.")
@click.option("--persona", "personas", multiple=True, metavar="NAME[=WEIGHT]",
              help="Who asks (repeatable), in proportion to the weights.")
@click.option("--chunk-chars", type=click.IntRange(100), default=1500, show_default=True,
              help="Largest chunk, in characters.")
@click.option("--overlap", type=click.IntRange(0), default=0, show_default=True,
              help="Characters of a chunk repeated at the start of the next.")
@click.option("--critic-threshold", type=click.FloatRange(1, 5), default=CRITIC_THRESHOLD, show_default=True,
              help="Critic score (1-5) below which a case is dropped.")
@click.option("--near-duplicate", type=click.FloatRange(0.05, 1), default=NEAR_DUPLICATE, show_default=True,
              help="Character 4-gram Jaccard similarity at which two inputs are duplicates.")
@click.option("--max-rounds", type=click.IntRange(1, 50), default=MAX_ROUNDS, show_default=True,
              help="Generation rounds at most, to meet --n.")
@click.option("--max-cost", type=click.FloatRange(0), default=None, help="Stop starting rounds past this USD.")
@click.option("--redact", default=None, metavar="pii|MODULE:FUNCTION",
              help="Applied to every document before any text is sent.")
@click.option("--store", "store_url", default=None, metavar="URL",
              help="Record the run in this history, and read --from-traces from it (a SQLite file or sqlite:///path, "
                   "or postgresql://...; default: REFEREE_STORE, else .referee/history.sqlite). With --from-traces "
                   "and --no-store, only read from it.")
@click.option("--no-store", is_flag=True, help="Do not record the run in the run history.")
@click.option("--dry-run", is_flag=True, help="Price the first round (generation and gates); send nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the run's summary as JSON on stdout.")
@click.option("--html", "html_out", type=click.Path(dir_okay=False), default=None,
              help="Also write the coverage report as an HTML page with charts.")
@judge_options(default_concurrency=4)
def command(documents: tuple[str, ...], out: str, n: int, from_cases: tuple[str, ...], from_traces: bool,
            trace_metric: str | None, trace_below: float | None, trace_failed: bool, trace_errors: bool,
            trace_ids: tuple[str, ...], recent_traces: int | None, existing: tuple[str, ...],
            labelled: tuple[str, ...], kinds: tuple[str, ...], personas: tuple[str, ...], chunk_chars: int,
            overlap: int, critic_threshold: float, near_duplicate: float, max_rounds: int, max_cost: float | None,
            redact: str | None, store_url: str | None, no_store: bool, dry_run: bool, as_json: bool,
            html_out: str | None, judge: JudgeOptions) -> int:
    """Generate N test cases from DOCUMENTS (files or folders: text, Markdown, HTML, PDF with the pdf extra)."""
    if store_url and no_store and not from_traces:
        raise UserError("--store and --no-store contradict each other; give one")
    if not documents and not from_cases and not from_traces:
        raise UserError("give DOCUMENTS (files or folders), --from-cases or --from-traces")
    traces = _traces(store_url, trace_metric, trace_below, trace_failed, trace_ids, recent_traces,
                     trace_errors) if from_traces else None
    if html_out:
        taken = [Path(p).resolve() for p in (*documents, *from_cases, *existing, *labelled, out)]
        if Path(html_out).resolve() in taken:
            raise UserError(f"--html {html_out}: that file is an input or --out; choose another path")
    splitter = Splitter(chunk_chars=chunk_chars, overlap=overlap)
    hook = load_redactor(redact) if redact else None
    seed = judge.seed if judge.seed is not None else 0
    temperature = judge.temperature if judge.temperature is not None else 0.7
    with flag_errors():
        if dry_run:
            est = estimate_synth(list(documents), n=n, judge=api_judge(judge), kinds=_weights(kinds, "--kind"),
                                 personas=_weights(personas, "--persona"), splitter=splitter, seed=seed,
                                 temperature=temperature, max_rounds=max_rounds, redact=hook,
                                 from_cases=list(from_cases), from_traces=traces)
            if as_json:
                click.echo(json.dumps(est.to_dict()))
            for line in est.lines():
                echo_err(line)
            return 0
        result = synth(list(documents), n=n, judge=api_judge(judge), out=out, from_cases=list(from_cases),
                       from_traces=traces,
                       existing=existing, labelled=labelled, kinds=_weights(kinds, "--kind"),
                       personas=_weights(personas, "--persona"), splitter=splitter, seed=seed,
                       temperature=temperature, critic_threshold=critic_threshold, near_duplicate=near_duplicate,
                       max_rounds=max_rounds, max_cost_usd=max_cost, redact=hook,
                       store=False if no_store else store_url,
                       on_round=lambda r, c, k: echo_err(f"round {r}: {c} candidates, {k} kept"))
    for note in result.notes:
        echo_err(note)
    for line in gate_lines(result):
        echo_err(line)
    if result.errors:
        echo_err(f"generator errors ({len(result.errors)}): {result.errors[0]}")
    echo_err(result.coverage_table())
    cost = "no known price" if result.cost_usd is None else f"${result.cost_usd:.4f}"
    echo_err(f"{result.calls} calls ({result.cached_calls} from the cache), cost {cost}; "
             f"{len(result.cases)} cases -> {out}; rejected -> {result.rejected_out}")
    if result.recorded:
        echo_err(f"recorded in the run history ({result.recorded}) as generation {result.generation_id}")
    if result.shortfall:
        echo_err(f"shortfall: {result.shortfall}")
    if html_out:
        from ..reports import render_synth_html

        Path(html_out).write_text(render_synth_html(result.to_dict()), encoding="utf-8")
        echo_err(f"coverage report -> {html_out}")
    if as_json:
        click.echo(json.dumps(result.to_dict()))
    return 0 if result.met else 1
