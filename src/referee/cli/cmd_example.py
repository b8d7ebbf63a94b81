"""``referee example``: run referee's main job end to end on the built-in example (no API key needed)."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from ..example import (
    STANDIN_NOTICE,
    STANDIN_PROVIDER,
    ExampleContext,
    prepare,
    selected_steps,
    step_names,
    steps,
)
from ._common import judge_configured


@click.command("example")
@click.option("--dir", "workdir", default="referee-example", show_default=True, type=click.Path(file_okay=False),
              help="Folder to write the example's cases and results into.")
@click.option("--provider", default=None, help="Judge provider for the model-graded steps (see referee judge).")
@click.option("--model", default=None)
@click.option("--base-url", default=None)
@click.option("--step", "only", multiple=True, metavar="NAME",
              help="Run only this step (repeatable), after the steps it reads from: " + ", ".join(step_names()) + ".")
@click.option("--standin/--no-standin", default=True, show_default=True,
              help="Without a configured judge, grade with the local stand-in judge (--provider standin: token "
                   "overlap with the reference, not a model); --no-standin skips the model-graded steps instead.")
def command(workdir: str, provider: str | None, model: str | None, base_url: str | None, only: tuple[str, ...],
            standin: bool) -> int:
    """Run the built-in example: a support agent before and after a prompt change, evaluated end to end.

    Model-graded steps use the configured judge (an API key in the environment, REFEREE_PROVIDER, or
    --provider/--base-url); without one, the local stand-in judge grades them (no key, no network), or with
    --no-standin they are skipped with instructions. Everything else runs either way.
    """
    chosen = selected_steps(list(only)) if only else steps()  # a bad name: a usage error before any file
    target = Path(workdir)
    prepare(target)
    judge_args: list[str] = []
    if provider:
        judge_args += ["--provider", provider]
    if model:
        judge_args += ["--model", model]
    if base_url:
        judge_args += ["--base-url", base_url]
    from . import cli

    configured = judge_configured(provider) or base_url is not None
    use_standin = standin and not configured
    if use_standin:
        judge_args = ["--provider", STANDIN_PROVIDER]
    ctx = ExampleContext(dir=target, judge=configured or use_standin, judge_args=judge_args, run_cli=cli,
                         standin=use_standin)
    click.echo(f"referee example: files in {target}/")
    if use_standin:
        click.echo(click.style(STANDIN_NOTICE, fg="yellow"))
    outcomes = []
    # The example's runs are recorded in a history of its own (in its folder), never in the user's repository's
    # .referee/ nor a shared store; REFEREE_STORE=off still turns recording off.
    from ..store import current, recording

    with recording(ctx.store_url if current().enabled else None):
        for _name, mod in chosen:
            click.echo("")
            click.echo(click.style(f"== {mod.TITLE}", bold=True))
            outcomes.append((mod.TITLE, mod.run(ctx)))
    click.echo("")
    click.echo(click.style("== Summary", bold=True))
    for title, outcome in outcomes:
        click.echo(f"- {title}: {outcome or 'done'}")
    from ..example.step_90_view import commands_for

    views = commands_for(target)
    if views:  # the last thing printed: where to look next
        click.echo("")
        if len(views) > 1:  # runs over cases of their own: one grid each, not columns of mostly nothing
            click.echo("Runs of other cases, each in a viewer of its own:")
            for v in views[:-1]:
                click.echo(click.style("  " + shlex.join(v), fg="cyan"))
            click.echo("")
        click.echo("Look at the runs and label cases in your browser:")
        click.echo(click.style("  " + shlex.join(views[-1]), fg="cyan"))
    return 0
