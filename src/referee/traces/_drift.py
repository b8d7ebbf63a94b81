"""Drift of a monitored metric: a one-sided CUSUM (Page, 1954) of each new score against an earlier production
window, the method whose false alarms are controlled for a monitor that runs indefinitely.

Repeating a two-window test after every score would raise a false alarm every few hundred scores (each test has
its own 5%); CUSUM accumulates evidence instead, and its average run length to a false alarm (ARL0) is fixed by
the threshold ``h``. The reference is the first ``reference_size`` scores of production (the earlier window); each
later score ``x`` adds ``(mu0 - x) / sd0 - k`` to a sum floored at 0; over ``h`` it alarms, and the sum restarts.

The defaults (``k = 0.25``, ``h = 15``, reference 200 scores) target a drop of half a standard deviation (pass rate
0.8 -> 0.6); :func:`simulate` measures, with the reference estimated from simulated traffic as in production, the
number of scored traces between false alarms and the delay to detect the drop (figures in docs/monitoring.md,
``bench/bench_drift.py`` prints them). An offline run is context for the alert, never the reference.
"""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

DEFAULT_REFERENCE = 200
DEFAULT_WINDOW = 100
DEFAULT_K = 0.25
DEFAULT_H = 15.0
_SD_FLOOR = 0.05
"""A reference with (almost) no spread would turn any change into infinite evidence."""


@dataclass
class Alert:
    """A detected drop: the metric, both windows, the effect with its 95% interval and example traces."""

    metric: str
    reference_mean: float
    reference_n: int
    window_mean: float
    window_n: int
    """The scores since the estimated start of the drop (at least 10, at most the rolling window)."""
    effect: float
    low: float
    high: float
    examples: list[str] = field(default_factory=list)
    at_index: int = 0
    """How many scores of the metric had been seen when it alarmed."""
    offline: dict[str, Any] | None = None
    """The newest offline run of the monitor's suite that scored this metric, shown beside the windows for
    context and never compared against (curated cases and production traffic differ): ``run``, ``started_at``,
    ``commit``, ``branch``, ``mean``, ``low``, ``high``, ``n`` (see :func:`offline_note`)."""

    def message(self) -> str:
        text = (f"drift: {self.metric} fell from {self.reference_mean:.3f} (reference, {self.reference_n} traces) "
                f"to {self.window_mean:.3f} (last {self.window_n}); effect {self.effect:+.3f} "
                f"[{self.low:+.3f}, {self.high:+.3f}] 95% CI; examples: {', '.join(self.examples) or '-'}")
        note = offline_note(self.offline)
        return f"{text}; {note}" if note else text


def offline_note(offline: Mapping[str, Any] | None) -> str:
    """An offline run's figure for a metric in one line, marked as context (empty when there is none)."""
    if not offline or not isinstance(offline.get("mean"), int | float):
        return ""
    where = ", ".join(str(x) for x in (offline.get("branch"), str(offline.get("commit") or "")[:8],
                                        str(offline.get("started_at") or "")[:10]) if x)
    interval = (f" [{offline['low']:.3f}, {offline['high']:.3f}]"
                if isinstance(offline.get("low"), int | float) and isinstance(offline.get("high"), int | float) else "")
    return (f"offline run {str(offline.get('run') or '?')[:12]}{f' ({where})' if where else ''}: "
            f"{offline['mean']:.3f}{interval} over {offline.get('n', '?')} case(s), for context, not the reference")


def _mean_sd(xs: Sequence[float]) -> tuple[float, float]:
    n = len(xs)
    m = sum(xs) / n
    var = sum((x - m) ** 2 for x in xs) / (n - 1) if n > 1 else 0.0
    return m, math.sqrt(var)


class DriftDetector:
    """Feed it each scored trace's value (``update``); it returns an :class:`Alert` when the metric has dropped."""

    def __init__(self, metric: str, *, reference_size: int = DEFAULT_REFERENCE, window: int = DEFAULT_WINDOW,
                 k: float = DEFAULT_K, h: float = DEFAULT_H) -> None:
        if reference_size < 2 or window < 2 or not (math.isfinite(k) and k >= 0) or not (math.isfinite(h) and h > 0):
            raise ValueError("drift: reference_size and window >= 2, k >= 0 and h > 0")
        self.metric = metric
        self.reference_size = reference_size
        self.k, self.h = k, h
        self._reference: list[float] = []
        self._mu0 = 0.0
        self._sd0 = 1.0
        self._sum = 0.0
        self._since_zero = 0
        self._n = 0
        self._window: deque[tuple[float, str]] = deque(maxlen=window)

    @property
    def statistic(self) -> float:
        return self._sum

    def update(self, value: float, trace_id: str = "") -> Alert | None:
        if not math.isfinite(value):
            return None
        self._n += 1
        self._window.append((value, trace_id))
        if len(self._reference) < self.reference_size:
            self._reference.append(value)
            if len(self._reference) == self.reference_size:
                self._mu0, sd = _mean_sd(self._reference)
                self._sd0 = max(sd, _SD_FLOOR)
            return None
        self._sum = max(0.0, self._sum + (self._mu0 - value) / self._sd0 - self.k)
        self._since_zero = 0 if self._sum == 0.0 else self._since_zero + 1
        if self._sum <= self.h:
            return None
        alert = self._alert(self._since_zero)
        self._sum, self._since_zero = 0.0, 0
        return alert

    def _alert(self, since_change: int) -> Alert:
        # The window is the scores since the sum last left zero (CUSUM's estimate of when the drop began), at
        # least 10, at most ``window``: the effect is measured on the changed stretch, not diluted by the past.
        n = min(len(self._window), max(since_change, 10))
        recent = list(self._window)[-n:]
        vals = [v for v, _ in recent]
        wm, wsd = _mean_sd(vals)
        _, rsd = _mean_sd(self._reference)
        se = math.sqrt(wsd ** 2 / len(vals) + rsd ** 2 / len(self._reference))
        effect = wm - self._mu0
        worst = sorted(recent, key=lambda e: e[0])[:3]
        return Alert(metric=self.metric, reference_mean=self._mu0, reference_n=len(self._reference),
                     window_mean=wm, window_n=len(vals), effect=effect, low=effect - 1.96 * se,
                     high=effect + 1.96 * se, examples=[t for _, t in worst if t], at_index=self._n)


@dataclass
class Simulation:
    """Measured on Bernoulli pass/fail scores: ``false_alarm_spacing`` is the mean number of scored traces
    (after the reference) between false alarms on an unchanged stream; ``detection_delay`` the mean number of
    scored traces from a drop to its alarm; ``missed`` the runs that never alarmed within ``horizon``."""

    p0: float
    p1: float
    false_alarm_spacing: float
    false_alarms: int
    scores_watched: int
    detection_delay: float
    delay_runs: int
    missed: int


def simulate(*, p0: float = 0.8, p1: float = 0.6, seed: int = 0, stream: int = 200_000, delay_runs: int = 200,
             horizon: int = 5_000, reference_size: int = DEFAULT_REFERENCE, k: float = DEFAULT_K,
             h: float = DEFAULT_H) -> Simulation:
    """Seeded simulation of the detector: one long unchanged stream at ``p0`` for the false-alarm spacing (each
    stretch between alarms with its own freshly estimated reference, as a restarted monitor would), and
    ``delay_runs`` streams that drop from ``p0`` to ``p1`` right after the reference for the detection delay."""
    rng = random.Random(seed)
    alarms = 0
    watched = 0
    left = stream
    while left > 0:
        det = DriftDetector("sim", reference_size=reference_size, k=k, h=h)
        for _ in range(reference_size):
            det.update(1.0 if rng.random() < p0 else 0.0)
        while left > 0:
            left -= 1
            watched += 1
            if det.update(1.0 if rng.random() < p0 else 0.0) is not None:
                alarms += 1
                break
    delays: list[int] = []
    missed = 0
    for _ in range(delay_runs):
        det = DriftDetector("sim", reference_size=reference_size, k=k, h=h)
        for _ in range(reference_size):
            det.update(1.0 if rng.random() < p0 else 0.0)
        for t in range(1, horizon + 1):
            if det.update(1.0 if rng.random() < p1 else 0.0) is not None:
                delays.append(t)
                break
        else:
            missed += 1
    return Simulation(p0=p0, p1=p1, false_alarm_spacing=watched / alarms if alarms else math.inf,
                      false_alarms=alarms, scores_watched=watched,
                      detection_delay=sum(delays) / len(delays) if delays else math.inf, delay_runs=delay_runs,
                      missed=missed)
