"""``referee init [DIR]``: write a small starting suite that runs at once against the stand-in judge (no key)."""

from __future__ import annotations

import click

from ..example import INIT_SWITCH, scaffold


@click.command("init")
@click.argument("folder", default="evals", required=False, type=click.Path(file_okay=False))
@click.option("--force", is_flag=True, help="Overwrite the suite's files if they exist.")
def command(folder: str, force: bool) -> int:
    """Write a starting suite into FOLDER (default: evals): cases with recorded answers, a judge prompt and
    suite.yaml with checks, the LLM judge and a gate. It runs at once, with no key, against the local stand-in
    judge (not a model); the output says how to switch to a real provider."""
    written = scaffold(folder, force=force)
    for p in written:
        click.echo(f"wrote {p}")
    suite = written[-1]
    click.echo("")
    click.echo("Run it (no key needed):")
    click.echo(click.style(f"  referee run {suite.as_posix()}", fg="cyan"))
    click.echo("Then look at the results in a browser:")
    click.echo(click.style(f"  referee view {suite.parent.as_posix()}/ --open", fg="cyan"))
    click.echo("")
    click.echo(INIT_SWITCH)
    return 0
