"""Synthetic cases: more questions written from the grounded-answer cases' chunks, kept only past the gates."""

from __future__ import annotations

from . import ExampleContext

TITLE = "Synthetic cases: new questions from the chunks of the grounded-answer cases, kept only past the gates"


def run(ctx: ExampleContext) -> str | None:
    if not ctx.judge:
        ctx.judge_skipped("generating synthetic cases")
        return "synthetic cases skipped (no judge configured)"
    cases, out = ctx.path("rag.jsonl"), ctx.path("synth_cases.jsonl")
    html = ctx.path("synth_coverage.html")
    args = ["synth", "--from-cases", cases, "--existing", cases, "--out", out, "--n", "6", *ctx.judge_args]
    ctx.run(*args, "--dry-run")
    code = ctx.run(*args, "--html", html, expect=(0, 1))
    ctx.echo("Each case says where it came from and which gates it passed (metadata.synth); the candidates the "
             "gates rejected are in synth_cases.rejected.jsonl with the gate that rejected them.")
    met = "the count was met" if code == 0 else "the count was not met (the shortfall is stated above)"
    return f"generated cases in {out}; {met}; their coverage (per document, kind, persona) charted in {html}"
