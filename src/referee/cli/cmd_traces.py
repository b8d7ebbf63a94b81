"""``referee traces to-cases``: stored production traces -> a case file the offline suite runs."""

from __future__ import annotations

import click

from ..errors import UserError
from ..traces import open_sink, traces_to_cases, write_cases
from ._common import echo_err


@click.group("traces")
def command() -> None:
    """Production traces kept by referee collect / referee monitor."""


@command.command("to-cases")
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False), help="Cases JSONL to write.")
@click.option("--metric", default=None, help="Select on this metric (default: any).")
@click.option("--below", type=click.FloatRange(0, 1), default=None, help="Traces scored under this.")
@click.option("--failed", is_flag=True, help="Traces that failed the metric's threshold.")
@click.option("--errors", is_flag=True, help="Traces with a span whose status is ERROR, scored or not.")
@click.option("--trace", "trace_ids", multiple=True, help="A trace id (an alert's examples); repeatable.")
@click.option("--store", "store_url", default=None, metavar="URL",
              help="Store URL (default: REFEREE_STORE, else .referee/history.sqlite).")
def to_cases(out: str, metric: str | None, below: float | None, failed: bool, errors: bool,
             trace_ids: tuple[str, ...], store_url: str | None) -> int:
    """Turn selected traces (low scores, failed, with an error span, named) into cases, redaction already
    applied when stored."""
    if below is None and not failed and not errors and not trace_ids:
        raise UserError("choose traces: --below SCORE, --failed, --errors or --trace ID")
    sink = open_sink(store_url, create=False)  # reading: a store that is not there is said, never made
    cases = traces_to_cases(sink, metric=metric, below=below, failed=failed,
                            trace_ids=list(trace_ids), errors=errors)
    if not cases:  # a file written empty would replace the cases an earlier selection wrote there
        where = sink.store.display_url  # a StoreSink: create=False never reads a store turned off as empty
        if not sink.recent_traces(1):  # most often the collector wrote to another store
            why = (f"{where} holds no traces (`referee collect` and `referee monitor` store them where --store or "
                   "REFEREE_STORE says)")
        elif (below is not None or failed) and not sink.scores():
            why = f"no trace in {where} has a stored score (`referee monitor` scores them)"
        else:
            why = "no stored trace matched"
        echo_err(f"{why}: {out} not written")
        return 1
    write_cases(cases, out)
    echo_err(f"{len(cases)} trace(s) -> {out}")
    return 0
