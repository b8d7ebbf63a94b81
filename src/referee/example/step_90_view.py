"""Look at the runs, compare them and label cases in a browser: the `referee view` command for this example."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from . import ExampleContext

TITLE = "Look and label: every run of this example in the local viewer (referee view)"

# Baseline first, candidate second (the viewer's compare page opens on the first two), then the rest.
_PREFERRED = [("judged_before.jsonl", "judged_after.jsonl"), ("suite_before.jsonl", "suite_after.jsonl")]
_SAME_CASES = ["pairwise.jsonl", "rubric_after.jsonl", "panel_after.jsonl", "batch_judged.jsonl"]
"""Runs over the support answers' own case ids: columns of one grid beside the before / after pair."""
_OWN_CASES = ["rag_results.jsonl", "images_results.jsonl", "agent_checks.jsonl", "simulated_results.jsonl",
              "redteam_results.jsonl", "targets_out"]
"""Runs over cases of their own (retrieval answers, screenshot tickets, agent runs, scenarios, attacks, targets):
each is viewed on its own, as a grid beside runs of other cases would be mostly "(not in this run)"."""


def commands_for(folder: Path) -> list[list[str]]:
    """``referee view`` commands over the results this example wrote in ``folder``: runs over the same cases
    together, each run over cases of its own apart; the main one (the support answers' runs) last."""
    main: list[str] = []
    for before, after in _PREFERRED:
        if (folder / before).is_file() and (folder / after).is_file():
            main += [before, after]
            break
    main += [f for f in _SAME_CASES if (folder / f).is_file()]
    own = [f for f in _OWN_CASES if (folder / f).exists()]
    groups = [[f] for f in own] + ([main] if main else [])
    return [["referee", "view", *(str(folder / f) for f in g), "--open"] for g in groups]


def command_for(folder: Path) -> list[str] | None:
    """The main ``referee view`` command of :func:`commands_for` (None when there are no results)."""
    cmds = commands_for(folder)
    return cmds[-1] if cmds else None


def run(ctx: ExampleContext) -> str | None:
    cmd = command_for(ctx.dir)
    if cmd is None:
        return "no results to view"
    ctx.echo("Browse, filter and compare these runs, and label cases for `referee calibrate` (labels are saved to "
             "RESULTS.labels.jsonl beside each file); the viewer serves on 127.0.0.1 only:")
    line = shlex.join(cmd)
    ctx.echo(click.style(f"  {line}", fg="cyan"))
    return line
