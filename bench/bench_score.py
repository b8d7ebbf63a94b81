"""``referee score`` at scale, side by side with the seed's own aggregator (``score_eval.py``).

For each of three score distributions (``passfail``: true/false; ``likert``: 1-5 integers as 0, .25, .5, .75,
1; ``float``: 3-decimal floats as judges write them, ``round(random, 3)``), a results file and a baseline of
``--rows`` rows each over 20 categories are generated in a temporary folder (with cost, latency and a
rationale per row; the current run has a small real drop). Then, in one process and interleaved run by run,

- ``referee score CURRENT --baseline BASELINE --n-boot 2000 --fail-on-regression
  --fail-on-significant-regression --fail-on-cost-regression --fail-on-latency-regression --json-out ...``
  (bootstrap CIs of every group and paired tests overall and per category: referee's defaults), and
- the seed's unchanged ``score_eval.py CURRENT --baseline BASELINE --fail-on-regression --json-out ...``, run
  as a subprocess from ``../shared/seed-tools/agent-eval/`` (never copied; skipped with a message when
  ``../shared`` is absent),

each as a child process with the same interpreter. Wall time is measured around each child; CPU (user+sys)
and peak RSS are that child's own (``os.wait4``). The ratio is referee's wall over the seed's, per run pair,
and the median over ``--runs`` pairs is reported, with the load average before and after (wall-time ratios on
a busy machine are noisy; the CPU ratio much less so). Both programs' point estimates (pass rate, mean score,
regression count) are checked to agree, so both did the same work.

    .venv/bin/python bench/bench_score.py                       # 1,000,000 rows, all 3 distributions, 3 runs
    .venv/bin/python bench/bench_score.py --dist float --runs 1 --rows 200000

Targets: referee <= 0.5 x the seed's wall time, and under 2 GB peak RSS, for every distribution.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
SEED_SCRIPT = REPO.parent / "shared" / "seed-tools" / "agent-eval" / "score_eval.py"
TARGET_RATIO = 0.5
TARGET_RSS_MB = 2048.0
DISTRIBUTIONS = ("passfail", "likert", "float")
# Distinct names (numbered ones such as "category-01"/"category-02" would rightly draw the seed's
# near-duplicate warning).
CATEGORY_NAMES = ["billing", "refunds", "shipping", "returns", "account", "password", "privacy", "security",
                  "pricing", "invoices", "onboarding", "integrations", "api", "mobile", "desktop", "outage",
                  "feedback", "legal", "partners", "hardware"]
RATIONALE = "the answer cites the refund policy but misses the 30-day window"


def _scores(dist: str, rng: np.random.Generator, cats: np.ndarray) -> tuple[list[str], list[str]]:
    """Baseline and current scores as JSON literals: mostly the same verdicts, some cases move, category 3
    gets a little worse."""
    n = cats.size
    moved = rng.random(n) < 0.3
    if dist == "passfail":
        base = rng.random(n) < 0.8
        cur = np.where(moved, rng.random(n) < 0.8 - 0.05 * (cats == 3), base)
        lit = np.array(["false", "true"])
        return lit[base.astype(int)].tolist(), lit[cur.astype(int)].tolist()
    if dist == "likert":
        b = rng.choice(5, size=n, p=[0.05, 0.1, 0.15, 0.35, 0.35])
        c = np.where(moved, np.clip(b + rng.integers(-1, 2, size=n) - (cats == 3) * (rng.random(n) < 0.3), 0, 4),
                     b)
        lit = np.array(["0.0", "0.25", "0.5", "0.75", "1.0"])
        return lit[b].tolist(), lit[c].tolist()
    base_f = rng.beta(5, 2, size=n).round(3)
    cur_f = np.clip(base_f + rng.normal(0, 0.05, size=n) * moved - 0.03 * (cats == 3), 0, 1).round(3)
    return [repr(x) for x in base_f.tolist()], [repr(x) for x in cur_f.tolist()]


def _write(path: Path, scores: list[str], cats: list[int], cost: list[float], lat: list[float]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        buf = []
        for i, (s, c, co, la) in enumerate(zip(scores, cats, cost, lat, strict=True)):
            buf.append(f'{{"id": "case-{i:07d}", "score": {s}, "category": "{CATEGORY_NAMES[c % 20]}'
                       f'{"" if c < 20 else c}", "rationale": "{RATIONALE}", "cost_usd": {co:.6f}, '
                       f'"latency_ms": {la:.1f}}}\n')
            if len(buf) >= 100_000:
                f.writelines(buf)
                buf.clear()
        f.writelines(buf)


def generate(folder: Path, dist: str, rows: int, categories: int, seed: int = 7) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    cats = rng.integers(0, categories, size=rows)
    base, cur = _scores(dist, rng, cats)
    cost = rng.gamma(2.0, 0.0006, size=rows)
    lat = rng.gamma(4.0, 200.0, size=rows)
    b, c = folder / f"{dist}-baseline.jsonl", folder / f"{dist}-current.jsonl"
    cat_list = cats.tolist()
    _write(b, base, cat_list, cost.tolist(), lat.tolist())
    _write(c, cur, cat_list, (cost * 1.05).tolist(), (lat * 1.02).tolist())
    return c, b


@dataclass
class Run:
    wall_s: float
    cpu_s: float
    rss_mb: float
    code: int


def _run_child(cmd: list[str], folder: Path) -> Run:
    """Run ``cmd`` and return its own wall, CPU and peak RSS (``os.wait4`` reports that child alone)."""
    with open(folder / "child.out", "wb") as out, open(folder / "child.err", "wb") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    code = proc.returncode
    if code not in (0, 1):
        tail = (folder / "child.out").read_bytes()[-2000:] + (folder / "child.err").read_bytes()[-2000:]
        raise SystemExit(f"{' '.join(cmd[:3])} ... exited {code}:\n{tail.decode(errors='replace')}")
    return Run(wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, code)


def referee_cmd(current: Path, baseline: Path, n_boot: int, out: Path) -> list[str]:
    referee = Path(sys.executable).with_name("referee")
    return [str(referee) if referee.exists() else sys.executable, *([] if referee.exists() else ["-m", "referee"]),
            "score", str(current), "--baseline", str(baseline), "--n-boot", str(n_boot),
            "--fail-on-regression", "--fail-on-significant-regression", "--fail-on-cost-regression",
            "--fail-on-latency-regression", "--json-out", str(out)]


def seed_cmd(current: Path, baseline: Path, out: Path) -> list[str]:
    return [sys.executable, str(SEED_SCRIPT), str(current), "--baseline", str(baseline), "--fail-on-regression",
            "--json-out", str(out)]


def _check_agree(referee_json: Path, seed_json: Path) -> str:
    """Both programs must report the same point estimates (they read the same rows)."""
    r = json.loads(referee_json.read_text())
    s = json.loads(seed_json.read_text())
    ours = (r["pass_rate"], r["mean_score"], len(r["regressions"]))
    theirs = (s["pass_rate"], s["mean_score"], len(s["regressions"]))
    if not (abs(ours[0] - theirs[0]) < 1e-9 and abs(ours[1] - theirs[1]) < 1e-9 and ours[2] == theirs[2]):
        raise SystemExit(f"referee and the seed disagree: pass rate, mean, regressions {ours} vs {theirs}")
    return f"pass rate {ours[0]:.4f}, mean {ours[1]:.4f}, {ours[2]:,} regressions"


def _load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def _median(xs: list[float]) -> float:
    return statistics.median(xs)


def bench_one(dist: str, args: argparse.Namespace, folder: Path, with_seed: bool) -> dict[str, object]:
    t0 = time.perf_counter()
    current, baseline = generate(folder, dist, args.rows, args.categories)
    size_mb = (os.path.getsize(current) + os.path.getsize(baseline)) / 1e6
    print(f"\n[{dist}] generated 2 x {args.rows:,} rows ({size_mb:.0f} MB) in {time.perf_counter() - t0:.1f} s; "
          f"load average {_load()}", flush=True)
    ours_json, seed_json = folder / "referee.json", folder / "seed.json"
    ours: list[Run] = []
    seed: list[Run] = []
    for i in range(args.runs):
        # Interleaved (and alternating who goes first) so drifting load hits both sides alike.
        order = ("referee", "seed") if i % 2 == 0 else ("seed", "referee")
        for who in order:
            if who == "referee":
                ours.append(_run_child(referee_cmd(current, baseline, args.n_boot, ours_json), folder))
                r = ours[-1]
            elif with_seed:
                seed.append(_run_child(seed_cmd(current, baseline, seed_json), folder))
                r = seed[-1]
            else:
                continue
            print(f"  run {i + 1} {who:<8} wall {r.wall_s:6.2f} s  CPU {r.cpu_s:6.2f} s  peak RSS {r.rss_mb:5.0f} MB"
                  f"  exit {r.code}  (load {_load()})", flush=True)
    result: dict[str, object] = {
        "dist": dist, "rows": args.rows, "runs": args.runs,
        "referee_wall_s": _median([r.wall_s for r in ours]), "referee_cpu_s": _median([r.cpu_s for r in ours]),
        "referee_rss_mb": max(r.rss_mb for r in ours),
    }
    if seed:
        result.update(
            seed_wall_s=_median([r.wall_s for r in seed]), seed_cpu_s=_median([r.cpu_s for r in seed]),
            seed_rss_mb=max(r.rss_mb for r in seed),
            wall_ratio=_median([a.wall_s / b.wall_s for a, b in zip(ours, seed, strict=True)]),
            cpu_ratio=_median([a.cpu_s / b.cpu_s for a, b in zip(ours, seed, strict=True)]),
            agree=_check_agree(ours_json, seed_json),
        )
    result["load_after"] = _load()
    for p in (current, baseline):
        p.unlink()
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--categories", type=int, default=20)
    ap.add_argument("--n-boot", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=3, help="referee/seed pairs per distribution; medians reported")
    ap.add_argument("--dist", choices=(*DISTRIBUTIONS, "all"), default="all")
    ap.add_argument("--json", action="store_true", help="also print one JSON line per distribution")
    args = ap.parse_args()
    with_seed = SEED_SCRIPT.exists()
    if not with_seed:
        print(f"seed script not found at {SEED_SCRIPT} (../shared is absent): timing referee alone, no ratio")
    print(f"{os.cpu_count()} cores, load average {_load()} (1/5/15 min) at start")
    results = []
    with tempfile.TemporaryDirectory(prefix="referee-bench-score-") as tmp:
        for dist in DISTRIBUTIONS if args.dist == "all" else (args.dist,):
            results.append(bench_one(dist, args, Path(tmp), with_seed))
    print(f"\nreferee score vs the seed's score_eval.py: {args.rows:,} rows vs a {args.rows:,}-row baseline, "
          f"{args.categories} categories, {args.n_boot} resamples, bootstrap CIs + paired tests on; "
          f"median of {args.runs} interleaved pair(s)")
    print(f"{'distribution':<13}{'referee wall':>13}{'seed wall':>11}{'wall ratio':>12}{'CPU ratio':>11}"
          f"{'referee RSS':>13}{'seed RSS':>10}  load after")
    ok = True
    for r in results:
        if "wall_ratio" in r:
            ratio = float(r["wall_ratio"])  # type: ignore[arg-type]
            ok = ok and ratio <= TARGET_RATIO
            seed_part = (f"{r['seed_wall_s']:>9.2f} s{ratio:>11.2f}x{r['cpu_ratio']:>10.2f}x"
                         f"{r['referee_rss_mb']:>10.0f} MB{r['seed_rss_mb']:>7.0f} MB")
        else:
            seed_part = f"{'-':>11}{'-':>12}{'-':>11}{r['referee_rss_mb']:>10.0f} MB{'-':>10}"
        ok = ok and float(r["referee_rss_mb"]) < TARGET_RSS_MB  # type: ignore[arg-type]
        print(f"{r['dist']:<13}{r['referee_wall_s']:>11.2f} s{seed_part}  {r['load_after']}")
        if args.json:
            print(json.dumps(r))
    for r in results:
        if "agree" in r:
            print(f"  {r['dist']}: both report {r['agree']}")
    print(f"targets: wall ratio <= {TARGET_RATIO} and referee peak RSS < {TARGET_RSS_MB:.0f} MB for every "
          f"distribution: {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
