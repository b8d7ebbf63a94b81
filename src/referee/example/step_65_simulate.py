"""A simulated conversation: a simulated user asks the shop's agent for refunds, the agent's tools change the
shop's orders, and each episode is rewarded by the state it left and what it told the user. The user is the
stand-in model answering from a replies file, and the agent a few rules in a Python file: no key is needed."""

from __future__ import annotations

from ..results import read_results
from . import ExampleContext

TITLE = "Simulated users: an agent with stateful tools, rewarded by what it changed (pass^k over 2 tries)"


def run(ctx: ExampleContext) -> str | None:
    out = ctx.path("simulated_results.jsonl")
    # The stand-in user (not a model) answers from its replies file whatever judge is configured, so the
    # step shows the same episodes everywhere; point --user-provider / --user-model at a model for real ones.
    user = ["--user-provider", "standin", "--user-base-url", ctx.path("agent/user_replies.jsonl")]
    # The scenarios name their environment class (shop_env:Shop); a scenario file is data, so the code it may
    # run is named here, on the command line.
    ctx.run("simulate", ctx.path("agent/simulated.jsonl"), "--environment", "shop_env",
            "--agent", "shop_agent:agent", *user,
            "--repeat", "2", "--out", out)
    rows = read_results(out).rows
    passed = sum(bool(r.passed) for r in rows)
    return f"{passed}/{len(rows)} episodes rewarded 1 (the unknown order is the agent's failure)"
