"""``referee conversation CASES --out R``: judge multi-turn conversations (final turn, whole, or per turn).

One call of :func:`referee.judge_conversations`: the flags in, the failing cases and counts out."""

from __future__ import annotations

import click

from .. import judge_conversations
from ..evaluators import CONVERSATION_MODES as MODES
from . import invoked_argv, keep_until_exit
from ._agents import report_outcome
from ._common import JudgeOptions, api_judge, echo_err, flag_errors, judge_options, result_exit, store_options


@click.command("conversation")
@click.argument("cases", type=click.Path(dir_okay=False))
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False), help="Results JSONL.")
@click.option("--mode", type=click.Choice([m.replace("_", "-") for m in MODES]), default="final",
              show_default=True,
              help="final: the last reply in the context of the turns before it; conversation: the whole "
                   "conversation (consistency, memory, goal completion); per-turn: every assistant reply, "
                   "one row each with its turn number.")
@click.option("--criteria", "criteria_file", type=click.Path(dir_okay=False), default=None,
              help="YAML mapping criterion id -> description (replaces the mode's default rubric).")
@click.option("--category", default=None, help="Category of cases that have none (a case's own category wins).")
@judge_options(default_concurrency=8)
@store_options()
def command(cases: str, out: str, mode: str, criteria_file: str | None, category: str | None,
            judge: JudgeOptions) -> int:
    """Judge conversations in CASES: 'turns' [{role, content}], 'input' the final user turn, 'output' the reply."""
    with flag_errors():
        result = judge_conversations(
            cases, api_judge(judge), mode=mode.replace("-", "_"), criteria=criteria_file, out=out, category=category,
            on_invalid=lambda problem: echo_err(f"invalid: {problem}"), system_model=judge.system_model,
            progress=None, command=invoked_argv())
    keep_until_exit(result)
    if result.resume_note:
        echo_err(result.resume_note)
    report_outcome(result, out, judged=True)
    return result_exit(result)
