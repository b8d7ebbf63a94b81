"""Bootstrap of a mean from sufficient statistics, so a million cases cost as little as a hundred.

The mean of a bootstrap resample depends only on how many times each distinct value was drawn. Drawing
``n`` units with replacement from ``n`` values that take ``K`` distinct values ``v_j`` with frequencies
``f_j`` gives counts ``Multinomial(n, f_j / n)``: exactly the distribution index resampling gives, at a
cost of ``O(K)`` per resample instead of ``O(n)``. Pass flags have ``K <= 2``, judge scores a few dozen.
When values are nearly all distinct the exact index bootstrap runs in chunks while that stays cheap; past
that the resample mean is normal to any precision that matters (``n`` in the hundreds of thousands) and
the interval says so in its ``method``.
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED, Interval

# Above this many distinct values the multinomial draw stops being cheaper than index resampling.
_MAX_DISTINCT = 4096
# Largest n * n_boot the exact index bootstrap is allowed to gather (about a second of numpy).
_MAX_GATHER = 100_000_000
_CHUNK_CELLS = 4_000_000


def bootstrap_means(values: ArrayLike, *, n_boot: int = DEFAULT_N_BOOT,
                    seed: int = DEFAULT_SEED) -> tuple[NDArray[np.float64] | None, str]:
    """The bootstrap distribution of the mean of ``values`` (``n_boot`` resamples) and the method used.

    Returns ``(None, method)`` when the normal approximation is used instead (see the module docstring)
    or when there are fewer than 2 values.
    """
    x = np.asarray(values, dtype=np.float64)
    n = int(x.size)
    if n < 2:
        return None, "percentile bootstrap"
    rng = np.random.default_rng(seed)
    uniq, freq = np.unique(x, return_counts=True)
    if uniq.size == 1:
        return np.full(n_boot, float(uniq[0])), "percentile bootstrap"
    if uniq.size <= _MAX_DISTINCT:
        counts = rng.multinomial(n, freq / n, size=n_boot)
        return (counts @ uniq) / n, "percentile bootstrap"
    if n * n_boot <= _MAX_GATHER:
        out = np.empty(n_boot, dtype=np.float64)
        chunk = max(1, _CHUNK_CELLS // n)
        for start in range(0, n_boot, chunk):
            stop = min(n_boot, start + chunk)
            out[start:stop] = x[rng.integers(0, n, size=(stop - start, n))].mean(axis=1)
        return out, "percentile bootstrap"
    return None, "normal approximation (n large, values nearly all distinct)"


def mean_interval(values: ArrayLike, *, n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED,
                  alpha: float = 0.05) -> Interval:
    """95% (by default) percentile bootstrap CI of the mean, computed from counts of distinct values."""
    x = np.asarray(values, dtype=np.float64)
    n = int(x.size)
    if n == 0:
        return Interval(None, None, None, 0)
    est = float(x.mean())
    dist, method = bootstrap_means(x, n_boot=n_boot, seed=seed)
    if dist is not None:
        lo, hi = np.quantile(dist, [alpha / 2, 1 - alpha / 2])
        return Interval(est, float(lo), float(hi), n, method)
    if n < 2:
        return Interval(est, None, None, n, method)
    half = NormalDist().inv_cdf(1 - alpha / 2) * float(x.std(ddof=1)) / np.sqrt(n)
    return Interval(est, est - half, est + half, n, method)
