"""The drift detector: a planted drop raises an alert naming the metric, windows, effect and examples; an
unchanged stream does not (seeded, small streams); the simulation's figures are what docs/monitoring.md states."""

from __future__ import annotations

import math
import random

from referee.traces import Alert, DriftDetector, simulate


def _stream(det: DriftDetector, p: float, n: int, rng: random.Random, start: int = 0) -> list[Alert]:
    alerts: list[Alert] = []
    for i in range(n):
        a = det.update(1.0 if rng.random() < p else 0.0, f"t{start + i}")
        if a is not None:
            alerts.append(a)
    return alerts


def test_a_planted_drop_raises_an_alert_with_its_effect_and_examples() -> None:
    rng = random.Random(1)
    det = DriftDetector("faithfulness")
    assert _stream(det, 0.85, 400, rng) == []
    alerts = _stream(det, 0.4, 200, rng, start=400)
    assert alerts
    a = alerts[0]
    assert a.metric == "faithfulness" and a.reference_n == 200
    assert a.effect < 0 and a.low < a.effect < a.high and a.high < 0
    assert a.examples and all(int(t[1:]) >= 300 for t in a.examples)  # from the recent window
    assert "faithfulness" in a.message() and "95% CI" in a.message()


def test_an_unchanged_stream_raises_nothing() -> None:
    rng = random.Random(2)
    det = DriftDetector("relevance")
    assert _stream(det, 0.8, 3000, rng) == []


def test_non_finite_scores_are_ignored() -> None:
    det = DriftDetector("m", reference_size=2, window=2)
    assert det.update(math.nan) is None and det.update(math.inf) is None
    assert det.statistic == 0.0


def test_the_simulation_measures_spacing_and_delay() -> None:
    sim = simulate(stream=50_000, delay_runs=50, seed=3)
    assert sim.scores_watched == 50_000
    assert sim.false_alarm_spacing > 5_000  # few false alarms on an unchanged stream
    assert sim.detection_delay < 150 and sim.missed == 0
