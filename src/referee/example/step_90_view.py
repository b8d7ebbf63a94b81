"""Look at the runs, compare them and label cases in a browser: the `referee view` command for this example."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from . import ExampleContext

TITLE = "Look and label: every run of this example in the local viewer (referee view)"

# Baseline first, candidate second (the viewer's compare page opens on the first two), then the rest.
_PREFERRED = [("judged_before.jsonl", "judged_after.jsonl"), ("suite_before.jsonl", "suite_after.jsonl")]
_OTHERS = ["pairwise.jsonl", "rubric_after.jsonl", "rag_results.jsonl", "agent_checks.jsonl",
           "simulated_results.jsonl", "redteam_results.jsonl"]


def command_for(folder: Path) -> list[str] | None:
    """``referee view`` over the results this example wrote in ``folder`` (None when there are none)."""
    files: list[str] = []
    for before, after in _PREFERRED:
        if (folder / before).is_file() and (folder / after).is_file():
            files += [before, after]
            break
    files += [f for f in _OTHERS if (folder / f).is_file()]
    if not files and (folder / "targets_out").is_dir():  # the targets step alone: its folder, a run per target
        files = ["targets_out"]
    if not files:
        return None
    return ["referee", "view", *(str(folder / f) for f in files), "--open"]


def run(ctx: ExampleContext) -> str | None:
    cmd = command_for(ctx.dir)
    if cmd is None:
        return "no results to view"
    ctx.echo("Browse, filter and compare these runs, and label cases for `referee calibrate` (labels are saved to "
             "RESULTS.labels.jsonl beside each file); the viewer serves on 127.0.0.1 only:")
    line = shlex.join(cmd)
    ctx.echo(click.style(f"  {line}", fg="cyan"))
    return line
