"""Production traces: the support agent's recorded OpenTelemetry traces replayed through the monitor, scored by
reference-free evaluators, the worst turned into cases (docs/monitoring.md)."""

from __future__ import annotations

import json
from pathlib import Path

from . import ExampleContext

TITLE = "Production traces: recorded OpenTelemetry spans scored online, the worst traces turned into cases"


def run(ctx: ExampleContext) -> str | None:
    if not ctx.judge:
        ctx.judge_skipped("the online evaluation of production traces")
        return "online evaluation skipped (no judge configured)"
    low = ctx.path("production_low.jsonl")
    # --store: the example's own history file, so a rerun of the example finds the traces already scored.
    store = f"sqlite:///{Path(ctx.path('production/history.sqlite')).resolve()}"
    ctx.run("monitor", ctx.path("production/monitor.yaml"), "--replay", ctx.path("production/traces.otlp.jsonl"),
            "--once", "--store", store,
            "--to-cases", low, "--below", "0.5", *ctx.judge_args, expect=(0, 1))
    lines = [line for line in Path(low).read_text(encoding="utf-8").splitlines() if line.strip()]
    ids = [json.loads(line)["metadata"]["trace_id"][:8] for line in lines]
    return (f"{len(lines)} of the 12 recorded traces scored under 0.5, written as cases to {low}"
            + (f" (traces {', '.join(ids)})" if ids else "")
            + f"; every trace, its scores and the drift chart: referee view --store {store} (its traces page)")
