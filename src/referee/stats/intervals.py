"""Closed-form intervals."""

from __future__ import annotations

import math
from statistics import NormalDist

from .bootstrap import Interval


def wilson_interval(successes: float, n: int, *, alpha: float = 0.05) -> Interval:
    """Wilson score interval for a proportion: sensible at 0/n and n/n where the normal interval is not."""
    if n <= 0:
        return Interval(None, None, None, 0, "Wilson")
    z = NormalDist().inv_cdf(1 - alpha / 2)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return Interval(p, max(0.0, centre - half), min(1.0, centre + half), n, "Wilson")
