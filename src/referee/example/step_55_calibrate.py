"""How far to trust the judge: its scores against human labels, or a replay of recorded verdicts."""

from __future__ import annotations

from pathlib import Path

from . import ExampleContext

NEEDS = ("judge",)
"""The judge's verdicts this one calibrates."""
TITLE = "Calibration: the judge against human labels (or a replay of recorded judge verdicts)"


def run(ctx: ExampleContext) -> str | None:
    judged = ctx.path("judged_after.jsonl")
    if Path(judged).exists():
        # The judge graded the 'after' answers (the judge step); a support lead labelled the same cases pass/fail.
        code = ctx.run("calibrate", judged, ctx.path("human_labels.jsonl"), "--threshold", "0.2",
                       "--update-log", ctx.path("judge_prompt.md"), "--action", "example run",
                       expect=(0, 1))
        return ("judge agrees with the human labels within the threshold" if code == 0 else
                "judge is further from the human labels than the threshold allows (see the per-case deltas)")
    # No judged results (no judge configured): show the same questions answered from recorded verdicts.
    ctx.echo("no judged results yet (the judge step needs a judge), so this replays recorded judge verdicts instead: "
             "GPT-4 on 200 MT-Bench pairs, both orders, against the human-majority label (no model is called)")
    ctx.run("metaeval", "verdicts", ctx.path("judge_verdicts_mtbench.csv"), "--n-boot", "500")
    return "replayed 200 recorded GPT-4 verdicts: accuracy per order, agreement, position bias"
