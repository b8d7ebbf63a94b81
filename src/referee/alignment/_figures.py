"""Held-out figures: the raw judge, the aligned judge and the no-judge baseline against the labels on the
held-out cases only, each with its interval, and the aligned judge's gain over the other two with a paired
bootstrap interval (the same resampled cases for both sides of a gain)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from ..stats._agreement import alpha_interval_rows, correlation_ci, kappa_rows
from ..stats._bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED, Interval, bootstrap_paired

Metric = Literal["alpha", "kappa", "exact", "mae", "spearman"]
METRICS: tuple[str, ...] = ("alpha", "kappa", "exact", "mae", "spearman")
LOWER_IS_BETTER = frozenset({"mae"})
RANK_METRICS = frozenset({"spearman"})
METRIC_NAMES = {"alpha": "Krippendorff's alpha (interval)", "kappa": "Cohen's kappa", "exact": "exact agreement",
                "mae": "mean absolute delta", "spearman": "Spearman rho"}
REFERENCES = ("raw", "baseline")


@dataclass
class Figures:
    """Every figure on the held-out cases."""

    n: int
    metric: str
    """The decision metric."""
    values: dict[str, dict[str, Interval]] = field(default_factory=dict)
    """predictor (raw, aligned, baseline) -> metric -> its interval."""
    gains: dict[str, dict[str, Interval]] = field(default_factory=dict)
    """reference (raw, baseline) -> metric -> the aligned judge's gain over it (positive: better)."""

    def decision_gain(self, reference: str) -> Interval:
        return self.gains[reference][self.metric]

    def lower_bounds(self) -> dict[str, float | None]:
        return {ref: self.decision_gain(ref).lo for ref in REFERENCES}

    def to_dict(self) -> dict[str, object]:
        return {"n": self.n, "metric": self.metric,
                "values": {p: {m: iv.to_dict() for m, iv in ms.items()} for p, ms in self.values.items()},
                "gains": {r: {m: iv.to_dict() for m, iv in ms.items()} for r, ms in self.gains.items()}}


def _metric_rows(metric: str, levels: list[float], ordinal: bool
                 ) -> Callable[[NDArray[np.float64], NDArray[np.float64]], NDArray[np.float64]]:
    if metric == "mae":
        return lambda p, y: np.abs(p - y).mean(axis=1)
    if metric == "exact":
        return lambda p, y: np.isclose(p, y).mean(axis=1)
    if metric == "alpha":
        return alpha_interval_rows
    lv = np.asarray(levels, dtype=np.float64)

    def kappa(p: NDArray[np.float64], y: NDArray[np.float64]) -> NDArray[np.float64]:
        pi = np.abs(p[..., None] - lv).argmin(axis=-1)
        yi = np.abs(y[..., None] - lv).argmin(axis=-1)
        return kappa_rows(pi, yi, len(lv), "quadratic" if ordinal and len(lv) > 2 else None)

    return kappa


def metrics_for(kind: str) -> list[str]:
    """The figures a kind of label gets: categories get kappa and exact agreement, numbers alpha."""
    if kind == "binary":
        return ["kappa", "exact", "mae", "alpha", "spearman"]
    if kind == "ordinal":
        return ["alpha", "kappa", "exact", "mae", "spearman"]
    return ["alpha", "mae", "spearman"]


def default_metric(kind: str) -> str:
    """Cohen's kappa for pass/fail labels, Krippendorff's alpha (interval) for scores: both absolute agreement
    on the human scale, which a monotone map cannot game the way it can a rank correlation."""
    return "kappa" if kind == "binary" else "alpha"


def heldout_figures(y: NDArray[np.float64], preds: dict[str, NDArray[np.float64]], *, kind: str, metric: str,
                    levels: list[float], n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED,
                    decision_only: bool = False) -> Figures:
    """``preds``: ``raw``, ``aligned`` and ``baseline`` on the human scale, paired with ``y`` by position.
    ``decision_only``: only the decision metric (what the keep-or-refuse rule reads; for simulations)."""
    n = int(y.size)
    out = Figures(n=n, metric=metric)
    shown = [metric] if decision_only else list(dict.fromkeys([metric, *metrics_for(kind)]))
    for name, p in preds.items():
        out.values[name] = {}
        for m in shown:
            if m == "spearman":
                out.values[name][m] = correlation_ci(p, y, "spearman", n_boot=n_boot, seed=seed)
                continue
            f = _metric_rows(m, levels, kind == "ordinal")

            def value(ix: NDArray[np.int64], f: Callable[..., NDArray[np.float64]] = f,
                      p: NDArray[np.float64] = p) -> NDArray[np.float64]:
                return f(p[ix], y[ix])

            out.values[name][m] = bootstrap_paired(n, value, n_boot=n_boot, seed=seed)
    a = preds["aligned"]
    for ref in REFERENCES:
        r = preds[ref]
        out.gains[ref] = {}
        for m in shown:
            if m == "spearman":
                continue  # a rank correlation's gain is reported by neither method (see default_metric)
            f = _metric_rows(m, levels, kind == "ordinal")
            sign = -1.0 if m in LOWER_IS_BETTER else 1.0

            def gain(ix: NDArray[np.int64], f: Callable[..., NDArray[np.float64]] = f, r: NDArray[np.float64] = r,
                     sign: float = sign) -> NDArray[np.float64]:
                return sign * (f(a[ix], y[ix]) - f(r[ix], y[ix])) + 0.0  # + 0.0: never "-0.000"

            out.gains[ref][m] = bootstrap_paired(n, gain, n_boot=n_boot, seed=seed)
    return out


def labels_needed(gain: Interval, *, n_heldout: int, holdout: float, class_shares: dict[str, float],
                  half_width: float) -> dict[str, int] | None:
    """More labels per class so the gain's interval narrows to +-``half_width``: the interval shrinks as one over
    the square root of the held-out count, and the held-out side is ``holdout`` of the labels. None: no interval."""
    if gain.lo is None or gain.hi is None or n_heldout == 0:
        return None
    now = (gain.hi - gain.lo) / 2
    if now <= half_width:
        return dict.fromkeys(class_shares, 0)
    need_heldout = n_heldout * (now / half_width) ** 2
    more_total = (need_heldout - n_heldout) / holdout
    return {c: int(math.ceil(more_total * share)) for c, share in class_shares.items()}
