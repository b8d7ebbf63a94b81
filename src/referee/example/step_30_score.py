"""Score the answers after the change against the answers before it, and gate on regressions."""

from __future__ import annotations

from pathlib import Path

from . import ExampleContext

NEEDS = ("judge", "suite")
"""The steps whose results this one scores."""
TITLE = "Score: after vs before, with confidence intervals, the failures behind them, and a regression gate"


def run(ctx: ExampleContext) -> str | None:
    pairs = [(kind, ctx.path(f"{prefix}_before.jsonl"), ctx.path(f"{prefix}_after.jsonl"))
             for kind, prefix in (("suite", "suite"), ("judge", "judged"))]
    present = [(k, b, a) for k, b, a in pairs if Path(b).exists() and Path(a).exists()]
    if not present:
        ctx.echo("skipped: no results to score yet (neither suite_before/after.jsonl from the suite step nor "
                 "judged_before/after.jsonl from the judge step exist)")
        return "skipped (no results files)"
    outcomes = []
    for kind, before, after in present:
        stem = f"score_{kind}"
        # Exit 1 is the point of the demonstration: the gate catches cases that passed before and fail now.
        code = ctx.run("score", after, "--baseline", before, "--fail-on-regression",
                       "--json-out", ctx.path(f"{stem}.json"), "--junit-xml", ctx.path(f"{stem}.junit.xml"),
                       "--markdown", ctx.path(f"{stem}.md"), expect=(0, 1))
        outcomes.append(f"{kind}: {'regressions caught (exit 1)' if code == 1 else 'no regression (exit 0)'}")
    return "; ".join(outcomes) + f"; summaries in {ctx.path('score_*.json')} / .md / .junit.xml"
