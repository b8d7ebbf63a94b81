"""The run history: every run above was recorded; the suite's two runs listed and drawn as a trend."""

from __future__ import annotations

import shlex

import click

from . import ExampleContext

NEEDS = ("suite",)  # the suite's before and after runs are what it lists and draws

TITLE = "History: the suite's runs, recorded as they ran, listed and drawn as a trend (referee runs, referee view)"

SUITE = "support-agent"


def run(ctx: ExampleContext) -> str | None:
    from ..store import current

    if not current().enabled:
        return "the run history is off (REFEREE_STORE=off), so nothing was recorded"
    if not ctx.store_path.is_file():
        return "no run was recorded"
    store = str(ctx.store_path)
    ctx.echo(f"Every run above was recorded in {store} (this example's own history; in a repository, runs go to "
             ".referee/history.sqlite at its top level).")
    ctx.run("runs", "list", "--store", store, "--suite", SUITE)
    ctx.run("runs", "trend", "--store", store, "--suite", SUITE)
    line = shlex.join(["referee", "view", "--store", store, "--open"])
    ctx.echo("The history in the viewer (runs with filters, the trend per metric, any two runs compared):")
    ctx.echo(click.style(f"  {line}", fg="cyan"))
    return f"the suite's runs are in {store}; `{line}` shows them"
