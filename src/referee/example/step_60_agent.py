"""An agent with tools: trajectories checked by code (no key), the trajectory and conversation judges when a
judge is configured, and a small red-team run scored per attack type."""

from __future__ import annotations

from ..aggregate import tally
from ..results import read_results
from . import ExampleContext

TITLE = "Agent: tool trajectories, conversations and a red-team run (support agent with refund tools)"


def _counts(path: str) -> str:
    t = tally(read_results(path).rows)
    c = {"passed": t.passed, "failed": t.failed, "unscored": t.unscored, "error": t.errors}
    return ", ".join(f"{n} {k}" for k, n in c.items() if n)


def run(ctx: ExampleContext) -> str | None:
    traj = ctx.path("agent/trajectories.jsonl")
    # 12 recorded runs: good ones, a wrong tool, a forbidden delete_account call, a loop, a right answer via a
    # broken path, an ignored tool error, the same agent recorded as OpenAI / Anthropic messages and OTel
    # spans, and one malformed step (an error row; the run continues).
    ctx.run("trajectory", traj, "--out", ctx.path("agent_checks.jsonl"))
    parts = [f"trajectory checks: {_counts(ctx.path('agent_checks.jsonl'))}"]

    cases = ctx.path("redteam_cases.jsonl")
    ctx.run("redteam", "generate", "--seed", "7", "--per-seed", "1", "--out", cases)
    judge = ["--judge", *ctx.judge_args] if ctx.judge else []
    ctx.run("redteam", "run", cases, "--outputs", ctx.path("agent/redteam_replies.jsonl"),
            "--out", ctx.path("redteam_results.jsonl"), *judge)
    parts.append(f"red team: {_counts(ctx.path('redteam_results.jsonl'))}")

    if ctx.judge:
        ctx.run("trajectory", traj, "--judge", "--out", ctx.path("agent_judged.jsonl"), *ctx.judge_args,
                expect=(0, 1))
        ctx.run("conversation", ctx.path("agent/conversations.jsonl"), "--mode", "final",
                "--out", ctx.path("conversations_judged.jsonl"), *ctx.judge_args, expect=(0, 1))
        parts.append(f"trajectory judge: {_counts(ctx.path('agent_judged.jsonl'))}")
    else:
        ctx.judge_skipped("the trajectory and conversation judges")
        parts.append("judges skipped (no judge configured)")
    return "; ".join(parts)
