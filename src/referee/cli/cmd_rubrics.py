"""``referee rubrics``: list the rubrics and gold criteria files shipped with referee (or show one)."""

from __future__ import annotations

import click

from ..rubrics import list_rubrics, rubric_source


@click.command("rubrics")
@click.argument("name", required=False)
def command(name: str | None) -> int:
    """List shipped rubrics; with NAME, print that rubric's YAML (copy it to write your own)."""
    if name:
        click.echo(rubric_source(name), nl=False)
        return 0
    infos = list_rubrics()
    width = max(len(r.name) for r in infos) + 2
    for r in infos:
        click.echo(f"{r.name.ljust(width)}{r.kind:<7}{r.criteria:>3} criteria  {r.description}")
    click.echo("\nUse: referee evaluate OUTPUT --task ... --rubric NAME | referee gold --criteria NAME ...")
    return 0
