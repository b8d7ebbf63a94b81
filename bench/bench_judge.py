"""Judge throughput: N cases against a local OpenAI-compatible server that answers after a fixed latency.

The fake server runs in its own process (``python -m referee.testing``) so its CPU is not counted; referee runs
as ``referee judge`` in a subprocess, and its CPU is that child's user+sys time (``RUSAGE_CHILDREN`` measured
around that one child only). Prints wall / ideal (ideal = N x latency / concurrency) and referee's CPU seconds
per 1000 judged cases.

    .venv/bin/python bench/bench_judge.py [--n 1000] [--latency 0.2] [--concurrency 32] [--runs 1]
    .venv/bin/python bench/bench_judge.py --scenario both --runs 5   # the README's two rows: N=1000 at
                                                                     # concurrency 32, N=10,000 at 256

Targets: wall / ideal <= 1.05 at N=1000/c32 and <= 1.10 at N=10,000/c256. The load average is printed
before and after: wall time is only meaningful on a quiet machine (the CPU figure much less sensitive).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TEMPLATE = """You are grading a customer-support answer.

<input>
{input}
</input>

<output>
{output}
</output>

Reply with JSON: {"accuracy": {"score": 0.0-1.0, "rationale": "..."}, "overall_score": 0.0-1.0}
"""


def _start_server(latency: float) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "referee.testing", "--fast", "--latency", str(latency)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url.startswith("http"):
        proc.kill()
        raise SystemExit(f"fake server did not start (got {url!r})")
    return proc, url


def _write_inputs(folder: Path, n: int) -> tuple[Path, Path]:
    cases = folder / "cases.jsonl"
    with open(cases, "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"case-{i:05d}", "input": f"How do I reset my password? (#{i})",
                                "output": "Go to Settings > Security > Reset password and follow the email link.",
                                "category": ["billing", "account", "shipping"][i % 3]}) + "\n")
    template = folder / "judge.md"
    template.write_text(TEMPLATE, encoding="utf-8")
    return cases, template


# The peer: the official OpenAI SDK making the same calls (same messages, json_schema response_format), parsing
# each reply's JSON and nothing else: no template filling, rows, files or cache. Run with --sdk-python.
_SDK_SCRIPT = r"""
import asyncio, json, sys
from openai import AsyncOpenAI

N, CONC, URL = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
SCHEMA = {"type": "object", "properties": {"overall_score": {"type": "number"}}, "required": ["overall_score"]}

async def main():
    client = AsyncOpenAI(base_url=URL, api_key="sk-bench-not-a-real-key", max_retries=4, timeout=60)
    sem = asyncio.Semaphore(CONC)
    async def one(i):
        async with sem:
            r = await client.chat.completions.create(
                model="bench-judge", max_tokens=1024,
                messages=[{"role": "system", "content": "You are a careful evaluation judge."},
                          {"role": "user", "content": f"Grade case {i}: How do I reset my password?"}],
                response_format={"type": "json_schema",
                                 "json_schema": {"name": "verdict", "schema": SCHEMA, "strict": False}})
            return json.loads(r.choices[0].message.content)["overall_score"]
    scores = await asyncio.gather(*(one(i) for i in range(N)))
    assert len(scores) == N
    await client.close()

asyncio.run(main())
"""


def run_sdk(python: str, n: int, concurrency: int, url: str) -> dict[str, float]:
    cpu0 = _child_cpu()
    t0 = time.perf_counter()
    done = subprocess.run([python, "-c", _SDK_SCRIPT, str(n), str(concurrency), url + "/v1"], capture_output=True,
                          text=True)
    wall = time.perf_counter() - t0
    cpu = _child_cpu() - cpu0
    if done.returncode != 0:
        raise SystemExit(f"the SDK peer failed:\n{done.stderr}")
    return {"wall_s": wall, "cpu_s": cpu}


def _child_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_once(n: int, latency: float, concurrency: int, url: str, folder: Path,
             extra: list[str]) -> dict[str, float]:
    cases, template = _write_inputs(folder, n)
    out = folder / "results.jsonl"
    for p in (out, out.with_name("results.manifest.json")):
        p.unlink(missing_ok=True)
    referee = Path(sys.executable).with_name("referee")
    cmd = [str(referee) if referee.exists() else sys.executable, *([] if referee.exists() else ["-m", "referee"]),
           "judge", str(cases), "--template", str(template), "--out", str(out),
           "--provider", "openai", "--base-url", url + "/v1", "--model", "bench-judge",
           "--concurrency", str(concurrency), "--no-cache", *extra]
    env = {**os.environ, "OPENAI_API_KEY": "sk-bench-not-a-real-key"}
    cpu0 = _child_cpu()  # the server child is still running, so its CPU is not in RUSAGE_CHILDREN yet
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    cpu = _child_cpu() - cpu0
    if done.returncode != 0:
        raise SystemExit(f"referee judge exited {done.returncode}:\n{done.stderr}")
    scored = sum(1 for line in out.read_text().splitlines() if '"score"' in line)
    if scored != n:
        raise SystemExit(f"expected {n} scored rows, found {scored}:\n{done.stderr}")
    return {"wall_s": wall, "cpu_s": cpu, "scored": scored}


def _median(results: list[dict[str, float]]) -> dict[str, float]:
    ordered = sorted(results, key=lambda r: r["wall_s"])
    return ordered[len(ordered) // 2]


def _load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


# The targets for the two scenarios the README reports (wall / ideal); any other is held to 1.10.
TARGETS = {(1000, 32): 1.05, (10_000, 256): 1.10}
SCENARIOS = {"1000x32": (1000, 32), "10000x256": (10_000, 256)}


def measure(n: int, concurrency: int, args: argparse.Namespace, url: str, extra: list[str]) -> dict[str, Any]:
    ideal = n * args.latency / concurrency
    floor = math.ceil(n / concurrency) * args.latency  # a zero-overhead client: whole waves of requests
    results = []
    sdk = []
    loads = [_load()]
    with tempfile.TemporaryDirectory(prefix="referee-bench-") as tmp:
        for i in range(args.runs):
            r = run_once(n, args.latency, concurrency, url, Path(tmp), extra)
            results.append(r)
            loads.append(_load())
            if args.runs > 1 and not args.json:
                print(f"  run {i + 1}: wall {r['wall_s']:.2f} s ({r['wall_s'] / ideal:.3f} x ideal), CPU {r['cpu_s']:.2f} s"
                      f"  (load {loads[-1]})", flush=True)
            if args.sdk_python:
                sdk.append(run_sdk(args.sdk_python, n, concurrency, url))
    med = _median(results)
    best = min(results, key=lambda r: r["wall_s"])
    target = TARGETS.get((n, concurrency), 1.10)
    summary: dict[str, Any] = {
        "n": n, "latency_s": args.latency, "concurrency": concurrency, "ideal_s": round(ideal, 3),
        "floor_s": round(floor, 3), "floor_over_ideal": round(floor / ideal, 3),
        "wall_s": round(med["wall_s"], 3), "wall_over_ideal": round(med["wall_s"] / ideal, 3),
        "target_over_ideal": target,
        "cpu_s": round(med["cpu_s"], 3), "cpu_s_per_1000": round(med["cpu_s"] * 1000 / n, 3),
        "runs": args.runs, "best_wall_s": round(best["wall_s"], 3),
        "best_wall_over_ideal": round(best["wall_s"] / ideal, 3), "load_before": loads[0], "load_after": loads[-1],
    }
    if sdk:
        peer = _median(sdk)
        summary.update(sdk_wall_s=round(peer["wall_s"], 3), sdk_cpu_s_per_1000=round(peer["cpu_s"] * 1000 / n, 3))
    return summary


def report(summary: dict[str, Any]) -> None:
    n, c = summary["n"], summary["concurrency"]
    print(f"referee judge: {n} cases, server latency {summary['latency_s']:g}s, concurrency {c}, --no-cache "
          f"(median of {summary['runs']} run(s); load average {summary['load_before']} before, "
          f"{summary['load_after']} after)")
    print(f"  wall      {summary['wall_s']:.2f} s   ideal {summary['ideal_s']:.2f} s   wall/ideal "
          f"{summary['wall_over_ideal']:.3f}   (target <= {summary['target_over_ideal']:.2f}; a zero-overhead client "
          f"needs whole waves: {summary['floor_s']:.2f} s = {summary['floor_over_ideal']:.3f} x)")
    print(f"  CPU       {summary['cpu_s']:.2f} s   = {summary['cpu_s_per_1000']:.2f} CPU-s per 1000 judged cases")
    if summary["runs"] > 1:
        print(f"  best run  {summary['best_wall_s']:.2f} s wall   wall/ideal {summary['best_wall_over_ideal']:.3f}")
    if "sdk_wall_s" in summary:
        print(f"  peer: official OpenAI SDK, same calls only: wall {summary['sdk_wall_s']:.2f} s, "
              f"{summary['sdk_cpu_s_per_1000']:.2f} CPU-s per 1000 calls")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--scenario", choices=(*SCENARIOS, "both"), default=None,
                    help="the README's scenarios: 1000x32 (N=1000, concurrency 32), 10000x256 (N=10,000, "
                         "concurrency 256) or both, one after the other (overrides --n and --concurrency)")
    ap.add_argument("--runs", type=int, default=1, help="repeat the measurement; the median is reported")
    ap.add_argument("--json", action="store_true", help="print one JSON object per scenario instead of text")
    ap.add_argument("--sdk-python", default=None, metavar="PYTHON",
                    help="also time the official OpenAI SDK making the same calls, with this interpreter "
                         "(one that has `openai` installed; kept out of referee's environment)")
    args, extra = ap.parse_known_args()
    if args.scenario is None:
        plan = [(args.n, args.concurrency)]
    else:
        plan = list(SCENARIOS.values()) if args.scenario == "both" else [SCENARIOS[args.scenario]]
    server, url = _start_server(args.latency)
    try:
        for n, c in plan:
            summary = measure(n, c, args, url, extra)
            if args.json:
                print(json.dumps(summary))
            else:
                report(summary)
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
