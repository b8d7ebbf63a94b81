"""``referee judge CASES --template T --out RESULTS``: grade cases with an LLM judge and a prompt template.

One call of :func:`referee.grade`: the flags in, the totals line out."""

from __future__ import annotations

import click

from .. import grade
from ..cases import read_template
from ..runner import totals_line
from . import invoked_argv, keep_until_exit
from ._common import JudgeOptions, api_judge, echo_err, echo_failures, flag_errors, judge_options, result_exit

__all__ = ["command", "read_template"]


@click.command("judge")
@click.argument("cases", type=click.Path(dir_okay=False))
@click.option("--template", "-t", required=True, type=click.Path(dir_okay=False),
              help="Judge prompt with {placeholders} filled from each case.")
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False), help="Results JSONL (appended).")
@click.option("--category", default=None, help="Category for every row (default: each case's own).")
@click.option("--skip-invalid", is_flag=True, help="Skip cases missing a field or with a duplicate id.")
@click.option("--repeat", type=click.IntRange(1), default=1, show_default=True,
              help="Judge every case N times with distinct seeds (bypasses the cache).")
@click.option("--criteria", default=None,
              help="Comma-separated criterion names the reply must contain (a reply missing one is invalid).")
@judge_options(default_concurrency=8)
def command(cases: str, template: str, out: str, category: str | None, skip_invalid: bool, repeat: int,
            criteria: str | None, judge: JudgeOptions) -> int:
    """Grade CASES (JSONL or YAML) with an LLM judge; rows are appended to --out as they complete."""
    with flag_errors():
        result = grade(cases, judge=api_judge(judge), template_file=template, out=out, category=category,
                       criteria=criteria.split(",") if criteria else None, repeat=repeat, skip_invalid=skip_invalid,
                       on_invalid=lambda problem: echo_err(f"invalid: {problem}"), system_model=judge.system_model,
                       progress=None, command=invoked_argv())
    keep_until_exit(result)
    if result.resume_note:
        echo_err(result.resume_note)
    echo_failures(result.new_rows)
    t = result.manifest.totals
    echo_err(totals_line(t, out))
    return result_exit(result)
