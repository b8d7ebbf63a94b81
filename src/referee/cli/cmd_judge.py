"""``referee judge CASES --template T --out RESULTS``: grade cases with an LLM judge and a prompt template.

One call of :func:`referee.grade`: the flags in, the totals line out."""

from __future__ import annotations

import click

from .. import grade
from ..cases import read_template
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

__all__ = ["command", "read_template"]


@click.command("judge")
@click.argument("cases", type=click.Path(dir_okay=False))
@click.option("--template", "-t", required=True, type=click.Path(dir_okay=False),
              help="Judge prompt with {placeholders} filled from each case.")
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False), help="Results JSONL (appended).")
@click.option("--category", default=None, help="Category of cases that have none (a case's own category wins).")
@click.option("--skip-invalid", is_flag=True, help="Skip cases missing a field or with a duplicate id.")
@click.option("--repeat", type=click.IntRange(1), default=1, show_default=True,
              help="Judge every case N times with distinct seeds (bypasses the cache).")
@click.option("--criteria", default=None,
              help="Comma-separated criterion names the reply must contain (a reply missing one is invalid).")
@click.option("--request-format", type=click.Choice(["referee", "seed"]), default="referee", show_default=True,
              help="referee: a system prompt saying case text is data, values neutralised, the verdict schema as "
                   "structured output. seed: agent-eval's run_judge.py request (the filled template as the one "
                   "user message): fewer tokens, weaker defences (docs/benchmarks.md).")
@click.option("--retry-unscored", is_flag=True,
              help="Resuming into --out: judge again the cases it holds as unscored (error rows are always judged "
                   "again), asking the judge afresh instead of reading its cached reply.")
@judge_options(default_concurrency=8)
@store_options()
def command(cases: str, template: str, out: str, category: str | None, skip_invalid: bool, repeat: int,
            criteria: str | None, request_format: str, retry_unscored: bool, judge: JudgeOptions) -> int:
    """Grade CASES (JSONL or YAML) with an LLM judge; rows are appended to --out as they complete."""
    from ..cases import NoValidCases
    from ..runner import retrying_unscored

    try:
        with flag_errors(), retrying_unscored(retry_unscored):
            result = grade(cases, judge=api_judge(judge), template_file=template, out=out, category=category,
                           criteria=criteria.split(",") if criteria else None, repeat=repeat,
                           skip_invalid=skip_invalid, on_invalid=lambda problem: echo_err(f"invalid: {problem}"),
                           system_model=judge.system_model, progress=None, command=invoked_argv(),
                           request_format=request_format)
    except NoValidCases as exc:  # the seed: an empty results file, its line, exit 1
        echo_err(f"error: {exc}")
        echo_seed_line(f"Graded 0/0 case(s) -> {out}")
        return exc.exit_code
    keep_until_exit(result)
    if result.resume_note:
        echo_err(result.resume_note)
    echo_failures(result.new_rows)
    t = result.manifest.totals
    echo_err(totals_line(t, out))
    ids = [c.id for c in result.cases]
    echo_seed_line(f"Graded {graded_count(result.rows, ids)}/{len(ids)} case(s) -> {out}")
    return result_exit(result)
