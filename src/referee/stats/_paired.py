"""Paired comparisons of two runs over the same cases: bootstrap of the mean difference, exact McNemar."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ._bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED
from ._counts import mean_bootstrap


@dataclass(frozen=True)
class PairedResult:
    """Mean of ``current - baseline`` over shared cases, its CI and a two-sided bootstrap p-value."""

    n: int
    diff: float
    lo: float | None
    hi: float | None
    p_value: float
    method: str = "paired percentile bootstrap"


def paired_bootstrap(diffs: ArrayLike, *, n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED,
                     alpha: float = 0.05, method: str = "auto") -> PairedResult:
    """Resample the shared cases (pairs) and read ``p = min(1, 2 * min(P(d <= 0), P(d >= 0)))`` off the
    bootstrap distribution of the mean difference ``d``, as the seed aggregator does. The distribution comes
    from the cheapest accurate method (``stats.counts``; ``method`` forces one, for tests)."""
    d = np.asarray(diffs, dtype=np.float64)
    n = int(d.size)
    if n == 0:
        return PairedResult(0, float("nan"), None, None, 1.0)
    obs = float(d.mean())
    b = mean_bootstrap(d, n_boot=n_boot, seed=seed, alpha=alpha, method=method)
    if b is None:
        return PairedResult(n, obs, None, None, 1.0)
    lo, hi = b.quantiles([alpha / 2, 1 - alpha / 2])
    return PairedResult(n, obs, lo, hi, b.p_two_sided(), f"paired {b.label}")


@dataclass(frozen=True)
class McNemarResult:
    """Exact McNemar test: ``b`` cases went pass -> fail, ``c`` fail -> pass."""

    b: int
    c: int
    p_value: float


def _binom_half_cdf(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2), summed in log space (exact to float precision for any n)."""
    if k >= n:
        return 1.0
    j = np.arange(1, k + 1, dtype=np.float64)
    log_c = np.concatenate(([0.0], np.cumsum(np.log((n - j + 1) / j))))  # log C(n, i), i = 0..k
    top = float(log_c.max())
    return float(np.exp(top - n * np.log(2.0)) * np.exp(log_c - top).sum())


def mcnemar_exact(b: int, c: int) -> McNemarResult:
    """Two-sided exact binomial test on the discordant pairs: the p-value of
    ``scipy.stats.binomtest(b, b + c, 0.5)``.

    At p = 0.5 the binomial is symmetric, so binomtest's two-sided p (the mass of outcomes no more likely than
    the observed one) is ``min(1, 2 * P(X <= min(b, c)))``; summing it directly avoids importing
    ``scipy.stats`` (a second of start-up on every ``referee score``). Tests check it against binomtest.
    """
    if b == c:
        return McNemarResult(b, c, 1.0)
    return McNemarResult(b, c, min(1.0, 2.0 * _binom_half_cdf(min(b, c), b + c)))
