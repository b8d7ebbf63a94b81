"""Grade the after-change answers with the 5-dimension agent-evaluation rubric, and render HTML reports."""

from __future__ import annotations

import re
from pathlib import Path

from . import ExampleContext

TITLE = "Rubric verdicts: the 5-dimension agent evaluation with verified evidence, and HTML reports"


def _results_files(folder: Path) -> list[Path]:
    """Results files referee wrote in the example folder (each has a manifest beside it). Runs set aside by a
    rerun with another configuration (``x.prev.jsonl``, ``x.prev2.jsonl``) are stale: no report for them."""
    return sorted(p for p in folder.glob("*.jsonl") if p.with_name(p.stem + ".manifest.json").exists()
                  and not re.search(r"\.prev\d*$", p.stem))


def run(ctx: ExampleContext) -> str | None:
    notes = []
    if ctx.judge:
        ctx.run("evaluate", "--cases", ctx.path("after.jsonl"), "--out", ctx.path("rubric_after.jsonl"),
                "--rubric", "agent-evaluation", *ctx.judge_args, expect=(0, 1))
    else:
        ctx.judge_skipped("the rubric grading")
        notes.append("rubric grading skipped (no judge configured)")
    reports = []
    for results in _results_files(ctx.dir):
        out = ctx.path(f"report_{results.stem}.html")
        cases = "before.jsonl" if results.stem.endswith("before") else "after.jsonl"
        ctx.run("report", str(results), "--cases", ctx.path(cases), "--html", out)
        reports.append(out)
    if reports:
        notes.append("HTML reports: " + ", ".join(reports))
    else:
        notes.append("no results files yet to report on")
    return "; ".join(notes)
