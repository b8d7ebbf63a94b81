"""The regression gate's honesty, in-process on the statistics: how often `--fail-on-significant-regression`
fails an unchanged suite (A/A: should be at most alpha = 5%), and how often it catches a planted drop of 5
points in pass rate on 500 cases (its power: should be at least 80%).

A seeded scripted judge: each case has a true verdict (pass with probability --pass-rate); each run's judge
reports it flipped with probability --flip (5%), independently per run, as a real judge's noise would. Baseline
and candidate are two such runs; `summarize(candidate, baseline=baseline)` and the gate decide, exactly as
`referee score --baseline ... --fail-on-significant-regression` does.

    .venv/bin/python bench/bench_gate_honesty.py                 # 1000 A/A and 1000 planted-drop comparisons
    .venv/bin/python bench/bench_gate_honesty.py --trials 200    # quicker
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass

import numpy as np


@dataclass
class Figures:
    trials: int
    failures: int

    @property
    def rate(self) -> float:
        return self.failures / self.trials

    @property
    def se(self) -> float:
        return math.sqrt(self.rate * (1 - self.rate) / self.trials)


def _rows(verdicts: np.ndarray) -> list:
    from referee.results import ResultRow

    return [ResultRow(id=f"c{i}", status="scored", score=1.0 if v else 0.0, passed=bool(v), evaluator="judge")
            for i, v in enumerate(verdicts)]


def gate_fails(baseline: np.ndarray, candidate: np.ndarray) -> bool:
    from referee.aggregate import ScoreOptions, summarize
    from referee.gates import GateConfig, evaluate_gates

    summary = summarize(_rows(candidate), ScoreOptions(), baseline=_rows(baseline))
    (gate,) = evaluate_gates(summary, GateConfig(fail_on_significant_regression=True))
    return gate.failed


def simulate(trials: int, *, n: int = 500, pass_rate: float = 0.8, flip: float = 0.05, drop_points: float = 0.0,
             seed: int = 0) -> Figures:
    """``trials`` comparisons of a suite of ``n`` cases; the candidate's true pass rate is ``drop_points`` lower
    (that many cases' true verdicts turned from pass to fail)."""
    rng = np.random.default_rng(seed)
    failures = 0
    for _ in range(trials):
        truth = rng.random(n) < pass_rate
        cand_truth = truth.copy()
        k = round(drop_points * n)
        if k:
            passing = np.flatnonzero(truth)
            cand_truth[rng.choice(passing, size=min(k, len(passing)), replace=False)] = False
        base = truth ^ (rng.random(n) < flip)
        cand = cand_truth ^ (rng.random(n) < flip)
        failures += gate_fails(base, cand)
    return Figures(trials, failures)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.perf_counter()
    aa = simulate(args.trials, n=args.n, seed=args.seed)
    drop = simulate(args.trials, n=args.n, drop_points=0.05, seed=args.seed + 1)
    print(f"A/A: {aa.failures}/{aa.trials} comparisons failed the gate = {aa.rate:.1%} "
          f"(SE {aa.se:.1%}; bound 5% + 2 SE = {0.05 + 2 * aa.se:.1%})")
    print(f"planted 5-point drop on {args.n} cases: caught {drop.failures}/{drop.trials} = {drop.rate:.1%} "
          f"(SE {drop.se:.1%}; bound >= 80%)")
    print(f"{time.perf_counter() - t0:.0f}s")


if __name__ == "__main__":
    main()
