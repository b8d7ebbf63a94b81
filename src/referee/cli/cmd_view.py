"""``referee view [RESULTS...]``: browse runs (or the run history), compare two, and label cases for ``referee
calibrate`` in a browser."""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

import click

from ..aggregate import PASS_RULES
from ..errors import UserError
from ..stats import DEFAULT_N_BOOT
from ._common import echo_err

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


@click.command("view")
@click.argument("results", nargs=-1, type=click.Path())
@click.option("--store", "store_url", default=None, metavar="URL",
              help="The run history to show: a SQLite file or sqlite:///path, or postgresql://... (default, with "
                   "no RESULTS: REFEREE_STORE, else .referee/history.sqlite).")
@click.option("--reviewer", default=None, metavar="NAME",
              help="Your name, saved with each label you give (the page's reviewer box starts with it).")
@click.option("--reviewers", "reviewers_per_case", type=click.IntRange(1, 20), default=1, show_default=True,
              metavar="K",
              help="Reviewers each case asks for: a review queue offers you the cases you have not labelled that "
                   "fewer than K reviewers have; with K > 1 the page shows each reviewer only their own labels, "
                   "and the run page shows the reviewers' agreement with each other beside the judge's.")
@click.option("--cases", "cases", multiple=True, metavar="[RUN=]FILE",
              help="Cases file the runs were judged on, to show inputs and outputs (default: each run's own: a "
                   "target's outputs, the cases a Python run wrote, the file its manifest names). RUN=FILE binds "
                   "it to one run (RUN: the results file's name, stem or position). Repeatable.")
@click.option("--labels", default=None, type=click.Path(dir_okay=False),
              help="Where human labels go (one results file only; default: RESULTS.labels.jsonl beside it).")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
              help="Port to listen on; 0 picks a free one (the URL is printed).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on. Anything but loopback shows your results to the network.")
@click.option("--open", "open_browser", is_flag=True, help="Open the viewer in the default browser.")
@click.option("--threshold", type=click.FloatRange(0, 1), default=0.7, show_default=True,
              help="A case passes when score >= this (as referee score).")
@click.option("--pass-rule", type=click.Choice(PASS_RULES), default="threshold", show_default=True,
              help="As referee score --pass-rule.")
@click.option("--n-boot", type=click.IntRange(100), default=DEFAULT_N_BOOT, show_default=True,
              help="Bootstrap resamples for the summary's intervals.")
def command(results: tuple[str, ...], store_url: str | None, reviewer: str | None, reviewers_per_case: int,
            cases: tuple[str, ...],
            labels: str | None, port: int, host: str, open_browser: bool, threshold: float, pass_rule: str,
            n_boot: int) -> int:
    """Open a local web app over RESULTS (results files, or a run folder such as referee run's results/): a grid
    of cases x runs with each output, the summary of referee score with charts, a filterable table of cases,
    one case in full, two runs compared, and human review whose labels `referee calibrate` reads unchanged.

    With no RESULTS it opens the run history (the store referee run records into, or --store URL): the runs
    with filters, a trend per metric across commits, and any stored run opened or two compared.

    Serves on 127.0.0.1 only unless --host says otherwise. Stop with Ctrl-C.
    """
    from ..view import MAX_REVIEWER, ViewOptions, ViewServer, build_app, close_app, open_history

    if reviewer is not None and (not reviewer.strip() or len(reviewer) > MAX_REVIEWER):
        raise UserError(f"--reviewer needs a name of 1 to {MAX_REVIEWER} characters")
    if not results and cases:
        raise UserError("--cases goes with RESULTS files (a stored run is opened with its own cases)")
    if not results and labels:
        raise UserError("--labels goes with one RESULTS file (a stored run's labels go beside its export)")
    t0 = time.perf_counter()
    history = open_history(store_url) if (store_url is not None or not results) else None
    try:
        app = build_app(list(results), cases=list(cases), labels=labels,
                        opts=ViewOptions(threshold=threshold, pass_rule=pass_rule, n_boot=n_boot), index_now=False)
    except BaseException:
        if history is not None:
            history.close()
        raise
    app.history = history
    app.reviewer = reviewer.strip() if reviewer else None
    app.reviewers_per_case = reviewers_per_case
    try:
        try:
            server = ViewServer(app, host, port)
        except OSError as exc:
            hint = "; --port 0 picks a free port" if port else ""
            raise UserError(f"cannot listen on {host}:{port}: {exc.strerror or exc}{hint}") from exc
        if host not in _LOOPBACK:
            echo_err(f"warning: listening on {host}: anyone who can reach this machine on port {server.port} "
                     "can read these results and post labels (there is no login)")
        for w in app.warnings:
            echo_err(f"warning: {w}")
        rows = sum(len(r.table) for r in app.runs.values())
        for r in app.runs.values():
            for w in r.table.warnings[:5]:
                echo_err(f"warning: {w}")
        if history is not None:
            click.echo(f"referee view: the run history in {history.display} "
                       f"({history.store.count_runs()} run(s) stored)")
        if app.runs or history is None:
            click.echo(f"referee view: {len(app.runs)} run(s), {rows} rows, ready in {time.perf_counter() - t0:.2f} s")
        for k in app.order:
            click.echo(f"  labels of {app.runs[k].path.name} go to {app.labels[k].path}")
        click.echo(f"serving on {server.url} (127.0.0.1 only)" if host in _LOOPBACK else f"serving on {server.url}")
        click.echo("press Ctrl-C to stop", err=True)
        app.warm_compare()  # the compare link's two runs, ready before the click on a large run (before the
        for run in app.runs.values():  # row indexes, which hold the interpreter for long stretches)
            run.start_indexing()
        if open_browser:
            import webbrowser

            webbrowser.open(server.url)
        _stop_on_sigterm()
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            click.echo("stopped", err=True)
        finally:
            server.server_close()
    finally:
        close_app(app)
    return 0


def _stop_on_sigterm() -> None:
    """SIGTERM stops the viewer as Ctrl-C does, so the labels lock is released and its file removed."""
    if threading.current_thread() is not threading.main_thread():
        return

    def _raise(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _raise)
