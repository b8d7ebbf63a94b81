"""Run the example suite (programmatic checks, plus the LLM judge when one is configured) on both versions."""

from __future__ import annotations

from . import ExampleContext

TITLE = "Suite: policy checks (and the judge, when configured) on the answers before and after the change"


def run(ctx: ExampleContext) -> str | None:
    suite = ctx.path("suite.yaml")
    extra: list[str] = [*ctx.judge_args] if ctx.judge else ["--no-judge"]
    if not ctx.judge:
        ctx.echo("the suite's LLM judge is left out (--no-judge); its programmatic checks still run.")
        ctx.judge_skipped("the suite's LLM judge")
    codes = {}
    for name in ("before", "after"):
        codes[name] = ctx.run("run", suite, "--cases", ctx.path(f"{name}.jsonl"),
                              "--out", ctx.path(f"suite_{name}.jsonl"), *extra, expect=(0, 1))
    verdict = ", ".join(f"{k}: {'gates passed' if v == 0 else 'a gate failed'}" for k, v in codes.items())
    return f"{verdict}; results in {ctx.path('suite_before.jsonl')} and {ctx.path('suite_after.jsonl')}"
