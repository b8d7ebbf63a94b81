"""``referee trajectory CASES --out R``: check agent trajectories by code, or grade them with the judge.

One call of :func:`referee.check_trajectories` (or, with ``--judge``, :func:`referee.judge_trajectories`)."""

from __future__ import annotations

import click

from .. import check_trajectories, judge_trajectories
from ..errors import UserError
from . import invoked_argv, keep_until_exit
from ._agents import report_outcome
from ._common import JudgeOptions, api_judge, echo_err, flag_errors, judge_options, result_exit, store_options


@click.command("trajectory")
@click.argument("cases", type=click.Path(dir_okay=False))
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False), help="Results JSONL.")
@click.option("--checks", "checks_file", type=click.Path(dir_okay=False), default=None,
              help="YAML: {checks: [names], options: {check: {...}}, cap: 0.5}. Default: every check whose "
                   "expectation a case states (its 'expect' block), plus loop and error-handling checks.")
@click.option("--cap", type=click.FloatRange(0, 1), default=None,
              help="Highest score when a process check fails, even with a correct final answer (default 0.5).")
@click.option("--judge", "use_judge", is_flag=True,
              help="Grade with the trajectory judge (tool selection, arguments, efficiency, final output) "
                   "instead of the deterministic checks.")
@click.option("--criteria", "criteria_file", type=click.Path(dir_okay=False), default=None,
              help="With --judge: YAML mapping criterion id -> description (replaces the default rubric).")
@click.option("--max-chars", type=click.IntRange(20), default=200, show_default=True,
              help="With --judge: arguments and results longer than this are truncated in the prompt.")
@click.option("--category", default=None, help="Category of cases that have none (a case's own category wins).")
@judge_options(default_concurrency=8)
@store_options()
def command(cases: str, out: str, checks_file: str | None, cap: float | None, use_judge: bool,
            criteria_file: str | None, max_chars: int, category: str | None, judge: JudgeOptions) -> int:
    """Evaluate agent trajectories in CASES (a list of steps, OpenAI / Anthropic messages or OTel GenAI spans).

    Without --judge no API key is needed: the checks run on each case's 'expect' block. A case whose
    trajectory cannot be read is an error row naming the case and step; the run continues.
    """
    if use_judge and (checks_file is not None or cap is not None):
        raise UserError("--checks and --cap apply to the deterministic checks; leave them out with --judge")
    if not use_judge and criteria_file is not None:
        raise UserError("--criteria needs --judge")
    def on_invalid(problem: str) -> None:
        echo_err(f"invalid: {problem}")

    if not use_judge:
        result = check_trajectories(cases, checks=checks_file, cap=cap, out=out, category=category,
                                    on_invalid=on_invalid, progress=None, command=invoked_argv())
        keep_until_exit(result)
        if result.resume_note:
            echo_err(result.resume_note)
        report_outcome(result, out)
        return result_exit(result)
    with flag_errors():
        result = judge_trajectories(cases, api_judge(judge), criteria=criteria_file, max_chars=max_chars, out=out,
                                    category=category, on_invalid=on_invalid, system_model=judge.system_model,
                                    progress=None, command=invoked_argv())
    keep_until_exit(result)
    if result.resume_note:
        echo_err(result.resume_note)
    report_outcome(result, out, judged=True)
    return result_exit(result)
