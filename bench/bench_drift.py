"""Benchmark: the drift detector's false-alarm spacing and detection delay, measured in a seeded simulation
(docs/monitoring.md states these figures).

    .venv/bin/python bench/bench_drift.py [--stream 1000000] [--runs 200] [--h 15]
"""

from __future__ import annotations

import argparse
import sys

from referee.traces import simulate
from referee.traces._drift import DEFAULT_H, DEFAULT_K, DEFAULT_REFERENCE


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stream", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--h", type=float, default=DEFAULT_H)
    ap.add_argument("--p0", type=float, default=0.8)
    ap.add_argument("--p1", type=float, default=0.6)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    sim = simulate(p0=a.p0, p1=a.p1, seed=a.seed, stream=a.stream, delay_runs=a.runs, h=a.h)
    print(f"CUSUM k={DEFAULT_K} h={a.h}, reference {DEFAULT_REFERENCE} scores estimated from the stream, seed {a.seed}")
    print(f"false alarms: {sim.false_alarms} in {sim.scores_watched:,} scored traces at pass rate {a.p0} -> one every "
          f"{sim.false_alarm_spacing:,.0f} scored traces")
    print(f"detection delay, {a.p0} -> {a.p1}: {sim.detection_delay:.1f} scored traces on average "
          f"({sim.delay_runs} runs, {sim.missed} missed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
