"""Agreement between two raters (a judge and humans, or one judge in two orders), with bootstrap CIs.

Cohen's kappa (unweighted, linear or quadratic weights), the confusion matrix, exact agreement, Spearman and
Kendall tau-b, mean absolute and mean signed difference. Undefined statistics (an empty sample, a rater that
always gives the same label) are ``nan`` / an undefined :class:`Interval`, never a made-up 0.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED, Interval, bootstrap_ci, bootstrap_stat


def _scipy_stats() -> Any:
    """scipy.stats, imported on first use: it costs ~0.5 s, which `referee --help` (it loads every command
    module) and the commands that never compute an agreement statistic should not pay."""
    from scipy import stats

    return stats


Weights = Literal["linear", "quadratic"] | None


def confusion_matrix(x: Sequence[Any], y: Sequence[Any], labels: Sequence[Any]) -> NDArray[np.int64]:
    """Counts with rows = ``x`` labels and columns = ``y`` labels, in the order of ``labels``.

    Pairs with a label outside ``labels`` are not counted.
    """
    idx = {lab: i for i, lab in enumerate(labels)}
    m = np.zeros((len(labels), len(labels)), dtype=np.int64)
    for a, b in zip(x, y, strict=True):
        if a in idx and b in idx:
            m[idx[a], idx[b]] += 1
    return m


def kappa_from_matrix(m: NDArray[Any], weights: Weights = None) -> float:
    """Cohen's kappa from a confusion matrix; ``nan`` when undefined (no pairs, or chance agreement is 1)."""
    m = np.asarray(m, dtype=np.float64)
    n = m.sum()
    k = m.shape[0]
    if n == 0 or k == 0:
        return math.nan
    i, j = np.indices((k, k))
    if weights is None:
        w = (i != j).astype(np.float64)
    elif weights == "linear":
        w = np.abs(i - j).astype(np.float64)
    else:
        w = ((i - j) ** 2).astype(np.float64)
    expected = np.outer(m.sum(axis=1), m.sum(axis=0)) / n
    denom = float((w * expected).sum())
    if denom == 0:
        return math.nan
    return 1.0 - float((w * m).sum()) / denom


def cohen_kappa(x: Sequence[Any], y: Sequence[Any], *, labels: Sequence[Any] | None = None,
                weights: Weights = None) -> float:
    """Cohen's kappa of two label sequences. For weighted kappa, ``labels`` must be in scale order."""
    if labels is None:
        labels = sorted(set(x) | set(y), key=lambda v: (str(type(v)), v))
    return kappa_from_matrix(confusion_matrix(x, y, labels), weights)


def _nan_to_none(v: float) -> float | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


def kappa_ci(x: Sequence[Any], y: Sequence[Any], *, labels: Sequence[Any] | None = None,
             weights: Weights = None, n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED) -> Interval:
    """Kappa with a percentile bootstrap CI over resampled pairs."""
    if labels is None:
        labels = sorted(set(x) | set(y), key=lambda v: (str(type(v)), v))
    idx = {lab: i for i, lab in enumerate(labels)}
    pairs = [(idx[a], idx[b]) for a, b in zip(x, y, strict=True) if a in idx and b in idx]
    n = len(pairs)
    if n == 0:
        return Interval(None, None, None, 0)
    xa = np.array([p[0] for p in pairs])
    ya = np.array([p[1] for p in pairs])
    k = len(labels)

    def stat(ix: NDArray[np.int64]) -> float:
        m = np.zeros((k, k), dtype=np.float64)
        np.add.at(m, (xa[ix], ya[ix]), 1.0)
        return kappa_from_matrix(m, weights)

    est = stat(np.arange(n))
    lo, hi = bootstrap_stat(n, stat, n_boot=n_boot, seed=seed)
    return Interval(_nan_to_none(est), lo, hi, n)


def _corr(kind: str, a: NDArray[np.float64], b: NDArray[np.float64]) -> float:
    if a.size < 2 or np.all(a == a[0]) or np.all(b == b[0]):
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "spearman":
            r = _scipy_stats().spearmanr(a, b).statistic
        elif kind == "kendall":
            r = _scipy_stats().kendalltau(a, b, variant="b").statistic
        else:
            r = _scipy_stats().pearsonr(a, b).statistic
    return float(r)


def correlation(x: ArrayLike, y: ArrayLike, kind: Literal["spearman", "kendall", "pearson"]) -> float:
    """Spearman rho, Kendall tau-b or Pearson r; ``nan`` when undefined (fewer than 2 pairs, a constant side)."""
    return _corr(kind, np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))


def correlation_ci(x: ArrayLike, y: ArrayLike, kind: Literal["spearman", "kendall", "pearson"], *,
                   n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED) -> Interval:
    """A correlation with a percentile bootstrap CI over resampled pairs."""
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    n = int(a.size)
    if n == 0:
        return Interval(None, None, None, 0)
    est = _corr(kind, a, b)
    if n < 2:
        return Interval(_nan_to_none(est), None, None, n)
    if kind in ("spearman", "kendall") and n <= _VECTOR_MAX_N:
        lo, hi = _vector_boot(kind, a, b, n_boot=n_boot, seed=seed)
    else:
        if kind == "kendall" and n > 400:
            n_boot = min(n_boot, 500)  # kendalltau is O(n log n) per resample; keep large samples quick
        lo, hi = bootstrap_stat(n, lambda ix: _corr(kind, a[ix], b[ix]), n_boot=n_boot, seed=seed)
    return Interval(_nan_to_none(est), lo, hi, n)


_VECTOR_MAX_N = 300


def _vector_boot(kind: str, a: NDArray[np.float64], b: NDArray[np.float64], *, n_boot: int, seed: int,
                 alpha: float = 0.05) -> tuple[float | None, float | None]:
    """Bootstrap percentiles of Spearman rho or Kendall tau-b, all resamples at once (small samples).

    Resamples where the statistic is undefined (a constant side) are dropped, as in ``bootstrap_stat``.
    """
    n = a.size
    rng = np.random.default_rng(seed)
    vals = np.empty(n_boot)
    chunk = max(1, 4_000_000 // (n * n)) if kind == "kendall" else max(1, 4_000_000 // n)
    for start in range(0, n_boot, chunk):
        stop = min(n_boot, start + chunk)
        ix = rng.integers(0, n, size=(stop - start, n))
        x, y = a[ix], b[ix]
        with np.errstate(invalid="ignore", divide="ignore"):
            if kind == "spearman":
                st = _scipy_stats()
                rx = st.rankdata(x, axis=1)
                ry = st.rankdata(y, axis=1)
                rx = rx - rx.mean(axis=1, keepdims=True)
                ry = ry - ry.mean(axis=1, keepdims=True)
                vals[start:stop] = (rx * ry).sum(1) / np.sqrt((rx * rx).sum(1) * (ry * ry).sum(1))
            else:
                sx = np.sign(x[:, :, None] - x[:, None, :])
                sy = np.sign(y[:, :, None] - y[:, None, :])
                num = (sx * sy).sum(axis=(1, 2))
                vals[start:stop] = num / np.sqrt(np.abs(sx).sum(axis=(1, 2)) * np.abs(sy).sum(axis=(1, 2)))
    vals = vals[np.isfinite(vals)]
    if vals.size == 0:
        return None, None
    lo, hi = np.quantile(vals, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def interval_text(iv: Interval | None, digits: int = 3, *, zero_width: str = "one-sided sample") -> str:
    """``est [lo, hi]`` for terminal tables, saying so when there is no CI or a zero-width one.

    A percentile bootstrap of a mean over a one-sided sample (every comparison won, every flag 0) gives
    ``[1, 1]`` or ``[0, 0]``: that is no evidence of certainty, so the text names the cause (``zero_width``;
    for a correlation or kappa it is usually a tiny sample).
    """
    if iv is None or iv.estimate is None:
        return "n/a" if iv is None or iv.n else "n/a (empty sample)"
    est = f"{iv.estimate:.{digits}f}"
    if iv.lo is None or iv.hi is None:
        return f"{est} (n={iv.n}: no CI)"
    text = f"{est} [{iv.lo:.{digits}f}, {iv.hi:.{digits}f}]"
    if iv.hi - iv.lo == 0:
        text += f" ({zero_width}: zero-width CI)"
    return text


def proportion_ci(flags: ArrayLike, *, n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED) -> Interval:
    """A share (mean of 0/1 flags) with a percentile bootstrap CI."""
    return bootstrap_ci(np.asarray(flags, dtype=np.float64), n_boot=n_boot, seed=seed)


@dataclass(frozen=True)
class Agreement:
    """Every agreement statistic for one pair of raters over the same units."""

    n: int
    exact: Interval | None
    """None when the labels are not categorical: equal floats are no measure of agreement."""
    mean_abs_diff: Interval
    mean_signed_diff: Interval
    """Mean of ``x - y`` (positive: the first rater scores higher)."""
    spearman: Interval
    kendall: Interval
    kappa: Interval | None
    """None when the labels are not categorical (continuous scores)."""
    kappa_weights: Weights
    labels: list[Any]
    confusion: list[list[int]] | None

    def to_dict(self) -> dict[str, Any]:
        def iv(i: Interval | None) -> dict[str, Any] | None:
            return None if i is None else i.to_dict()

        return {
            "n": self.n, "exact_agreement": iv(self.exact), "mean_abs_diff": iv(self.mean_abs_diff),
            "mean_signed_diff": iv(self.mean_signed_diff), "spearman": iv(self.spearman),
            "kendall_tau_b": iv(self.kendall), "kappa": iv(self.kappa),
            "kappa_weights": self.kappa_weights, "labels": self.labels, "confusion": self.confusion,
        }


def agreement(x: Sequence[float], y: Sequence[float], *, categorical: bool, ordinal: bool,
              labels: Sequence[float] | None = None, n_boot: int = DEFAULT_N_BOOT,
              seed: int = DEFAULT_SEED) -> Agreement:
    """All agreement statistics of ``x`` (e.g. the judge) against ``y`` (e.g. humans), paired by position.

    ``categorical``: the values are labels from a small set (kappa and a confusion matrix are computed);
    ``ordinal``: that set is ordered, so kappa is quadratic-weighted.
    """
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError("the two raters must rate the same units")
    n = int(a.size)
    diff = a - b
    kappa = None
    confusion = None
    weights: Weights = None
    labs: list[Any] = []
    if categorical:
        labs = sorted(set(labels) if labels is not None else set(a.tolist()) | set(b.tolist()))
        weights = "quadratic" if ordinal and len(labs) > 2 else None
        kappa = kappa_ci(a.tolist(), b.tolist(), labels=labs, weights=weights, n_boot=n_boot, seed=seed)
        confusion = confusion_matrix(a.tolist(), b.tolist(), labs).tolist()
    return Agreement(
        n=n,
        exact=bootstrap_ci((np.isclose(a, b)).astype(np.float64), n_boot=n_boot, seed=seed) if categorical else None,
        mean_abs_diff=bootstrap_ci(np.abs(diff), n_boot=n_boot, seed=seed),
        mean_signed_diff=bootstrap_ci(diff, n_boot=n_boot, seed=seed),
        spearman=correlation_ci(a, b, "spearman", n_boot=n_boot, seed=seed),
        kendall=correlation_ci(a, b, "kendall", n_boot=n_boot, seed=seed),
        kappa=kappa, kappa_weights=weights, labels=labs, confusion=confusion,
    )


def alpha_interval_rows(x: NDArray[np.float64], y: NDArray[np.float64]) -> NDArray[np.float64]:
    """Krippendorff's alpha at the interval level of two raters over the same units, one value per row of
    ``x``/``y`` (2-D: resamples x units), in closed form so a bootstrap computes thousands at once.

    With two values per unit and none missing, the observed disagreement is the mean squared difference and
    the expected one twice the variance (ddof 1) of all values pooled; equal to the ``krippendorff`` package's
    ``alpha(..., level_of_measurement="interval")`` (tested). ``nan`` where every value is the same.
    """
    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    y = np.atleast_2d(np.asarray(y, dtype=np.float64))
    pooled = np.concatenate([x, y], axis=1)
    n_values = pooled.shape[1]
    if n_values < 2:
        return np.full(x.shape[0], math.nan)
    d_o = ((x - y) ** 2).mean(axis=1)
    d_e = 2.0 * pooled.var(axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = 1.0 - d_o / d_e
    return np.where(d_e > 0, a, math.nan)


def alpha_interval(x: ArrayLike, y: ArrayLike) -> float:
    """Krippendorff's alpha (interval level) of two raters paired by position; ``nan`` when undefined."""
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError("the two raters must rate the same units")
    return float(alpha_interval_rows(a[None, :], b[None, :])[0]) if a.size else math.nan


def kappa_rows(x: NDArray[np.int64], y: NDArray[np.int64], k: int, weights: Weights = None) -> NDArray[np.float64]:
    """Cohen's kappa per row of two 2-D arrays of label indices (0..k-1), as :func:`kappa_from_matrix` computes
    it from each row's confusion matrix; ``nan`` where undefined."""
    x = np.atleast_2d(x)
    y = np.atleast_2d(y)
    r, n = x.shape
    cell = (np.arange(r)[:, None] * (k * k) + x * k + y).ravel()
    m = np.bincount(cell, minlength=r * k * k).astype(np.float64).reshape(r, k, k)
    i, j = np.indices((k, k))
    if weights is None:
        w = (i != j).astype(np.float64)
    elif weights == "linear":
        w = np.abs(i - j).astype(np.float64)
    else:
        w = ((i - j) ** 2).astype(np.float64)
    total = m.sum(axis=(1, 2))
    expected = m.sum(axis=2)[:, :, None] * m.sum(axis=1)[:, None, :] / np.maximum(total, 1)[:, None, None]
    denom = (w * expected).sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        kap = 1.0 - (w * m).sum(axis=(1, 2)) / denom
    return np.where((denom > 0) & (total > 0), kap, math.nan)
