"""``referee import FILES --out cases.jsonl``: recorded agent runs (OpenAI / Anthropic messages, OTel GenAI
spans) -> trajectory cases in the seed's shape ``{id, input, trajectory: [{step, tool, args, ...}], final_output}``
(the reading is :func:`referee.trajectories.import_runs`)."""

from __future__ import annotations

import click

from ..errors import UserError
from ..trajectories import FORMATS, import_runs
from ._common import echo_err


@click.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False), help="Cases JSONL to write.")
@click.option("--format", "fmt", type=click.Choice(["auto", *FORMATS[1:]]), default="auto", show_default=True,
              help="Format of the recorded runs (auto: detected per run).")
def command(files: tuple[str, ...], out: str, fmt: str) -> int:
    """Convert recorded agent runs into trajectory cases. A JSON file is one run (messages list,
    {messages: [...]}, or an OTLP/JSON span export); in a JSONL file each line is a run, optionally
    {id, input, messages|spans, ...}. A run that cannot be read is reported (file, line, step) and skipped."""
    result = import_runs(files, fmt)
    for why in result.skipped:
        echo_err(f"skipped: {why}")
    cases = result.cases
    failed = len(result.skipped)
    if not cases:
        raise UserError(f"no run could be imported ({failed} skipped)")
    result.write(out)
    echo_err(f"{len(cases)} trajectory case(s) -> {out}" + (f"; {failed} skipped" if failed else ""))
    return 0
