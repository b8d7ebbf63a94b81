"""Generation + judging throughput: ``referee run`` on a suite with one model target and one LLM judge, N cases,
against a local OpenAI-compatible server that answers every call after a fixed latency.

Each case costs two dependent calls (the target generates, then the judge grades that output), so the ideal wall
time is 2 x N x latency / concurrency (12.5 s for 1000 cases at 200 ms and concurrency 32). The fake server runs in
its own process; referee runs as ``referee run`` in a subprocess and its CPU is that child's user+sys time.

In the same run, a reference: a plain aiohttp loop (no referee) making the same two dependent calls per case with
the same budget of 32 requests in flight and parsing each reply, and nothing else. Its wall time is a practical
floor measured under the same machine load, so "referee / plain aiohttp" stays meaningful on a busy machine
where wall / ideal does not. Prints wall / ideal, referee's CPU seconds per 1000 cases, and the load average.

Before measuring, one small untimed run warms the bytecode cache (with PYTHONDONTWRITEBYTECODE set, into a
temporary PYTHONPYCACHEPREFIX): an installed referee has its bytecode compiled, and compiling every module from
source (~0.2 s) is not what a user's run pays.

    .venv/bin/python bench/bench_targets.py [--n 1000] [--latency 0.2] [--concurrency 32] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from bench_judge import _child_cpu, _load, _median, _start_server  # noqa: E402 - the sibling script's helpers

JUDGE_TEMPLATE = """Grade the support answer.

<input>
{input}
</input>

<output>
{output}
</output>

Reply with JSON: {"accuracy": {"score": 0.0-1.0, "rationale": "..."}, "overall_score": 0.0-1.0}
"""


def _write(folder: Path, n: int, url: str) -> Path:
    with open(folder / "cases.jsonl", "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"case-{i:05d}", "input": f"How do I reset my password? (#{i})",
                                "category": ["billing", "account", "shipping"][i % 3]}) + "\n")
    (folder / "judge.md").write_text(JUDGE_TEMPLATE, encoding="utf-8")
    (folder / "prompt.md").write_text("You are a support agent. Answer the customer.\n\n{input}\n", encoding="utf-8")
    suite = folder / "suite.yaml"
    suite.write_text(f"""\
cases: cases.jsonl
targets:
  - id: agent
    provider: openai
    model: bench-target
    base_url: "{url}/v1"
    prompt: prompt.md
evaluators:
  - llm_judge: {{template_file: judge.md}}
""", encoding="utf-8")
    return suite


def _env(pycache: Path | None) -> dict[str, str]:
    env = {**os.environ, "OPENAI_API_KEY": "sk-bench-not-a-real-key"}
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def run_once(n: int, concurrency: int, url: str, folder: Path, pycache: Path | None) -> dict[str, float]:
    suite = _write(folder, n, url)
    out = folder / "out"
    referee = Path(sys.executable).with_name("referee")
    cmd = [str(referee) if referee.exists() else sys.executable, *([] if referee.exists() else ["-m", "referee"]),
           "run", str(suite), "--out", str(out), "--provider", "openai", "--base-url", url + "/v1",
           "--model", "bench-judge", "--concurrency", str(concurrency), "--no-cache", "--no-gates"]
    cpu0 = _child_cpu()
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=_env(pycache), capture_output=True, text=True)
    wall = time.perf_counter() - t0
    cpu = _child_cpu() - cpu0
    if done.returncode != 0:
        raise SystemExit(f"referee run exited {done.returncode}:\n{done.stderr[-3000:]}")
    rows = [json.loads(line) for line in (out / "agent.jsonl").read_text().splitlines()]
    scored = sum(1 for r in rows if r.get("status", "scored") == "scored")
    generated = len((out / "agent.outputs.jsonl").read_text().splitlines())
    if scored != n or generated != n:
        raise SystemExit(f"expected {n} generated and scored cases, found {generated} / {scored}:\n{done.stderr}")
    return {"wall_s": wall, "cpu_s": cpu}


# The reference: the same two dependent calls per case (the generation's text goes into the judge's prompt), 32
# requests in flight (a semaphore, as referee's one call budget), each reply's JSON parsed; no files, no rows.
_PLAIN = r"""
import asyncio, json, sys
import aiohttp

N, CONC, URL = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
JUDGE = open(sys.argv[4], encoding="utf-8").read()
PROMPT = open(sys.argv[5], encoding="utf-8").read()
FORMAT = {"type": "json_schema", "json_schema": {"name": "verdict", "schema": {"type": "object"}}}

async def main():
    sem = asyncio.Semaphore(CONC)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:
        async def call(body):
            async with sem:
                async with s.post(URL + "/v1/chat/completions", json=body) as r:
                    r.raise_for_status()
                    return (await r.json())["choices"][0]["message"]["content"]

        async def case(i):
            q = f"How do I reset my password? (#{i})"
            answer = await call({"model": "bench-target", "max_tokens": 1024,
                                 "messages": [{"role": "user", "content": PROMPT.replace("{input}", q)}]})
            prompt = JUDGE.replace("{input}", q).replace("{output}", answer)
            verdict = json.loads(await call({"model": "bench-judge", "max_tokens": 1024, "response_format": FORMAT,
                                             "messages": [{"role": "user", "content": prompt}]}))
            return verdict["overall_score"]

        scores = await asyncio.gather(*(case(i) for i in range(N)))
    assert len(scores) == N

asyncio.run(main())
"""


def run_plain(n: int, concurrency: int, url: str, folder: Path, pycache: Path | None) -> dict[str, float]:
    judge, prompt = folder / "judge.md", folder / "prompt.md"  # the suite's own files (written by _write)
    cpu0 = _child_cpu()
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _PLAIN, str(n), str(concurrency), url, str(judge), str(prompt)],
                          env=_env(pycache), capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"the plain aiohttp reference failed:\n{done.stderr[-3000:]}")
    return {"wall_s": wall, "cpu_s": _child_cpu() - cpu0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--runs", type=int, default=1, help="repeat the measurement; the median is reported")
    ap.add_argument("--no-reference", action="store_true", help="skip the plain aiohttp reference")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    args = ap.parse_args()
    n, c, lat = args.n, args.concurrency, args.latency
    ideal = 2 * n * lat / c
    # 2N calls through a budget of C: ceil(2N / C) waves (and the last case's two calls are in two waves).
    floor = math.ceil(2 * n / c) * lat
    loads = [_load()]
    server, url = _start_server(lat)
    results: list[dict[str, float]] = []
    plain: list[dict[str, float]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="referee-bench-targets-") as tmp:
            root = Path(tmp)
            pycache = root / "pycache" if os.environ.get("PYTHONDONTWRITEBYTECODE") else None
            (root / "warm").mkdir()
            run_once(20, c, url, root / "warm", pycache)  # untimed: bytecode cache, page cache
            for i in range(args.runs):
                folder = root / f"run{i}"
                folder.mkdir()
                r = run_once(n, c, url, folder, pycache)
                results.append(r)
                line = (f"  run {i + 1}: referee {r['wall_s']:.2f} s ({r['wall_s'] / ideal:.3f} x ideal), "
                        f"{r['cpu_s'] * 1000 / n:.2f} CPU-s/1000")
                if not args.no_reference:
                    p = run_plain(n, c, url, folder, pycache)
                    plain.append(p)
                    line += (f"; plain aiohttp {p['wall_s']:.2f} s ({p['wall_s'] / ideal:.3f} x), "
                             f"referee / plain {r['wall_s'] / p['wall_s']:.3f}")
                loads.append(_load())
                if not args.json:
                    print(line + f"  (load {loads[-1]})", flush=True)
    finally:
        server.terminate()
        server.wait(10)
    med = _median(results)
    summary: dict[str, Any] = {
        "n": n, "latency_s": lat, "concurrency": c, "ideal_s": round(ideal, 3), "floor_s": round(floor, 3),
        "wall_s": round(med["wall_s"], 3), "wall_over_ideal": round(med["wall_s"] / ideal, 3),
        "cpu_s": round(med["cpu_s"], 3), "cpu_s_per_1000": round(med["cpu_s"] * 1000 / n, 3),
        "runs": args.runs, "load_before": loads[0], "load_after": loads[-1], "cores": os.cpu_count(),
    }
    if plain:
        pm = _median(plain)
        summary.update(plain_wall_s=round(pm["wall_s"], 3), plain_over_ideal=round(pm["wall_s"] / ideal, 3),
                       plain_cpu_s_per_1000=round(pm["cpu_s"] * 1000 / n, 3),
                       referee_over_plain=round(med["wall_s"] / pm["wall_s"], 3))
    if args.json:
        print(json.dumps(summary))
        return
    print(f"referee run with a model target + LLM judge: {n} cases x 2 dependent calls, server latency "
          f"{lat:g}s, concurrency {c}, --no-cache (median of {args.runs} run(s); load average "
          f"{summary['load_before']} before, {summary['load_after']} after, on {summary['cores']} cores)")
    print(f"  wall      {summary['wall_s']:.2f} s   ideal {ideal:.2f} s   wall/ideal {summary['wall_over_ideal']:.3f}"
          f"   (target <= 1.10; a zero-overhead client needs whole waves: {floor:.2f} s = {floor / ideal:.3f} x)")
    print(f"  CPU       {summary['cpu_s']:.2f} s   = {summary['cpu_s_per_1000']:.2f} CPU-s per 1000 cases (generation + "
          f"judging)   (target < 3.0)")
    if plain:
        print(f"  plain aiohttp: {summary['plain_wall_s']:.2f} s = {summary['plain_over_ideal']:.3f} x ideal, "
              f"{summary['plain_cpu_s_per_1000']:.2f} CPU-s per 1000 cases; referee / plain aiohttp "
              f"{summary['referee_over_plain']:.3f} (the same calls with nothing else, under the same load)")
    print("  wall time is only meaningful on a quiet machine (load average above); CPU per 1000 much less sensitive")


if __name__ == "__main__":
    main()
