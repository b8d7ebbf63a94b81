"""Compare the answers before and after the prompt change head to head, judged in both orders."""

from __future__ import annotations

import json

from . import ExampleContext

TITLE = "Pairwise: before vs after, head to head, each pair judged in both orders"


def write_pairs(ctx: ExampleContext) -> str:
    """One pairwise case per id: output_a = the answer before the change, output_b = after."""
    with open(ctx.path("before.jsonl"), encoding="utf-8") as fb, open(ctx.path("after.jsonl"), encoding="utf-8") as fa:
        before = {c["id"]: c for c in map(json.loads, fb)}
        after = {c["id"]: c for c in map(json.loads, fa)}
    path = ctx.path("pairs.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for cid, b in before.items():
            if cid not in after:
                continue
            f.write(json.dumps({"id": cid, "category": b.get("category"), "input": b["input"],
                                "reference": b.get("reference", ""), "output_a": b["output"],
                                "output_b": after[cid]["output"]}) + "\n")
    return path


def run(ctx: ExampleContext) -> str | None:
    pairs = write_pairs(ctx)
    if not ctx.judge:
        ctx.echo(f"wrote {pairs} (before = a, after = b)")
        ctx.judge_skipped("the pairwise judge")
        return "skipped (no judge configured)"
    out = ctx.path("pairwise.jsonl")
    ctx.run("pairwise", pairs, "--template", ctx.path("pairwise_prompt.md"), "--out", out,
            "--name-a", "before", "--name-b", "after", *ctx.judge_args, expect=(0, 1))
    ctx.run("rank", out, "--html", ctx.path("leaderboard.html"), expect=(0, 2))
    return f"head-to-head results in {out}, leaderboard in {ctx.path('leaderboard.html')}"
