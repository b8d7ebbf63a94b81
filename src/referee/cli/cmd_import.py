"""``referee import FILES --out cases.jsonl``: recorded agent runs (OpenAI / Anthropic messages, OTel GenAI
spans) -> trajectory cases in the seed's shape ``{id, input, trajectory: [{step, tool, args, ...}], final_output}``
(the reading is :func:`referee.trajectories.import_runs`); ``--format ragas|deepeval``: those tools' RAG evaluation
files -> cases with ``contexts`` (:func:`referee.cases.import_rag_cases`)."""

from __future__ import annotations

import click

from ..cases import RAG_FORMATS, CaseSet, import_rag_cases, write_cases
from ..errors import UserError
from ..trajectories import FORMATS, import_runs
from ._common import echo_err


@click.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False), help="Cases JSONL to write.")
@click.option("--format", "fmt", type=click.Choice(["auto", *FORMATS[1:], *RAG_FORMATS]), default="auto", show_default=True,
              help="Format of the recorded runs (auto: detected per run); ragas or deepeval: a RAG evaluation "
                   "file (JSONL, JSON, CSV, Parquet) -> cases with contexts.")
def command(files: tuple[str, ...], out: str, fmt: str) -> int:
    """Convert recorded agent runs into trajectory cases. A JSON file is one run (messages list,
    {messages: [...]}, or an OTLP/JSON span export); in a JSONL file each line is a run, optionally
    {id, input, messages|spans, ...}. A run that cannot be read is reported (file, line, step) and skipped.
    With --format ragas or deepeval, each FILE holds RAG samples; a bad record stops the import naming file, line
    and field."""
    if fmt in RAG_FORMATS:
        loaded = [import_rag_cases(f, fmt) for f in files]  # every file is read before anything is written
        said = [w for cs in loaded for w in cs.warnings]
        for w in said[:20]:
            echo_err(f"warning: {w}")
        if len(said) > 20:
            echo_err(f"warning: ... and {len(said) - 20} more records giving one field twice")
        ids = [c.id for cs in loaded for c in cs]
        if len(set(ids)) != len(ids):
            raise UserError("the files repeat case ids: give each record an id, or import one file at a time")
        n = write_cases(CaseSet(path=out, cases=[c for cs in loaded for c in cs]), out)
        echo_err(f"{n} {fmt} case(s) -> {out}")
        return 0
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
