"""Multiple-comparison control."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray


def benjamini_hochberg(p_values: ArrayLike, *,
                       alpha: float = 0.05) -> tuple[NDArray[np.bool_], NDArray[np.float64]]:
    """Benjamini-Hochberg step-up: which hypotheses are rejected at FDR ``alpha``, and the adjusted p-values.

    Call it once per family (the aggregator keeps drops and improvements apart).
    """
    p = np.asarray(p_values, dtype=np.float64)
    m = int(p.size)
    if m == 0:
        return np.zeros(0, dtype=bool), np.zeros(0)
    order = np.argsort(p, kind="stable")
    ranked = p[order] * m / np.arange(1, m + 1)
    adj_sorted = np.minimum.accumulate(ranked[::-1])[::-1].clip(max=1.0)
    adjusted = np.empty(m)
    adjusted[order] = adj_sorted
    below = np.nonzero(p[order] <= alpha * np.arange(1, m + 1) / m)[0]
    rejected = np.zeros(m, dtype=bool)
    if below.size:
        rejected[order[: below[-1] + 1]] = True
    return rejected, adjusted
