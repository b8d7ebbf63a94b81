"""The regression gate's honesty (bench/bench_gate_honesty.py, figures in docs/benchmarks.md): over 1,000 seeded
A/A comparisons `--fail-on-significant-regression` fails at most 5% (plus two standard errors), and it catches a
planted 5-point drop in pass rate on 500 cases at least 80% of the time."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_gate_honesty.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_gate_honesty", BENCH)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclass looks its module up there
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_an_unchanged_suite_fails_the_gate_at_most_alpha() -> None:
    aa = _bench().simulate(1000, seed=11)
    assert aa.rate <= 0.05 + 2 * aa.se, f"{aa.failures}/{aa.trials} A/A comparisons failed"


@pytest.mark.slow
def test_a_planted_five_point_drop_is_caught_at_least_80_percent_of_the_time() -> None:
    drop = _bench().simulate(300, drop_points=0.05, seed=12)
    assert drop.rate >= 0.80, f"caught {drop.failures}/{drop.trials}"


def test_the_simulation_sees_what_it_plants() -> None:
    # The harness itself: a drop of 30 points is caught every time; a rise never fails the gate.
    b = _bench()
    assert b.simulate(5, drop_points=0.30, seed=1).failures == 5
    assert b.simulate(5, pass_rate=0.5, drop_points=0.0, flip=0.0, seed=2).failures == 0
