"""Judge throughput: N cases against a local OpenAI-compatible server that answers after a fixed latency.

The fake server runs in its own process (``python -m referee.testing``) so its CPU is not counted; referee runs
as ``referee judge`` in a subprocess, and its CPU is that child's user+sys time (``RUSAGE_CHILDREN`` measured
around that one child only). Prints wall / ideal (ideal = N x latency / concurrency) and referee's CPU seconds
per 1000 judged cases. After each run, a plain aiohttp loop makes the same calls against the same server (the
reference line: what the HTTP library alone costs under the same machine load); ``--no-plain`` skips it.

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


def _compile_referee() -> None:
    """Byte-compile referee's modules first, as installing a wheel does: an editable install under
    PYTHONDONTWRITEBYTECODE=1 (this project's sandbox) would otherwise compile ~40 modules from source in every
    measured start (~0.03 CPU-s). The dependencies in site-packages were compiled when installed."""
    import compileall

    import referee

    compileall.compile_dir(str(Path(referee.__file__).parent), quiet=1)


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


# The practical floor: a minimal client on the same HTTP library as referee (aiohttp), making the same calls
# (the same prompt filled from each case, json_schema response_format) against the same server in the same run,
# and parsing each reply's verdict; no rows, files, retries, guards or cache. referee's wall and CPU over this
# line are what referee itself costs, measured under the same machine load (printed as "plain aiohttp loop").
_PLAIN_SCRIPT = r"""
import asyncio, json, sys
import aiohttp

N, CONC, URL, CASES, TEMPLATE = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
SCHEMA = {"type": "object", "properties": {"overall_score": {"type": "number"}}, "required": ["overall_score"]}

async def main():
    template = open(TEMPLATE, encoding="utf-8").read()
    with open(CASES, encoding="utf-8") as f:
        cases = [json.loads(line) for line in f]
    assert len(cases) == N
    headers = {"Authorization": "Bearer sk-bench-not-a-real-key", "Content-Type": "application/json"}
    async with aiohttp.ClientSession(headers=headers, connector=aiohttp.TCPConnector(limit=CONC)) as session:
        todo = iter(cases)
        scores = []
        async def worker():
            for case in todo:
                prompt = template.replace("{input}", case["input"]).replace("{output}", case["output"])
                payload = {"model": "bench-judge", "max_tokens": 1024,
                           "messages": [{"role": "system", "content": "You are a careful evaluation judge."},
                                        {"role": "user", "content": prompt}],
                           "response_format": {"type": "json_schema",
                                               "json_schema": {"name": "verdict", "schema": SCHEMA, "strict": False}}}
                async with session.post(URL, data=json.dumps(payload)) as resp:
                    body = json.loads(await resp.text())
                scores.append(json.loads(body["choices"][0]["message"]["content"])["overall_score"])
        await asyncio.gather(*(worker() for _ in range(min(CONC, N))))
    assert len(scores) == N

asyncio.run(main())
"""


def run_plain(n: int, concurrency: int, url: str, folder: Path) -> dict[str, float]:
    cases, template = folder / "cases.jsonl", folder / "judge.md"
    _take_stats(url)
    cpu0 = _child_cpu()
    started = time.time()
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _PLAIN_SCRIPT, str(n), str(concurrency),
                           url + "/v1/chat/completions", str(cases), str(template)], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    ended = time.time()
    cpu = _child_cpu() - cpu0
    if done.returncode != 0:
        raise SystemExit(f"the plain aiohttp loop failed:\n{done.stderr}")
    return {"wall_s": wall, "cpu_s": cpu, **_phases(url, started, ended)}


def _take_stats(url: str) -> dict[str, Any]:
    """The fast server's ``GET /_stats``: requests, first arrival and last answer since the previous call."""
    import urllib.request

    with urllib.request.urlopen(url + "/_stats", timeout=10) as resp:
        return dict(json.loads(resp.read()))


def _phases(url: str, started: float, ended: float) -> dict[str, float]:
    """A client run split by what the server saw (wall clock, seconds): ``startup_s`` from the client's start to
    its first request, ``requests_s`` from there to the last answer, ``tail_s`` from that answer to its exit."""
    st = _take_stats(url)
    first, last = st["first_request_at"], st["last_response_at"]
    if first is None or last is None:
        return {}
    return {"startup_s": first - started, "requests_s": last - first, "tail_s": ended - last}


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
    _take_stats(url)
    cpu0 = _child_cpu()  # the server child is still running, so its CPU is not in RUSAGE_CHILDREN yet
    started = time.time()
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    ended = time.time()
    cpu = _child_cpu() - cpu0
    phases = _phases(url, started, ended)
    if done.returncode != 0:
        raise SystemExit(f"referee judge exited {done.returncode}:\n{done.stderr}")
    scored = sum(1 for line in out.read_text().splitlines() if '"score"' in line)
    if scored != n:
        raise SystemExit(f"expected {n} scored rows, found {scored}:\n{done.stderr}")
    return {"wall_s": wall, "cpu_s": cpu, "scored": scored, **phases}


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
    plain = []
    sdk = []
    loads = [_load()]
    with tempfile.TemporaryDirectory(prefix="referee-bench-") as tmp:
        for i in range(args.runs):
            r = run_once(n, args.latency, concurrency, url, Path(tmp), extra)
            results.append(r)
            if not args.no_plain:  # right after referee's run, on the same files: the same machine load
                plain.append(run_plain(n, concurrency, url, Path(tmp)))
            loads.append(_load())
            if args.runs > 1 and not args.json:
                line = (f"  run {i + 1}: wall {r['wall_s']:.2f} s ({r['wall_s'] / ideal:.3f} x ideal), "
                        f"CPU {r['cpu_s']:.2f} s")
                if plain:
                    line += (f"; plain aiohttp loop {plain[-1]['wall_s']:.2f} s "
                             f"({plain[-1]['wall_s'] / ideal:.3f} x), CPU {plain[-1]['cpu_s']:.2f} s")
                print(f"{line}  (load {loads[-1]})", flush=True)
            if args.sdk_python:
                sdk.append(run_sdk(args.sdk_python, n, concurrency, url))
    med = _median(results)
    cpu = sorted(r["cpu_s"] for r in results)[len(results) // 2]  # the median CPU, whichever run it was
    best = min(results, key=lambda r: r["wall_s"])
    target = TARGETS.get((n, concurrency), 1.10)
    summary: dict[str, Any] = {
        "n": n, "latency_s": args.latency, "concurrency": concurrency, "ideal_s": round(ideal, 3),
        "floor_s": round(floor, 3), "floor_over_ideal": round(floor / ideal, 3),
        "wall_s": round(med["wall_s"], 3), "wall_over_ideal": round(med["wall_s"] / ideal, 3),
        "target_over_ideal": target,
        "cpu_s": round(cpu, 3), "cpu_s_per_1000": round(cpu * 1000 / n, 3),
        "min_cpu_s_per_1000": round(min(r["cpu_s"] for r in results) * 1000 / n, 3),
        "runs": args.runs, "best_wall_s": round(best["wall_s"], 3),
        "best_wall_over_ideal": round(best["wall_s"] / ideal, 3), "load_before": loads[0], "load_after": loads[-1],
    }
    summary["phases"] = _phase_medians(results)
    if plain:
        summary["plain_phases"] = _phase_medians(plain)
        ref = _median(plain)
        plain_cpu = sorted(r["cpu_s"] for r in plain)[len(plain) // 2]
        summary.update(plain_wall_s=round(ref["wall_s"], 3), plain_wall_over_ideal=round(ref["wall_s"] / ideal, 3),
                       plain_cpu_s_per_1000=round(plain_cpu * 1000 / n, 3),
                       referee_over_plain_wall=round(med["wall_s"] / ref["wall_s"], 3))
    if sdk:
        peer = _median(sdk)
        summary.update(sdk_wall_s=round(peer["wall_s"], 3), sdk_cpu_s_per_1000=round(peer["cpu_s"] * 1000 / n, 3))
    return summary


def _phase_medians(runs: list[dict[str, float]]) -> dict[str, float]:
    out = {}
    for key in ("startup_s", "requests_s", "tail_s"):
        values = sorted(r[key] for r in runs if key in r)
        if values:
            out[key] = round(values[len(values) // 2], 3)
    return out


def _phases_text(ph: dict[str, float]) -> str:
    return (f"start-up {ph['startup_s']:.3f} s, requests {ph['requests_s']:.3f} s, after the last answer "
            f"{ph['tail_s']:.3f} s")


def report(summary: dict[str, Any]) -> None:
    n, c = summary["n"], summary["concurrency"]
    print(f"referee judge: {n} cases, server latency {summary['latency_s']:g}s, concurrency {c}, --no-cache "
          f"(median of {summary['runs']} run(s); load average {summary['load_before']} before, "
          f"{summary['load_after']} after)")
    print(f"  wall      {summary['wall_s']:.2f} s   ideal {summary['ideal_s']:.2f} s   wall/ideal "
          f"{summary['wall_over_ideal']:.3f}   (target <= {summary['target_over_ideal']:.2f}; a zero-overhead client "
          f"needs whole waves: {summary['floor_s']:.2f} s = {summary['floor_over_ideal']:.3f} x)")
    print(f"  CPU       {summary['cpu_s']:.2f} s   = {summary['cpu_s_per_1000']:.2f} CPU-s per 1000 judged cases "
          f"(median; lowest run {summary['min_cpu_s_per_1000']:.2f})")
    if summary["runs"] > 1:
        print(f"  best run  {summary['best_wall_s']:.2f} s wall   wall/ideal {summary['best_wall_over_ideal']:.3f}")
    if "plain_wall_s" in summary:
        print(f"  plain aiohttp loop (same calls, same server, same run; no rows or files): wall "
              f"{summary['plain_wall_s']:.2f} s = {summary['plain_wall_over_ideal']:.3f} x ideal, "
              f"{summary['plain_cpu_s_per_1000']:.2f} CPU-s per 1000 calls; referee / plain wall "
              f"{summary['referee_over_plain_wall']:.3f}")
    ph, pp = summary.get("phases"), summary.get("plain_phases")
    if ph and len(ph) == 3:
        print(f"  where the wall time went (medians; the server's clock of first request and last answer; the "
              f"requests need {summary['floor_s']:.2f} s in whole waves):")
        print(f"    referee   {_phases_text(ph)}")
        if pp and len(pp) == 3:
            print(f"    plain     {_phases_text(pp)}")
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
    ap.add_argument("--no-compile", action="store_true",
                    help="do not byte-compile referee's modules before measuring (as in an editable install under "
                         "PYTHONDONTWRITEBYTECODE=1: every start then compiles them from source)")
    ap.add_argument("--no-plain", action="store_true",
                    help="skip the reference line: a plain aiohttp loop making the same calls after each run")
    ap.add_argument("--sdk-python", default=None, metavar="PYTHON",
                    help="also time the official OpenAI SDK making the same calls, with this interpreter "
                         "(one that has `openai` installed; kept out of referee's environment)")
    args, extra = ap.parse_known_args()
    if args.scenario is None:
        plan = [(args.n, args.concurrency)]
    else:
        plan = list(SCENARIOS.values()) if args.scenario == "both" else [SCENARIOS[args.scenario]]
    if not args.no_compile:
        _compile_referee()
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
