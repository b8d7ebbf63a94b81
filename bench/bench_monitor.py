"""Benchmark: online evaluation (`referee monitor --replay ... --once`) against `referee judge` on the same cases,
the same template and the same local server (``python -m referee.testing --fast`` with a fixed latency). The
traces are made by the OpenTelemetry SDK and written as OTLP/JSON; the cases `referee judge` gets are those traces
read by the same mapping. Target: the monitor's wall time within 2% of `referee judge`'s.

    .venv/bin/python bench/bench_monitor.py [--n 500] [--latency 0.1] [--concurrency 32] [--runs 3]
    .venv/bin/python bench/bench_monitor.py --sizes 500,2000 --runs 3   # also: fixed start-up + cost per trace
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_judge import TEMPLATE, _compile_referee, _start_server  # noqa: E402 - bench_judge's server and template


def make_traces(folder: Path, n: int) -> tuple[Path, Path]:
    from google.protobuf import json_format
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from referee.traces import MemorySink, Redactor, replay
    from referee.trajectories import case_from_spans

    exp = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exp))
    t = tp.get_tracer("bench")
    for i in range(n):
        with t.start_as_current_span("chat m", attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [
                    {"type": "text", "content": f"How do I reset my password? (#{i})"}]}]),
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
                    {"type": "text", "content": "Go to Settings > Security > Reset password."}]}])}):
            pass
    doc = json_format.MessageToDict(encode_spans(exp.get_finished_spans()))
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for sp in ss["spans"]:
                for k in ("traceId", "spanId"):
                    sp[k] = base64.b64decode(sp[k]).hex()
    traces = folder / "traces.otlp.json"
    traces.write_text(json.dumps(doc))
    sink = MemorySink()
    replay([traces], sink, Redactor(), received_ns=time.time_ns())
    cases = folder / "cases.jsonl"
    with open(cases, "w") as f:
        for tid in sink.quiet_traces(before_ns=time.time_ns() + 1, limit=n):
            f.write(json.dumps(case_from_spans(sink.trace_spans(tid), case_id=tid)) + "\n")
    return traces, cases


def write_suite(folder: Path, n: int) -> None:
    """The judge's template (``judge.md``) and the monitor's suite (``monitor.yaml``) judging with it: the same
    calls for both commands, one pass over ``n`` traces."""
    (folder / "judge.md").write_text(TEMPLATE, encoding="utf-8")
    (folder / "monitor.yaml").write_text(
        f"evaluators:\n  - llm_judge: {{template_file: {folder / 'judge.md'}}}\n"
        f"monitor:\n  batch: {n}\n  quiet_seconds: 0\n", encoding="utf-8")


def timed(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return time.perf_counter() - t0


def measure(url: str, n: int, runs: int, concurrency: int) -> tuple[list[float], list[float]]:
    """``runs`` interleaved (``referee judge``, ``referee monitor``) wall times on ``n`` traces, in pairs."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        traces, cases = make_traces(folder, n)
        write_suite(folder, n)
        env = {**os.environ, "OPENAI_API_KEY": "sk-bench-not-a-real-key", "REFEREE_STORE": "off"}
        judge_flags = ["--provider", "openai", "--base-url", url + "/v1", "--model", "bench-judge",
                       "--concurrency", str(concurrency), "--no-cache"]
        ref = [sys.executable, "-m", "referee"]
        judge_s, monitor_s = [], []
        for _ in range(runs):
            judge_s.append(timed([*ref, "judge", str(cases), "--template", str(folder / "judge.md"), "--out",
                                  str(folder / "r.jsonl"), *judge_flags], env))
            (folder / "r.jsonl").unlink()
            monitor_s.append(timed([*ref, "monitor", str(folder / "monitor.yaml"), "--replay", str(traces),
                                    "--once", *judge_flags], env))
    return judge_s, monitor_s


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--sizes", default=None, metavar="N1,N2",
                    help="two or more sizes: also split the monitor's extra time into a fixed start-up and a cost "
                         "per trace (a least-squares line through the sizes), against the judge's time per case")
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-compile", action="store_true",
                    help="do not byte-compile referee's modules first (an editable install under "
                         "PYTHONDONTWRITEBYTECODE=1: every start then compiles them from source, the monitor more "
                         "of them than `referee judge`)")
    a = ap.parse_args()
    sizes = [int(x) for x in a.sizes.split(",")] if a.sizes else [a.n]
    if len(set(sizes)) != len(sizes) or min(sizes) < 1 or (a.sizes and len(sizes) < 2):
        ap.error("--sizes takes two or more different whole numbers, e.g. 500,2000")
    if not a.no_compile:
        _compile_referee()  # as installing a wheel does
    server, url = _start_server(a.latency)
    try:
        got = {n: measure(url, n, a.runs, a.concurrency) for n in sizes}
    finally:
        server.terminate()
        server.wait(30)
        if server.stdout is not None:
            server.stdout.close()
    print(f"latency {a.latency} s, concurrency {a.concurrency}, {a.runs} interleaved pairs a size; "
          f"load average {os.getloadavg()[0]:.1f}")
    worst = 0.0
    for n, (js, ms) in got.items():
        # The pair's ratio: one pair's two runs share the machine's minute, so the ratio of a pair varies less
        # than either run's time (whose spread at these sizes is as large as the difference measured).
        j, m = statistics.median(js), statistics.median(ms)
        ratio = statistics.median(mm / jj for jj, mm in zip(js, ms, strict=True))
        print(f"N={n}: referee judge {j:.2f} s, referee monitor {m:.2f} s (medians; replay + evaluate + summary), "
              f"monitor / judge {ratio:.3f} (median of the pairs' ratios; target <= 1.02; ideal "
              f"{n * a.latency / a.concurrency:.2f} s)")
        worst = max(worst, ratio)
    if len(sizes) >= 2:
        extra = [(n, statistics.median(mm - jj for jj, mm in zip(js, ms, strict=True))) for n, (js, ms) in got.items()]
        per_trace, fixed = _line(extra)
        per_case, _ = _line([(n, statistics.median(js)) for n, (js, _ms) in got.items()])
        print(f"monitor's extra time (median of the pairs' differences, a line through the sizes): {fixed:.3f} s fixed "
              f"+ {per_trace * 1e3:.3f} ms per trace; referee judge "
              f"{per_case * 1e3:.2f} ms per case: the per-trace cost is {100 * per_trace / per_case:.1f}% of it")
    return 0 if worst <= 1.02 else 1


def _line(points: list[tuple[int, float]]) -> tuple[float, float]:
    """(slope, intercept) of the least-squares line through ``points``."""
    xs, ys = [float(x) for x, _ in points], [y for _, y in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)
    return slope, my - slope * mx


if __name__ == "__main__":
    sys.exit(main())
