"""Let referee run the support agent itself with the old and the new prompt (a local stand-in, no key), check the
answers, compare the two versions with intervals and gate the change."""

from __future__ import annotations

from ..results import read_results
from . import ExampleContext

TITLE = ("Targets: run the support agent with prompt v1 and v2 (a deterministic local stand-in, no key), "
         "check, compare, gate")


def run(ctx: ExampleContext) -> str | None:
    extra: list[str] = [*ctx.judge_args] if ctx.judge else ["--no-judge"]
    if not ctx.judge:
        ctx.judge_skipped("the targets suite's LLM judge")
    ctx.echo("the agent here is support_standin.py, a STAND-IN that replays recorded replies (not a model); a real "
             "target names a provider, a model and a prompt file")
    # Exit 1 is the point: the gate catches cases that pass with prompt v1 and fail with v2.
    code = ctx.run("run", ctx.path("targets.yaml"), "--out", ctx.path("targets_out"), *extra, expect=(0, 1))
    rows = read_results(ctx.path("targets_out/v2.jsonl")).rows
    generated = ctx.path("targets_out/v2.outputs.jsonl")
    verdict = "the gate caught regressions in v2 (exit 1)" if code == 1 else "v2 passed the gates (exit 0)"
    return f"generated and checked {len(rows)} answers per target; {verdict}; v2's answers in {generated}"
