"""How big a drop the current number of cases can detect, and how many cases a given drop needs."""

from __future__ import annotations

import math
from statistics import NormalDist


def _z(alpha: float, power: float) -> float:
    nd = NormalDist()
    return nd.inv_cdf(1 - alpha / 2) + nd.inv_cdf(power)


def min_detectable_drop(sd: float, n: int, *, alpha: float = 0.05, power: float = 0.8) -> float | None:
    """Smallest true drop in a mean (two-sided test at ``alpha``) detected with probability ``power``, given
    the per-case standard deviation ``sd`` of the compared quantity (paired differences, or the planning
    value ``sqrt(2 p (1 - p))`` for two independent runs)."""
    if n <= 0:
        return None
    return _z(alpha, power) * sd / math.sqrt(n)


def cases_needed(sd: float, drop: float, *, alpha: float = 0.05, power: float = 0.8) -> int | None:
    """Cases needed for ``drop`` to be detected with probability ``power``."""
    if drop <= 0:
        return None
    return max(1, math.ceil((_z(alpha, power) * sd / drop) ** 2))
