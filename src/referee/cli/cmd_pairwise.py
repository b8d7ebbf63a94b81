"""``referee pairwise CASES --template T --out RESULTS``: compare two outputs per case, judged in both orders.

One call of :func:`referee.compare`: the flags in, the wins and totals line out."""

from __future__ import annotations

import click

from .. import compare
from ..evaluators import RECONCILE_MODES, Reconcile
from ..runner import totals_line
from . import invoked_argv, keep_until_exit
from ._common import (
    JudgeOptions,
    api_judge,
    echo_err,
    echo_failures,
    echo_seed_line,
    flag_errors,
    graded_count,
    judge_options,
    result_exit,
    store_options,
)


@click.command("pairwise")
@click.argument("cases", type=click.Path(dir_okay=False))
@click.option("--template", "-t", required=True, type=click.Path(dir_okay=False),
              help="Judge prompt using {input}, {response_1} and {response_2} (plus any case field).")
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False), help="Results JSONL (appended).")
@click.option("--category", default=None, help="Category of cases that have none (a case's own category wins).")
@click.option("--skip-invalid", is_flag=True, help="Skip cases missing a field or with a duplicate id.")
@click.option("--name-a", default=None, help="Name of system A (stored in each row's details; default: the "
                                              "case's system_a field).")
@click.option("--name-b", default=None, help="Name of system B (default: the case's system_b field).")
@click.option("--reconcile", type=click.Choice(RECONCILE_MODES), default="strict", show_default=True,
              help="How the two orders make one verdict. strict (agent-eval's run_pairwise.py): orders that "
                   "disagree, a tie against a win included, are a tie (0.5). average (agent-eval's 'run both "
                   "orderings and average'): the mean of the two orders, so a win and a tie is 0.75.")
@click.option("--request-format", type=click.Choice(["referee", "seed"]), default="referee", show_default=True,
              help="referee: a system prompt saying case text is data, values neutralised, the verdict schema as "
                   "structured output. seed: agent-eval's run_pairwise.py request (the filled template as the one "
                   "user message): fewer tokens, weaker defences (docs/benchmarks.md).")
@judge_options(default_concurrency=5)
@store_options()
def command(cases: str, template: str, out: str, category: str | None, skip_invalid: bool,
            name_a: str | None, name_b: str | None, reconcile: Reconcile, request_format: str,
            judge: JudgeOptions) -> int:
    """Judge output_a against output_b for every case of CASES, in both orders.

    A disagreement between the orders is a tie with position_bias_detected (--reconcile average: the mean of
    the two orders). Score: a 1.0, b 0.0, tie 0.5.
    """
    from ..cases import NoValidCases

    try:
        with flag_errors():
            result = compare(cases, judge=api_judge(judge), template_file=template, out=out, category=category,
                             name_a=name_a, name_b=name_b, reconcile=reconcile, skip_invalid=skip_invalid,
                             on_invalid=lambda problem: echo_err(f"invalid: {problem}"),
                             system_model=judge.system_model, progress=None, command=invoked_argv(),
                             request_format=request_format)
    except NoValidCases as exc:  # the seed: an empty results file, its line, exit 1
        echo_err(f"error: {exc}")
        echo_seed_line(f"Judged 0/0 case(s) -> {out} (0 position-bias disagreement(s))")
        return exc.exit_code
    keep_until_exit(result)
    if result.resume_note:
        echo_err(result.resume_note)
    echo_failures(result.new_rows)
    from ..metaeval import pairwise_tally  # after the run: numpy and the statistics are not needed to judge

    pt = pairwise_tally(result.rows)
    wins, biased = pt.wins, pt.position_bias
    t = result.manifest.totals
    echo_err(totals_line(t, out, lead=(
        f"A wins {wins['a']}, B wins {wins['b']}, ties {wins['tie']} "
        + (f"({biased} of them position bias); " if reconcile == "strict" else
           f"({biased} rows with position bias, averaged over both orders); ")
        + f"mean score of A {pt.mean_score_a:.3f} (--reconcile {reconcile}); ")))
    ids = [c.id for c in result.cases]
    biased_scored = sum(1 for r in result.rows if r.status == "scored" and r.position_bias_detected)
    echo_seed_line(f"Judged {graded_count(result.rows, ids)}/{len(ids)} case(s) -> {out} "
                   f"({biased_scored} position-bias disagreement(s))")
    return result_exit(result)
