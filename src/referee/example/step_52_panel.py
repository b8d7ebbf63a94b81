"""A panel of judges: the suite's judge as three judges, their majority verdict and how far they agree."""

from __future__ import annotations

from . import ExampleContext

TITLE = "Panel: three judges grade the answers after the change; the verdict is their majority"


def run(ctx: ExampleContext) -> str | None:
    if not ctx.judge:
        ctx.judge_skipped("the judge panel")
        return "judge panel skipped (no judge configured)"
    if not ctx.standin:
        # A panel is several judges; the example only knows the one configured (docs/panels.md sets one up).
        ctx.echo("a panel needs several judges: `referee run suite.yaml --judge PROVIDER:MODEL --judge ...` "
                 "(docs/panels.md); this step runs three stand-in judges only with the stand-in.")
        return "judge panel skipped (give several judges with --judge; see docs/panels.md)"
    out = ctx.path("panel_after.jsonl")
    # Three stand-in judges that differ by name, as three models would: each grades every case, the panel's
    # verdict is their majority, and `referee score` says how far they agree (docs/panels.md).
    # --no-store: the example's history keeps the suite's before and after runs, whose trend the history step shows.
    code = ctx.run("run", ctx.path("suite.yaml"), "--cases", ctx.path("after.jsonl"), "--out", out,
                   "--judge", "standin:a", "--judge", "standin:b", "--judge", "standin:c", "--no-store",
                   expect=(0, 1))
    ctx.run("score", out, "--pass-rule", "evaluator")
    return f"{'gates passed' if code == 0 else 'a gate failed'}; the panel's rows in {out}"
