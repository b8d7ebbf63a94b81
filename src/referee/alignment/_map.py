"""The score map: a monotone map from the judge's score to the human scale (isotonic regression), fitted on
training labels with no model call, and the pass mark where it first reaches a level."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray


def snap(values: NDArray[np.float64], levels: Sequence[float]) -> NDArray[np.float64]:
    """Each value as its nearest level; a value halfway between two goes up (as :meth:`ScoreMap.pass_mark`)."""
    lv = np.asarray(sorted(levels), dtype=np.float64)
    mids = (lv[:-1] + lv[1:]) / 2
    return np.asarray(lv[np.searchsorted(mids, values, side="right")], dtype=np.float64)


@dataclass(frozen=True)
class ScoreMap:
    """Knots ``(judge score, human value)``, linear between them and flat beyond; with ``levels`` (categorical
    labels) a mapped value is the nearest level."""

    knots: list[tuple[float, float]]
    levels: list[float] | None = None

    def __call__(self, scores: ArrayLike) -> NDArray[np.float64]:
        x = np.asarray(scores, dtype=np.float64)
        kx = np.array([k[0] for k in self.knots])
        ky = np.array([k[1] for k in self.knots])
        out = np.interp(x, kx, ky)
        if self.levels:
            out = snap(out, self.levels)
        return np.asarray(out, dtype=np.float64)

    def pass_mark(self, level: float) -> float | None:
        """The lowest judge score whose mapped value reaches ``level`` (None: no score does)."""
        kx = [k[0] for k in self.knots]
        ky = [k[1] for k in self.knots]
        if self.levels:
            # Rounded to the nearest level: reached where the fit passes the midpoint below ``level``.
            below = [v for v in self.levels if v < level]
            target = (max(below) + level) / 2 if below else level
        else:
            target = level
        if ky[0] >= target:
            return kx[0]  # every score seen in training reaches it
        for i in range(1, len(kx)):
            if ky[i] >= target:
                x0, x1, y0, y1 = kx[i - 1], kx[i], ky[i - 1], ky[i]
                return x1 if y1 == y0 else x0 + (target - y0) * (x1 - x0) / (y1 - y0)
        return None

    def to_dict(self) -> dict[str, object]:
        return {"knots": [list(k) for k in self.knots], "levels": self.levels}


def fit_map(scores: Sequence[float], labels: Sequence[float], *, levels: Sequence[float] | None = None) -> ScoreMap:
    """Isotonic (non-decreasing) least-squares fit of ``labels`` on ``scores``; tied scores share one value."""
    from scipy.optimize import isotonic_regression

    x = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    ux, inv = np.unique(x, return_inverse=True)
    w = np.bincount(inv).astype(np.float64)
    my = np.bincount(inv, weights=y) / w
    fit = isotonic_regression(my, weights=w, increasing=True).x
    # A flat stretch needs only its two ends: the map (linear between knots) is the same, the file smaller.
    keep = [i for i in range(ux.size)
            if i in (0, ux.size - 1) or not (fit[i - 1] == fit[i] == fit[i + 1])]
    return ScoreMap(knots=[(float(ux[i]), float(fit[i])) for i in keep],
                    levels=sorted(float(v) for v in levels) if levels else None)
