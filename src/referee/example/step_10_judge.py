"""Judge the support agent's answers before and after the prompt change with an LLM judge."""

from __future__ import annotations

from . import ExampleContext

TITLE = "LLM judge: grade every answer against the support policy (before and after the prompt change)"


def run(ctx: ExampleContext) -> str | None:
    if not ctx.judge:
        ctx.judge_skipped("the LLM judge")
        return "skipped (no judge configured)"
    for name in ("before", "after"):
        ctx.run("judge", ctx.path(f"{name}.jsonl"), "--template", ctx.path("judge_prompt.md"),
                "--out", ctx.path(f"judged_{name}.jsonl"), *ctx.judge_args, expect=(0, 1))
    return f"results in {ctx.path('judged_before.jsonl')} and {ctx.path('judged_after.jsonl')}"
