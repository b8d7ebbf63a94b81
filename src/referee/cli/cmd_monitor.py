"""``referee monitor SUITE``: online evaluation of production traces (docs/monitoring.md). Receives OTLP/HTTP on
127.0.0.1:4318 (``--port``), or replays recorded OTLP exports (``--replay``, with ``--once`` to evaluate them and
exit), and evaluates the suite's ``monitor:`` traces with its evaluators through the one runner."""

from __future__ import annotations

import threading
import time

import click

from ..reports import columns, pad_columns, terminal_width
from ..traces import (
    Monitor,
    load_monitor,
    offline_note,
    open_sink,
    replay,
    summarize,
    traces_to_cases,
    write_cases,
)
from . import keep_until_exit
from ._common import JudgeOptions, api_judge, echo_err, flag_errors, judge_options


def _table(monitor: Monitor) -> None:
    rows = summarize(monitor.sink, monitor.metrics)
    click.echo(f"{'metric':<24} {'scored':>7} {'mean':>6} {'pass':>6} {'unscored':>9}")
    for r in rows:
        mean = f"{r.mean:.3f}" if r.mean is not None else "-"
        rate = f"{r.pass_rate:.0%}" if r.pass_rate is not None else "-"
        click.echo(f"{pad_columns(r.metric, 24)} {r.scored:>7} {mean:>6} {rate:>6} {r.unscored:>9}")
    for r in rows:  # context, never the reference: curated cases and production traffic differ
        note = offline_note(monitor.offline(r.metric))
        if note:
            click.echo(f"{r.metric}: {note}")
    counts = monitor.counts()
    if counts:  # a reason is never split across lines; the line breaks between them at the terminal's width
        width, line = terminal_width(), "counts:"
        items = [f"{k} {v}" for k, v in sorted(counts.items())]
        for i, item in enumerate(items):
            item += "," if i < len(items) - 1 else ""
            if line.strip() and columns(line) + 1 + columns(item) > width:
                click.echo(line)
                line = " "
            line += " " + item
        click.echo(line)
    for a in monitor.alerts:
        click.echo(a.message())


@click.command("monitor")
@click.argument("suite", type=click.Path(exists=True, dir_okay=False))
@click.option("--replay", "replays", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Recorded OTLP trace export(s) to evaluate: .json (OTLP/JSON), .jsonl (one request a line) or "
                   "protobuf.")
@click.option("--once", is_flag=True, help="Evaluate what is stored and replayed now, print the summary and exit "
                                          "(no receiver).")
@click.option("--port", type=click.IntRange(0, 65535), default=4318, show_default=True,
              help="Port of the OTLP/HTTP receiver on 127.0.0.1 (use `referee collect` for other addresses).")
@click.option("--to-cases", "to_cases", type=click.Path(dir_okay=False), default=None,
              help="At exit, write the traces scored under --below (or failed) as a case file.")
@click.option("--below", type=click.FloatRange(0, 1), default=None, help="With --to-cases: score under this.")
@click.option("--store", "store_url", default=None, metavar="URL",
              help="Where spans and scores are kept (sqlite:///file or postgresql://...; default: REFEREE_STORE, "
                   "else .referee/history.sqlite). A restart resumes from it.")
@judge_options(default_provider="anthropic")
def command(suite: str, replays: tuple[str, ...], once: bool, port: int, to_cases: str | None,
            below: float | None, store_url: str | None, judge: JudgeOptions) -> int:
    """Evaluate production traces as they arrive: sampled by the suite's monitor: rules, judged by its
    evaluators, one score per trace and evaluator, alerts on a drop; scores go to the export endpoint as
    gen_ai.evaluation.result events. Every trace not evaluated is counted by reason."""
    config, _file_judge, redactor = load_monitor(suite)
    sink = open_sink(store_url)
    with flag_errors():
        j = api_judge(judge)
    monitor = Monitor(sink, config, judge=j)
    if replays:
        n = replay(replays, sink, redactor, received_ns=time.time_ns(), sample_rate=config.ingest_rate)
        echo_err(f"{n} span(s) replayed from {len(replays)} file(s)")
    if once:
        # Stored and recorded traces are complete: no quiet period to wait for.
        config.quiet_seconds = 0.0
        with flag_errors():
            while (report := monitor.step()).traces:
                if report.judge_unavailable:  # another pass now would fail the same way
                    echo_err(f"the judge is unavailable ({report.judge_unavailable}); the traces not scored wait "
                             "for the next run")
                    break
    else:
        from ..traces import Collector, CollectorConfig  # an HTTP server: not loaded to replay files --once

        stop = threading.Event()
        with Collector(sink, CollectorConfig(port=port, redactor=redactor,
                                             sample_rate=config.ingest_rate)) as collector:
            echo_err(f"receiving OTLP/HTTP traces on {collector.endpoint}/v1/traces (Ctrl-C to stop)")
            try:
                while not stop.is_set():
                    with flag_errors():
                        monitor.step()
                    stop.wait(1.0)
            except KeyboardInterrupt:
                pass
    keep_until_exit(monitor)  # its traces and last pass: freeing 4,000 of them at return took 20 ms
    _table(monitor)
    if to_cases:
        cases = traces_to_cases(sink, below=below, failed=below is None)
        if cases:
            write_cases(cases, to_cases)
            echo_err(f"{len(cases)} trace(s) -> {to_cases}")
        else:  # a file written empty would replace the cases an earlier selection wrote there
            echo_err(f"no trace matched: {to_cases} not written")
    scored = sum(r.scored for r in summarize(sink, monitor.metrics))
    if scored == 0:
        echo_err("nothing was scored")
        return 1
    return 0
