"""Images: support tickets with a screenshot attached, checked as they load, judged, shown in a report; a judge that
cannot see images is refused before any call (docs/multimodal.md)."""

from __future__ import annotations

from . import ExampleContext

TITLE = "Images: support tickets with a screenshot, checked on load, judged, shown in the report and the viewer"


def run(ctx: ExampleContext) -> str | None:
    suite, cases = ctx.path("images/suite.yaml"), ctx.path("images/cases.jsonl")
    out = ctx.path("images_results.jsonl")
    if not ctx.judge:
        ctx.judge_skipped("the LLM judge of the screenshot tickets")
        ctx.run("run", suite, "--out", out, "--no-judge", expect=(0, 1))
    else:
        ctx.run("run", suite, "--out", out, *ctx.judge_args, expect=(0, 1))
    seeing = ctx.path("images/judge_sees_screenshot.md")
    judged = ctx.path("images_seen.jsonl")
    if ctx.standin:
        ctx.echo("The suite's judge prompt names the question, the policy and the answer, not {screenshot}, so the "
                 "stand-in graded the text. A prompt that shows the judge the screenshot "
                 "(images/judge_sees_screenshot.md) needs a model that sees images; the stand-in reads text only, "
                 "so the request is refused before any call (exit 2), never graded blind:")
        ctx.run("judge", cases, "--template", seeing, "--out", judged, *ctx.judge_args, expect=(2,))
    elif ctx.judge:
        ctx.echo("A judge prompt that shows the judge the screenshot (images/judge_sees_screenshot.md); a model "
                 "that cannot see images is refused before any call (exit 2):")
        ctx.run("judge", cases, "--template", seeing, "--out", judged, *ctx.judge_args, expect=(0, 1, 2))
    report = ctx.path("images_report.html")
    ctx.run("report", out, "--cases", cases, "--html", report)
    return f"results in {out}; the screenshots beside each answer in {report}"
