"""The bootstrap distribution of a mean, by whichever method is cheapest for the data at hand.

``referee score`` takes the percentile bootstrap of a mean (a pass rate, a mean score, a mean paired
difference) dozens of times per run, on anything from ten cases to a million. Three methods give the same
distribution; the cost of each is known from ``n`` (values), ``K`` (distinct values) and ``B`` (resamples):

- ``counts``: the mean of a resample depends only on how many times each distinct value was drawn, and
  those counts are ``Multinomial(n, f_j / n)``: exactly the distribution index resampling gives, at
  ``O(K)`` per resample (about 100 ns per distinct value on the development machine).
- ``index``: draw ``n`` indices per resample and average (about 10 ns per value).
- ``expansion``: no resampling at all. The bootstrap distribution of the mean is known in closed form up to
  its cumulants, which are those of the data scaled by ``n``: mean ``m``, variance ``m2 / n``, skewness
  ``g1 / sqrt(n)``, excess kurtosis ``g2 / n`` (``m2``, ``g1``, ``g2``: the data's population variance,
  skewness and excess kurtosis). Its quantiles follow from the Cornish-Fisher expansion to order ``1/n``
  and its tail probabilities from the matching Edgeworth expansion, with an error of order ``n^-3/2``:
  the infinite-``B`` bootstrap, without Monte Carlo error. ``O(n)`` once.

The choice (:func:`choose_method`): the cheaper exact method (``counts`` or ``index``) when its estimated cost
is within :data:`BUDGET_S`; otherwise the expansion when it is accurate enough here, i.e. the size of its
order-``1/n`` terms plus the lattice step of the resample means (data on a grid give means on a finer grid)
is at most a quarter of the Monte Carlo standard error the ``B`` resamples would have had at the interval's
quantiles (so its error adds at most ~3% to that error in quadrature); otherwise the cheaper exact method,
whatever it costs. Small samples, few distinct values and skewed data thus always get an exact resampling
bootstrap; a million judge scores with three decimals get the expansion in microseconds. Tests check every
method against a direct index bootstrap with a tolerance derived from the Monte Carlo error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED, Interval

METHODS = ("counts", "index", "expansion")
# Estimated cost of the exact methods (seconds per multinomial cell / per resampled value), measured with
# numpy 2 on the 2-core development machine; only their ratio and rough size matter.
_S_PER_CELL = 100e-9
_S_PER_VALUE = 10e-9
BUDGET_S = 0.05
"""An exact bootstrap estimated to cost more than this uses the expansion where that is accurate enough."""
_ACCURACY = 0.25
"""The expansion's error bound, as a share of the Monte Carlo standard error it replaces."""
_CHUNK_CELLS = 4_000_000
_NORMAL = NormalDist()
LABEL = "percentile bootstrap"
EXPANSION_LABEL = "percentile bootstrap (Cornish-Fisher expansion, n large)"


@dataclass(frozen=True)
class _Moments:
    mean: float
    sd: float
    """Standard deviation of the resample mean: sqrt(m2 / n)."""
    skew: float
    """Skewness of the resample mean: g1 / sqrt(n)."""
    kurt: float
    """Excess kurtosis of the resample mean: g2 / n."""


def _moments(x: NDArray[np.float64]) -> _Moments:
    n = x.size
    mean = float(x.mean())
    d = x - mean
    d2 = d * d
    m2 = float(d2.mean())
    m3 = float((d2 * d).mean())
    m4 = float((d2 * d2).mean())
    if m2 <= 0:
        return _Moments(mean, 0.0, 0.0, 0.0)
    return _Moments(mean, math.sqrt(m2 / n), m3 / m2 ** 1.5 / math.sqrt(n), (m4 / (m2 * m2) - 3.0) / n)


def _cf(z: float, m: _Moments) -> float:
    """Cornish-Fisher: the standardised quantile of the resample mean at the normal quantile ``z``."""
    g, k = m.skew, m.kurt
    return z + g / 6 * (z * z - 1) + k / 24 * (z ** 3 - 3 * z) - g * g / 36 * (2 * z ** 3 - 5 * z)


def _edgeworth_cdf(t: float, m: _Moments) -> float:
    """Edgeworth: P(resample mean <= mean + t * sd), to the same order as :func:`_cf`."""
    g, k = m.skew, m.kurt
    corr = (g / 6 * (t * t - 1) + k / 24 * (t ** 3 - 3 * t)
            + g * g / 72 * (t ** 5 - 10 * t ** 3 + 15 * t))
    return min(1.0, max(0.0, _NORMAL.cdf(t) - _NORMAL.pdf(t) * corr))


def mc_quantile_error(n_boot: int, alpha: float) -> float:
    """Monte Carlo standard error of a percentile bound from ``n_boot`` resamples, in units of the resample
    mean's standard deviation (normal shape: ``sqrt(p (1 - p) / B) / phi(z_p)``, ``p = alpha / 2``)."""
    p = alpha / 2
    return math.sqrt(p * (1 - p) / n_boot) / _NORMAL.pdf(_NORMAL.inv_cdf(p))


def expansion_error(m: _Moments, n: int, min_gap: float, alpha: float) -> float:
    """A bound on the expansion's error at the interval's quantiles, in units of the resample mean's standard
    deviation: its order-1/n terms (the terms left out are of order n^-3/2) plus the lattice step
    ``min_gap / n`` of the resample means."""
    z = abs(_NORMAL.inv_cdf(alpha / 2))
    order_1_n = abs(m.kurt) / 24 * abs(z ** 3 - 3 * z) + m.skew ** 2 / 36 * abs(2 * z ** 3 - 5 * z)
    return order_1_n + (min_gap / n) / m.sd


def choose_method(n: int, distinct: int, n_boot: int, *, expansion_ok: bool) -> str:
    """``counts`` or ``index`` (exact resampling, the cheaper) unless that costs more than :data:`BUDGET_S`
    and the expansion is accurate enough here (``expansion_ok``), then ``expansion``."""
    counts_s, index_s = distinct * n_boot * _S_PER_CELL, n * n_boot * _S_PER_VALUE
    exact = "counts" if counts_s <= index_s else "index"
    if min(counts_s, index_s) <= BUDGET_S or not expansion_ok:
        return exact
    return "expansion"


@dataclass(frozen=True)
class MeanBootstrap:
    """The bootstrap distribution of a mean: resample means (``draws``) or, for the expansion, its cumulants."""

    n: int
    estimate: float
    method: str
    """``counts``, ``index``, ``expansion`` or ``constant`` (every value equal)."""
    draws: NDArray[np.float64] | None
    moments: _Moments | None = None

    @property
    def label(self) -> str:
        return EXPANSION_LABEL if self.method == "expansion" else LABEL

    def quantiles(self, probs: list[float]) -> list[float]:
        if self.draws is not None:
            return [float(q) for q in np.quantile(self.draws, probs)]
        assert self.moments is not None
        m = self.moments
        return [m.mean + m.sd * _cf(_NORMAL.inv_cdf(p), m) for p in probs]

    def p_two_sided(self) -> float:
        """``min(1, 2 * min(P(mean* <= 0), P(mean* >= 0)))`` (the seed's bootstrap p-value)."""
        if self.draws is not None:
            return min(1.0, 2 * min(float(np.mean(self.draws <= 0)), float(np.mean(self.draws >= 0))))
        assert self.moments is not None
        m = self.moments
        le = _edgeworth_cdf(-m.mean / m.sd, m)
        return min(1.0, 2 * min(le, 1.0 - le))


def mean_bootstrap(values: ArrayLike, *, n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED,
                   alpha: float = 0.05, method: str = "auto") -> MeanBootstrap | None:
    """The bootstrap distribution of the mean of ``values`` (None for fewer than 2 values). ``method``:
    ``auto`` (see the module docstring) or one of :data:`METHODS` to force it (tests)."""
    x = np.asarray(values, dtype=np.float64)
    n = int(x.size)
    if n < 2:
        return None
    uniq, freq = np.unique(x, return_counts=True)
    if uniq.size == 1:
        return MeanBootstrap(n, float(uniq[0]), "constant", np.full(n_boot, float(uniq[0])))
    m = _moments(x)
    if method == "auto":
        ok = expansion_error(m, n, float(np.diff(uniq).min()), alpha) <= _ACCURACY * mc_quantile_error(
            n_boot, alpha)
        method = choose_method(n, int(uniq.size), n_boot, expansion_ok=ok)
    if method == "expansion":
        return MeanBootstrap(n, m.mean, method, None, m)
    rng = np.random.default_rng(seed)
    out = np.empty(n_boot, dtype=np.float64)
    if method == "counts":
        chunk = max(1, _CHUNK_CELLS // uniq.size)
        for start in range(0, n_boot, chunk):
            stop = min(n_boot, start + chunk)
            out[start:stop] = (rng.multinomial(n, freq / n, size=stop - start) @ uniq) / n
    elif method == "index":
        chunk = max(1, _CHUNK_CELLS // n)
        for start in range(0, n_boot, chunk):
            stop = min(n_boot, start + chunk)
            out[start:stop] = x[rng.integers(0, n, size=(stop - start, n))].mean(axis=1)
    else:
        raise ValueError(f"unknown bootstrap method {method!r}")
    return MeanBootstrap(n, m.mean, method, out, m)


def bootstrap_means(values: ArrayLike, *, n_boot: int = DEFAULT_N_BOOT,
                    seed: int = DEFAULT_SEED) -> tuple[NDArray[np.float64] | None, str]:
    """The bootstrap resample means of ``values`` and the method's label; ``(None, label)`` when the expansion
    is used instead of resampling (see the module docstring) or when there are fewer than 2 values."""
    b = mean_bootstrap(values, n_boot=n_boot, seed=seed)
    if b is None:
        return None, LABEL
    return b.draws, b.label


def mean_interval(values: ArrayLike, *, n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED,
                  alpha: float = 0.05) -> Interval:
    """95% (by default) percentile bootstrap CI of the mean, by the cheapest accurate method."""
    x = np.asarray(values, dtype=np.float64)
    n = int(x.size)
    if n == 0:
        return Interval(None, None, None, 0)
    est = float(x.mean())
    b = mean_bootstrap(x, n_boot=n_boot, seed=seed, alpha=alpha)
    if b is None:
        return Interval(est, None, None, n)
    lo, hi = b.quantiles([alpha / 2, 1 - alpha / 2])
    return Interval(est, lo, hi, n, b.label)
