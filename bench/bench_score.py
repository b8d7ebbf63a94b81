"""``referee score`` at scale: 1,000,000 result rows against a 1,000,000-row baseline, 2000 bootstrap
resamples, overall and over 20 categories (paired tests per category included).

The data files are generated in a temporary folder (scores on a 0.01 grid, as judges give them, with cost,
latency and a rationale per row; the current run has a small real drop). referee runs as ``referee score`` in a
subprocess; wall time is measured around it and peak memory is that child's ``ru_maxrss``
(``RUSAGE_CHILDREN`` read right after it exits, and it is the only child this process has waited for).

    .venv/bin/python bench/bench_score.py [--rows 1000000] [--categories 20] [--n-boot 2000] [--runs 1]

Targets: under 15 s wall and under 2 GB peak RSS on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

TARGET_WALL_S = 15.0
# Distinct names (numbered ones such as "category-01"/"category-02" would rightly draw the seed's
# near-duplicate warning).
CATEGORY_NAMES = ["billing", "refunds", "shipping", "returns", "account", "password", "privacy", "security",
                  "pricing", "invoices", "onboarding", "integrations", "api", "mobile", "desktop", "outage",
                  "feedback", "legal", "partners", "hardware"]
TARGET_RSS_MB = 2048.0


def _write(path: Path, scores: np.ndarray, cats: np.ndarray, cost: np.ndarray, lat: np.ndarray) -> None:
    with open(path, "w", encoding="utf-8") as f:
        buf = []
        for i, (s, c, co, la) in enumerate(zip(scores.tolist(), cats.tolist(), cost.tolist(), lat.tolist(),
                                               strict=True)):
            buf.append(f'{{"id": "case-{i:07d}", "score": {s:.2f}, "category": "{CATEGORY_NAMES[c % 20]}{"" if c < 20 else c}", '
                       f'"rationale": "the answer cites the refund policy but misses the 30-day window", '
                       f'"cost_usd": {co:.6f}, "latency_ms": {la:.1f}}}\n')
            if len(buf) >= 100_000:
                f.writelines(buf)
                buf.clear()
        f.writelines(buf)


def generate(folder: Path, rows: int, categories: int, seed: int = 7) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    cats = rng.integers(0, categories, size=rows)
    base = np.clip(rng.beta(5, 2, size=rows), 0, 1).round(2)
    # The current run: mostly the same verdicts, some cases move, category 3 gets a little worse.
    noise = rng.normal(0, 0.05, size=rows) * (rng.random(rows) < 0.3)
    cur = np.clip(base + noise - 0.03 * (cats == 3), 0, 1).round(2)
    cost = rng.gamma(2.0, 0.0006, size=rows)
    lat = rng.gamma(4.0, 200.0, size=rows)
    b, c = folder / "baseline.jsonl", folder / "current.jsonl"
    _write(b, base, cats, cost, lat)
    _write(c, cur, cats, cost * 1.05, lat * 1.02)
    return c, b


def run_once(current: Path, baseline: Path, n_boot: int) -> tuple[float, float, float, int]:
    referee = Path(sys.executable).with_name("referee")
    cmd = [str(referee) if referee.exists() else sys.executable, *([] if referee.exists() else ["-m", "referee"]),
           "score", str(current), "--baseline", str(baseline), "--n-boot", str(n_boot),
           "--fail-on-regression", "--fail-on-significant-regression", "--fail-on-cost-regression",
           "--fail-on-latency-regression", "--json-out", str(current.with_suffix(".summary.json"))]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    # ru_maxrss of the children is the max over every waited-for child; each run is one child, and runs only
    # grow the same workload, so the figure is this run's peak (kilobytes on Linux).
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    rss_mb = after.ru_maxrss / 1024
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    if proc.returncode not in (0, 1):
        sys.stderr.write(proc.stdout[-2000:] + proc.stderr[-2000:])
        raise SystemExit(f"referee score exited {proc.returncode}")
    return wall, cpu, rss_mb, proc.returncode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--categories", type=int, default=20)
    ap.add_argument("--n-boot", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="referee-bench-score-") as tmp:
        t0 = time.perf_counter()
        current, baseline = generate(Path(tmp), args.rows, args.categories)
        size_mb = (os.path.getsize(current) + os.path.getsize(baseline)) / 1e6
        print(f"generated 2 x {args.rows:,} rows ({size_mb:.0f} MB) in {time.perf_counter() - t0:.1f} s")
        walls = []
        for i in range(args.runs):
            wall, cpu, rss, code = run_once(current, baseline, args.n_boot)
            walls.append(wall)
            print(f"run {i + 1}: wall {wall:.2f} s, CPU (user+sys) {cpu:.2f} s, peak RSS {rss:.0f} MB, exit {code}")
        best = min(walls)
        print(f"referee score, {args.rows:,} rows vs {args.rows:,}-row baseline, {args.n_boot} resamples, "
              f"{args.categories} categories: wall {best:.2f} s ({best / TARGET_WALL_S:.2f} x the {TARGET_WALL_S:g} s "
              f"target), peak RSS {rss:.0f} MB ({rss / TARGET_RSS_MB:.2f} x the {TARGET_RSS_MB:g} MB target), "
              f"{os.cpu_count()} cores")


if __name__ == "__main__":
    main()
