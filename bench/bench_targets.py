"""Generation + judging throughput: ``referee run`` on a suite with one model target and one LLM judge, N cases,
against a local OpenAI-compatible server that answers every call after a fixed latency.

Each case costs two dependent calls (the target generates, then the judge grades that output), so the ideal wall
time is 2 x N x latency / concurrency (12.5 s for 1000 cases at 200 ms and concurrency 32). The fake server runs in
its own process; referee runs as ``referee run`` in a subprocess and its CPU is that child's user+sys time.
Prints wall / ideal, referee's CPU seconds per 1000 cases, and the machine's load average (the CPU figure is only
comparable on a quiet machine).

    .venv/bin/python bench/bench_targets.py [--n 1000] [--latency 0.2] [--concurrency 32] [--runs 1]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_judge import _child_cpu, _median, _start_server  # noqa: E402 - the sibling script's helpers

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


def run_once(n: int, concurrency: int, url: str, folder: Path) -> dict[str, float]:
    suite = _write(folder, n, url)
    out = folder / "out"
    referee = Path(sys.executable).with_name("referee")
    cmd = [str(referee) if referee.exists() else sys.executable, *([] if referee.exists() else ["-m", "referee"]),
           "run", str(suite), "--out", str(out), "--provider", "openai", "--base-url", url + "/v1",
           "--model", "bench-judge", "--concurrency", str(concurrency), "--no-cache", "--no-gates"]
    env = {**os.environ, "OPENAI_API_KEY": "sk-bench-not-a-real-key"}
    cpu0 = _child_cpu()
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--runs", type=int, default=1, help="repeat the measurement; the median is reported")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    args = ap.parse_args()
    ideal = 2 * args.n * args.latency / args.concurrency
    load_before = os.getloadavg()
    server, url = _start_server(args.latency)
    try:
        results = []
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory(prefix="referee-bench-targets-") as tmp:
                results.append(run_once(args.n, args.concurrency, url, Path(tmp)))
    finally:
        server.terminate()
        server.wait(10)
    load_after = os.getloadavg()
    med = _median(results)
    summary = {
        "n": args.n, "latency_s": args.latency, "concurrency": args.concurrency, "ideal_s": round(ideal, 3),
        "wall_s": round(med["wall_s"], 3), "wall_over_ideal": round(med["wall_s"] / ideal, 3),
        "cpu_s": round(med["cpu_s"], 3), "cpu_s_per_1000": round(med["cpu_s"] * 1000 / args.n, 3),
        "runs": args.runs, "load_avg_1m_before": round(load_before[0], 2), "load_avg_1m_after": round(load_after[0], 2),
        "cores": os.cpu_count(),
    }
    if args.json:
        print(json.dumps(summary))
        return
    print(f"referee run with a model target + LLM judge: {args.n} cases x 2 dependent calls, server latency "
          f"{args.latency:g}s, concurrency {args.concurrency}, --no-cache (median of {args.runs} run(s))")
    print(f"  wall      {summary['wall_s']:.2f} s   ideal {ideal:.2f} s   wall/ideal {summary['wall_over_ideal']:.3f}"
          f"   (target <= 1.10)")
    print(f"  CPU       {summary['cpu_s']:.2f} s   = {summary['cpu_s_per_1000']:.2f} CPU-s per 1000 cases (generation + "
          f"judging)   (target < 3.0)")
    print(f"  load average (1 min) {summary['load_avg_1m_before']} before, {summary['load_avg_1m_after']} after, on "
          f"{summary['cores']} cores: figures from a busy machine overstate wall time and CPU")


if __name__ == "__main__":
    main()
