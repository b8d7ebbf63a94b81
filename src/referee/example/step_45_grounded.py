"""Grounded answers: claim-level RAG metrics over answers built from retrieved chunks, each verdict with its quote."""

from __future__ import annotations

from . import ExampleContext

TITLE = "Grounded answers: faithfulness, context precision and recall, relevancy, claim by claim with quotes"


def run(ctx: ExampleContext) -> str | None:
    if not ctx.judge:
        ctx.judge_skipped("the grounded-answer metrics")
        return "grounded-answer metrics skipped (no judge configured)"
    suite, out = ctx.path("rag_suite.yaml"), ctx.path("rag_results.jsonl")
    ctx.run("run", suite, "--dry-run", *ctx.judge_args)
    ctx.run("run", suite, "--out", out, "--no-gates", *ctx.judge_args)
    ctx.echo("Each row keeps, per metric, the claims, the chunk each quote came from and whether it was found "
             "(details.checks.<metric>.claims); an unsupported claim is named in the rationale above.")
    return f"claim-level metrics in {out} (the refusal is unscored, not a number)"
