"""Closed-form intervals."""

from __future__ import annotations

import math
from statistics import NormalDist

from ._bootstrap import Interval


def wilson_interval(successes: float, n: int, *, alpha: float = 0.05) -> Interval:
    """Wilson score interval for a proportion: sensible at 0/n and n/n where the normal interval is not."""
    if n <= 0:
        return Interval(None, None, None, 0, "Wilson").as_percent()
    z = NormalDist().inv_cdf(1 - alpha / 2)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # At 0/n and n/n the bound is exactly 0 or 1; rounding would leave 1e-17.
    lo = 0.0 if successes <= 0 else max(0.0, centre - half)
    hi = 1.0 if successes >= n else min(1.0, centre + half)
    return Interval(p, lo, hi, n, "Wilson").as_percent()
