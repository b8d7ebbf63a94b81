"""``referee pairwise CASES --template T --out RESULTS``: compare two outputs per case, judged in both orders."""

from __future__ import annotations

from pathlib import Path

import click

from ..cases import load_cases
from ..errors import UserError
from ..evaluators.pairwise import RECONCILE_MODES, PairwiseJudge, Reconcile
from ..results._manifest import RunManifest, TemplateInfo, text_sha256
from ..runner.session import error_row, execute, totals_line
from ..templates import placeholders, preflight
from . import invoked_argv
from ._common import JudgeOptions, build_client, echo_err, judge_options, report_preflight
from .cmd_judge import read_template, report_failures

# Filled by the runner for each order, so they are not case fields.
_RUNNER_FIELDS = ("response_1", "response_2")


@click.command("pairwise")
@click.argument("cases", type=click.Path(dir_okay=False))
@click.option("--template", "-t", required=True, type=click.Path(dir_okay=False),
              help="Judge prompt using {input}, {response_1} and {response_2} (plus any case field).")
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False), help="Results JSONL (appended).")
@click.option("--category", default=None, help="Category for every row (default: each case's own).")
@click.option("--skip-invalid", is_flag=True, help="Skip cases missing a field or with a duplicate id.")
@click.option("--name-a", default=None, help="Name of system A (stored in each row's details; default: the "
                                              "case's system_a field).")
@click.option("--name-b", default=None, help="Name of system B (default: the case's system_b field).")
@click.option("--reconcile", type=click.Choice(RECONCILE_MODES), default="strict", show_default=True,
              help="How the two orders make one verdict. strict (the seed's run_pairwise.py): orders that "
                   "disagree, a tie against a win included, are a tie (0.5). average (the seed's 'run both "
                   "orderings and average'): the mean of the two orders, so a win and a tie is 0.75.")
@judge_options(default_concurrency=5)
def command(cases: str, template: str, out: str, category: str | None, skip_invalid: bool,
            name_a: str | None, name_b: str | None, reconcile: Reconcile, judge: JudgeOptions) -> int:
    """Judge output_a against output_b for every case of CASES, in both orders.

    A disagreement between the orders is a tie with position_bias_detected (--reconcile average: the mean of
    the two orders). Score: a 1.0, b 0.0, tie 0.5.
    """
    tmpl = read_template(template)
    keys = placeholders(tmpl)
    missing = [k for k in _RUNNER_FIELDS if k not in keys]
    if missing:
        raise UserError(f"{template}: the template must use {{response_1}} and {{response_2}} "
                        f"(missing: {', '.join('{' + k + '}' for k in missing)})")
    case_set = load_cases(cases)
    required = ["output_a", "output_b", *[k for k in keys if k not in _RUNNER_FIELDS]]
    pf = preflight(case_set.cases, list(dict.fromkeys(required)), label="pairwise template")
    report_preflight(pf, cases, skip_invalid=skip_invalid)

    client = build_client(judge)
    tmpl_hash = text_sha256(tmpl)
    pj = PairwiseJudge(client, tmpl, template_hash=tmpl_hash, category=category, name_a=name_a, name_b=name_b,
                       max_tokens=judge.max_tokens, temperature=judge.temperature, seed=judge.seed,
                       use_cache=not judge.no_cache, reconcile=reconcile)
    manifest = RunManifest.for_cases(
        "pairwise", cases, [c.id for c in pf.valid], command=invoked_argv(),
        template=TemplateInfo(path=template, sha256=tmpl_hash),
        judge=judge.config(client.provider.model), system_under_test=judge.system_model,
    )
    if name_a or name_b or reconcile != "strict":
        # strict keeps the hash of runs made before --reconcile existed, so they still resume.
        manifest.extra["config_hash"] = text_sha256(f"{name_a}\x00{name_b}"
                                                    + ("" if reconcile == "strict" else f"\x00{reconcile}"))
    manifest.extra["reconcile"] = reconcile
    outcome = execute(
        out=Path(out), manifest=manifest, items=pf.valid,
        key=lambda c: (c.id, None, None),
        evaluate=pj.evaluate,
        on_error=lambda c, exc: error_row(c.id, exc, evaluator="pairwise", category=category or c.category),
        client=client, concurrency=judge.concurrency, label="pairwise", skipped=pf.skipped,
    )
    if outcome.resume_note:
        echo_err(outcome.resume_note)
    report_failures(outcome.new_rows)
    rows = [r for r in outcome.rows if r.status == "scored"]
    wins = {w: sum(r.winner == w for r in rows) for w in ("a", "b", "tie")}
    biased = sum(bool(r.position_bias_detected) for r in rows)
    t = outcome.manifest.totals
    echo_err(totals_line(t, out, lead=(
        f"A wins {wins['a']}, B wins {wins['b']}, ties {wins['tie']} "
        + (f"({biased} of them position bias); " if reconcile == "strict" else
           f"({biased} rows with position bias, averaged over both orders); ")
        + f"mean score of A {sum(r.score or 0.0 for r in rows) / len(rows) if rows else 0.0:.3f} "
        f"(--reconcile {reconcile}); ")))
    if t.scored == 0:
        echo_err("error: nothing was graded")
        return 1
    return 0
