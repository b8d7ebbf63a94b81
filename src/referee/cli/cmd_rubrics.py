"""``referee rubrics``: list the rubrics and gold criteria files shipped with referee (or show one)."""

from __future__ import annotations

from pathlib import Path

import click

from ..rubrics import list_rubrics, load_rubric


@click.command("rubrics")
@click.argument("name", required=False)
def command(name: str | None) -> int:
    """List shipped rubrics; with NAME, print that rubric's YAML (copy it to write your own)."""
    if name:
        load_rubric(name)  # validates, and names the shipped ones when NAME is unknown
        match = [r for r in list_rubrics() if r.name == name]
        path = Path(match[0].path) if match else Path(name)
        click.echo(path.read_text(encoding="utf-8"), nl=False)
        return 0
    infos = list_rubrics()
    width = max(len(r.name) for r in infos) + 2
    for r in infos:
        click.echo(f"{r.name.ljust(width)}{r.kind:<7}{r.criteria:>3} criteria  {r.description}")
    click.echo("\nUse: referee evaluate OUTPUT --task ... --rubric NAME | referee gold --criteria NAME ...")
    return 0
