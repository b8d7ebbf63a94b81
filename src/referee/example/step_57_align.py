"""Judge alignment: fit the judge to the support lead's labels on some cases, measure it on the others."""

from __future__ import annotations

from pathlib import Path

from . import ExampleContext

NEEDS = ("judge",)
"""The judge's verdicts this one aligns."""
TITLE = "Alignment: fit the judge to the human labels on half the cases, keep it only if the other half agrees more"


def run(ctx: ExampleContext) -> str | None:
    judged, out = ctx.path("judged_after.jsonl"), ctx.path("judge.aligned.json")
    if not Path(judged).exists():
        ctx.judge_skipped("aligning the judge")
        return "alignment skipped (no judged results)"
    # The support lead's pass/fail labels (human_labels.jsonl); the score map needs no model call. In the viewer,
    # `referee view judged_after.jsonl --labels human_labels.jsonl` labels more cases and shows the same figures.
    ctx.run("align", judged, ctx.path("human_labels.jsonl"), "--out", out)
    if Path(out).exists():
        return f"an aligned judge was written to {out}: use it in a suite with `aligned: {Path(out).name}`"
    return ("no aligned judge written: on the held-out labels it did not beat both the raw judge and the "
            "no-judge baseline (the figures above say by how much); the original judge is kept")
