"""``referee collect``: receive OpenTelemetry traces over OTLP/HTTP and store them (no suite needed). Listens on
127.0.0.1:4318; another address needs --allow-remote, a bearer token and TLS or a TLS-terminating proxy
(docs/monitoring.md)."""

from __future__ import annotations

import os
import threading
import time

import click

from ..traces import Collector, CollectorConfig, open_sink
from ._common import echo_err


@click.command("collect")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=4318, show_default=True)
@click.option("--allow-remote", is_flag=True, help="Allow an address other than loopback (needs --token and "
                                                   "--tls-cert/--tls-key or --behind-proxy).")
@click.option("--token", default=None, help="Bearer token every request must carry (Authorization: Bearer ...). "
                                            "Env: REFEREE_COLLECT_TOKEN (preferred: a flag shows in ps).")
@click.option("--tls-cert", type=click.Path(exists=True, dir_okay=False), default=None, help="TLS certificate.")
@click.option("--tls-key", type=click.Path(exists=True, dir_okay=False), default=None, help="TLS private key.")
@click.option("--behind-proxy", is_flag=True, help="A TLS-terminating proxy on this host forwards to us.")
@click.option("--max-body-bytes", type=click.IntRange(1), default=16 << 20, show_default=True)
@click.option("--max-spans-per-trace", type=click.IntRange(1), default=10_000, show_default=True,
              help="Spans kept per trace; the rest are counted and the trace is not judged.")
@click.option("--retain-days", type=click.FloatRange(min=0, min_open=True, max=36_525), default=30.0,
              show_default=True, help="Traces whose last span is older are deleted (checked every minute; at most "
                                      "36525, a hundred years, as the monitor's retention.days).")
@click.option("--max-traces", type=click.IntRange(1), default=1_000_000, show_default=True,
              help="Past this many stored traces the oldest are deleted.")
@click.option("--sample-rate", type=click.FloatRange(0, 1), default=None,
              help="Store only this fraction of traces, chosen by a hash of the trace id (the monitor's own rule); "
                   "the others are counted, never stored. Default: every trace.")
@click.option("--store", "store_url", default=None, metavar="URL",
              help="Store URL (default: REFEREE_STORE, else .referee/history.sqlite).")
def command(host: str, port: int, allow_remote: bool, token: str | None, tls_cert: str | None, tls_key: str | None,
            behind_proxy: bool, max_body_bytes: int, max_spans_per_trace: int, retain_days: float, max_traces: int,
            sample_rate: float | None, store_url: str | None) -> int:
    """Receive OTLP/HTTP traces (protobuf or JSON, gzip) on /v1/traces and store every span as it arrives.
    Ctrl-C stops; the counts are printed."""
    token = token or os.environ.get("REFEREE_COLLECT_TOKEN") or None
    config = CollectorConfig(host=host, port=port, allow_remote=allow_remote, token=token, certfile=tls_cert,
                             keyfile=tls_key, behind_proxy=behind_proxy, max_body_bytes=max_body_bytes,
                             sample_rate=sample_rate)
    config.check()
    sink = open_sink(store_url, max_spans_per_trace=max_spans_per_trace)
    with Collector(sink, config) as collector:
        echo_err(f"receiving OTLP/HTTP traces on {collector.endpoint}/v1/traces (Ctrl-C to stop)")
        stop = threading.Event()
        try:
            while not stop.wait(60.0):  # retention, pruned automatically
                sink.prune(older_than_ns=time.time_ns() - int(retain_days * 86400e9), max_traces=max_traces)
        except KeyboardInterrupt:
            pass
        s = collector.stats()
    refused = ", ".join(f"{reason} {n}" for reason, n in sorted(s.refused_requests.items()))
    echo_err(f"{s.requests} request(s), {s.spans_received} span(s) received, {s.spans_stored} stored, "
             f"{s.duplicates} duplicate(s); refused: {sum(s.refused_requests.values())}"
             f"{f' ({refused})' if refused else ''}; busy replies: {s.busy_replies}")
    for reason, n in sorted(sink.counts().items()):
        echo_err(f"  {reason}: {n}")
    return 0
