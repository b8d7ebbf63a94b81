"""Bootstrap confidence intervals, vectorised with numpy (shared by score, pairwise and calibrate)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

DEFAULT_N_BOOT = 2000
DEFAULT_SEED = 12345


@dataclass(frozen=True)
class Interval:
    """A point estimate with a confidence interval. ``lo``/``hi`` are None when the sample is too small."""

    estimate: float | None
    lo: float | None
    hi: float | None
    n: int
    method: str = "percentile bootstrap"
    percent: ClassVar[bool] = False
    """Shown as a percentage (a rate or proportion: ``84.2% [63.2%, 100.0%]``) rather than a mean (``0.576
    [0.350, 0.793]``). Display only, so not a field: equality, ``to_dict`` and ``dataclasses.asdict`` (the JSON
    summary) are unchanged. Set by :meth:`as_percent`."""

    def _fmt(self, x: float | None) -> str:
        if x is None:
            return "n/a"
        return f"{x:.1%}" if self.percent else f"{x:.3f}"

    def __str__(self) -> str:
        return f"{self._fmt(self.estimate)} [{self._fmt(self.lo)}, {self._fmt(self.hi)}]"

    def __repr__(self) -> str:
        # Short on purpose: notebooks and ``print(summary.overall)`` show this, not the six fields.
        return str(self)

    def as_percent(self) -> Interval:
        """The same interval, displayed as a percentage."""
        out = replace(self)
        object.__setattr__(out, "percent", True)
        return out

    def to_dict(self) -> dict[str, float | int | None]:
        """The JSON shape every report uses (``method`` is left out)."""
        return {"estimate": self.estimate, "lo": self.lo, "hi": self.hi, "n": self.n}


def bootstrap_ci(
    values: ArrayLike,
    stat: Callable[[NDArray[np.float64]], NDArray[np.float64]] | None = None,
    *,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
    alpha: float = 0.05,
) -> Interval:
    """Percentile bootstrap CI of ``stat`` (default: the mean) over ``values``.

    ``stat`` receives a 2-D array (resamples x n) and must reduce along axis 1. Resampling is done in chunks
    so memory stays bounded for large n.
    """
    x = np.asarray(values, dtype=np.float64)
    n = int(x.size)
    if n == 0:
        return Interval(None, None, None, 0)
    reduce = stat or (lambda a: a.mean(axis=1))
    est = float(reduce(x[None, :])[0])
    if n < 2:
        return Interval(est, None, None, n)
    rng = np.random.default_rng(seed)
    out = np.empty(n_boot, dtype=np.float64)
    chunk = max(1, min(n_boot, 4_000_000 // n))
    for start in range(0, n_boot, chunk):
        stop = min(n_boot, start + chunk)
        idx = rng.integers(0, n, size=(stop - start, n))
        out[start:stop] = reduce(x[idx])
    lo, hi = np.quantile(out, [alpha / 2, 1 - alpha / 2])
    return Interval(est, float(lo), float(hi), n)


def bootstrap_stat(
    n: int,
    stat_from_indices: Callable[[NDArray[np.int64]], float],
    *,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
    alpha: float = 0.05,
) -> tuple[float | None, float | None]:
    """Percentile CI for any statistic of resampled units (e.g. kappa over paired labels).

    ``stat_from_indices`` gets one array of resampled indices and returns the statistic (NaN when undefined
    for that resample; such resamples are dropped).
    """
    if n < 2:
        return None, None
    rng = np.random.default_rng(seed)
    vals = np.array([stat_from_indices(rng.integers(0, n, size=n)) for _ in range(n_boot)], dtype=np.float64)
    vals = vals[~np.isnan(vals)]
    if vals.size == 0:
        return None, None
    lo, hi = np.quantile(vals, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def bootstrap_paired(
    n: int,
    stat_of_indices: Callable[[NDArray[np.int64]], NDArray[np.float64]],
    *,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
    alpha: float = 0.05,
) -> Interval:
    """Percentile CI of a statistic of units resampled together (a paired bootstrap: the gain of one rater
    over another on the same cases is computed on the same resample for both).

    ``stat_of_indices`` gets a 2-D array of indices (resamples x n) and returns one value per row (NaN when
    undefined for that resample; such resamples are dropped). The estimate is the statistic on every unit.
    """
    if n == 0:
        return Interval(None, None, None, 0)
    est = float(stat_of_indices(np.arange(n, dtype=np.int64)[None, :])[0])
    est_or_none = est if np.isfinite(est) else None
    if n < 2:
        return Interval(est_or_none, None, None, n)
    rng = np.random.default_rng(seed)
    out = np.empty(n_boot, dtype=np.float64)
    chunk = max(1, min(n_boot, 2_000_000 // n))
    for start in range(0, n_boot, chunk):
        stop = min(n_boot, start + chunk)
        out[start:stop] = stat_of_indices(rng.integers(0, n, size=(stop - start, n)))
    out = out[np.isfinite(out)]
    if out.size == 0:
        return Interval(est_or_none, None, None, n)
    lo, hi = np.quantile(out, [alpha / 2, 1 - alpha / 2])
    return Interval(est_or_none, float(lo), float(hi), n)
