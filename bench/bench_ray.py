"""Benchmark: a suite whose `python` check spends 0.5 s of CPU per case, run locally and with `--engine ray` on
a local Ray cluster of 2 workers, through the path `referee run` takes (load, evaluate, write rows + manifest).
Checks that both runs wrote the same rows byte for byte apart from timings, and prints the wall times and
their ratio.

    .venv/bin/python bench/bench_ray.py [--cases 2000] [--cpu-s 0.5] [--workers 2]

Needs the `ray` extra. The cluster's start-up is inside the Ray wall time (and printed on its own). Each case
runs in referee's sandbox (a child process): the CPU figure is the child processes' time, the machine's load
average is printed before and after, since other work on the cores shows up in the wall times.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

CODE = '''\
import time


def work(seconds):
    """Busy for `seconds` of this process's CPU time (interpreter start-up included)."""
    n = 0
    while time.process_time() < seconds:
        n += 1
    return {result}
'''

SUITE = """
name: bench-ray
cases: cases.jsonl
evaluators:
  - python: {{tests: "assert work({cpu_s}) > 0", timeout_s: 60, cpu_s: 10}}
  - contains: "def work"
scoring: {{mode: weighted_mean, threshold: 0.7}}
"""


def make_cases(path: Path, n: int) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            result = "0" if i % 10 == 0 else "n + 1"  # one case in ten fails its test
            f.write(json.dumps({"id": f"c{i:05d}", "category": f"g{i % 4}", "input": "burn CPU",
                                "output": CODE.format(result=result)}) + "\n")


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--cpu-s", type=float, default=0.5, help="CPU seconds each case's check spends")
    ap.add_argument("--workers", type=int, default=2, help="CPUs of the local Ray cluster")
    args = ap.parse_args()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    from referee.run._suite import run_suite
    from referee.run.engines import LocalEngine
    from referee.run.engines._ray import RayEngine, import_ray
    from referee.suites import load_suite
    from referee.testing import rows_without_timings

    ray = import_ray()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        make_cases(d / "cases.jsonl", args.cases)
        (d / "suite.yaml").write_text(SUITE.format(cpu_s=args.cpu_s), encoding="utf-8")
        suite = load_suite(d / "suite.yaml")
        load0 = os.getloadavg()
        print(f"bench_ray: {args.cases:,} cases, python check of {args.cpu_s} CPU-s each; {os.cpu_count()} cores, "
              f"load average {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}", flush=True)

        c0, t0 = children_cpu(), time.perf_counter()
        local = run_suite(suite, d / "local.jsonl", engine=LocalEngine(), command=["bench"])
        local_wall, local_cpu = time.perf_counter() - t0, children_cpu() - c0
        print(f"  local:       wall {local_wall:8.2f} s  sandbox CPU {local_cpu:8.2f} s", flush=True)

        t0 = time.perf_counter()
        ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
        startup = time.perf_counter() - t0
        remote = run_suite(suite, d / "ray.jsonl", engine=RayEngine(), command=["bench"])
        ray_wall = time.perf_counter() - t0
        ray.shutdown()
        print(f"  ray ({args.workers} workers): wall {ray_wall:8.2f} s  (cluster start-up {startup:.2f} s, "
              f"run {ray_wall - startup:.2f} s; sandbox CPU is in the workers)", flush=True)

        same = rows_without_timings(d / "local.jsonl") == rows_without_timings(d / "ray.jsonl")
        rows = (len(local.rows), len(remote.rows))
    load1 = os.getloadavg()
    ideal = args.cases * args.cpu_s / args.workers
    print(f"  rows {rows[0]:,} / {rows[1]:,}; identical apart from timings: {'yes' if same else 'NO'}")
    print(f"  ray / local wall: {ray_wall / local_wall:.3f}x (run only: {(ray_wall - startup) / local_wall:.3f}x); "
          f"ideal on {args.workers} CPUs {ideal:.1f} s: local {local_wall / ideal:.2f}x, "
          f"ray {ray_wall / ideal:.2f}x")
    print(f"  load average after: {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")
    return 0 if same and rows[0] == rows[1] == args.cases else 1


if __name__ == "__main__":
    sys.exit(main())
