"""Benchmark: `referee collect` into the store (SQLite), fed OTLP/HTTP protobuf bodies that the OpenTelemetry SDK
encoded, replayed by a lean HTTP client (keep-alive connections, one thread each); then the end-to-end rate with the
SDK's own exporter as the client. Target: >= 20,000 spans/s on 2 cores under 300 MB RSS (the receiver process).

    .venv/bin/python bench/bench_collect.py [--spans 200000] [--batch 512] [--clients 2]
"""

from __future__ import annotations

import argparse
import http.client
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

TARGET_SPANS_S = 20_000
TARGET_RSS_MB = 300


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def sdk_bodies(n_spans: int, batch: int) -> list[bytes]:
    """ExportTraceServiceRequest bodies encoded by the SDK: agent traces of 3 GenAI spans each."""
    import json

    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exp = InMemorySpanExporter()
    tp = TracerProvider(resource=Resource.create({"service.name": "bench"}))
    tp.add_span_processor(SimpleSpanProcessor(exp))
    t = tp.get_tracer("bench")
    msgs = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Where is my refund for order 1234?"}]}])
    out_msgs = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "It was sent on Monday."}]}])
    for i in range(n_spans // 3):
        with t.start_as_current_span("invoke_agent support", attributes={"gen_ai.operation.name": "invoke_agent"}):
            with t.start_as_current_span("execute_tool lookup", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup",
                    "gen_ai.tool.call.arguments": f'{{"order": {i}}}', "gen_ai.tool.call.result": '{"sent": "Monday"}'}):
                pass
            with t.start_as_current_span("chat m", attributes={
                    "gen_ai.operation.name": "chat", "gen_ai.input.messages": msgs, "gen_ai.output.messages": out_msgs,
                    "gen_ai.usage.input_tokens": 40, "gen_ai.usage.output_tokens": 9}):
                pass
    spans = exp.get_finished_spans()
    return [encode_spans(spans[i:i + batch]).SerializeToString() for i in range(0, len(spans), batch)]


def rss_peak_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def replay(port: int, bodies: list[bytes], clients: int) -> float:
    def worker(part: list[bytes]) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        for body in part:
            while True:
                try:
                    conn.request("POST", "/v1/traces", body=body,
                                 headers={"Content-Type": "application/x-protobuf"})
                    r = conn.getresponse()
                    r.read()
                except (ConnectionError, http.client.HTTPException):
                    # A busy receiver replies 503 and closes without reading the body: reconnect and retry.
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                    continue
                if r.status == 200:
                    break
                if r.status not in (429, 503):
                    raise SystemExit(f"collector replied {r.status}")
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                time.sleep(float(r.getheader("Retry-After") or 1) / 10)  # back-pressure: retry soon
        conn.close()

    threads = [threading.Thread(target=worker, args=(bodies[i::clients],)) for i in range(clients)]
    start = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return time.perf_counter() - start


def sdk_end_to_end(port: int, n_spans: int) -> float:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    tp = TracerProvider()
    tp.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces"),
                                             max_queue_size=n_spans, max_export_batch_size=512))
    t = tp.get_tracer("bench")
    start = time.perf_counter()
    for i in range(n_spans):
        with t.start_as_current_span("chat m", attributes={"gen_ai.operation.name": "chat", "i": i}):
            pass
    tp.force_flush(300_000)
    elapsed = time.perf_counter() - start
    tp.shutdown()
    return elapsed


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--spans", type=int, default=200_000)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--sdk-spans", type=int, default=30_000)
    args = ap.parse_args()
    t0 = time.perf_counter()
    bodies = sdk_bodies(args.spans, args.batch)
    n = args.spans // 3 * 3
    encode_s = time.perf_counter() - t0
    print(f"the SDK made and encoded {n} spans in {len(bodies)} bodies in {encode_s:.1f} s "
          f"({n / encode_s:,.0f} spans/s; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    with tempfile.TemporaryDirectory() as tmp:
        port = _free_port()
        url = f"sqlite:///{tmp}/history.sqlite"
        env = {**os.environ, "REFEREE_STORE": url}
        proc = subprocess.Popen([sys.executable, "-m", "referee", "collect", "--port", str(port), "--store", url],
                                env=env, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            assert proc.stderr is not None
            proc.stderr.readline()  # "receiving ..." once it listens
            wall = replay(port, bodies, args.clients)
            rss = rss_peak_mb(proc.pid)
            sdk = sdk_end_to_end(port, args.sdk_spans)
        finally:
            proc.terminate()
            proc.wait(30)
            if proc.stderr is not None:
                proc.stderr.close()
    rate = n / wall
    print(f"replayed SDK-encoded bodies: {n} spans in {wall:.2f} s = {rate:,.0f} spans/s into the store "
          f"(target >= {TARGET_SPANS_S:,}); receiver peak RSS {rss:.0f} MB (target < {TARGET_RSS_MB})")
    print(f"receiver into the store / the SDK making the same spans, same machine, same run: "
          f"{rate / (n / encode_s):.2f}x")
    print(f"SDK exporter as the client (end to end, encoding included): {args.sdk_spans} spans in {sdk:.2f} s = "
          f"{args.sdk_spans / sdk:,.0f} spans/s")
    return 0 if rate >= TARGET_SPANS_S and rss < TARGET_RSS_MB else 1


if __name__ == "__main__":
    sys.exit(main())
