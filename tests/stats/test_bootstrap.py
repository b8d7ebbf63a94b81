"""``bootstrap_paired``: a gain computed on the same resampled cases for both sides."""

from __future__ import annotations

import pytest


def test_paired_bootstrap_of_a_gain_is_narrower_than_the_unpaired_one() -> None:
    import numpy as np

    from referee.stats._bootstrap import bootstrap_ci, bootstrap_paired

    rng = np.random.default_rng(0)
    base = rng.random(80)
    better = base + 0.05 + rng.normal(0, 0.01, 80)  # the same cases, a little better each
    gain = bootstrap_paired(80, lambda ix: better[ix].mean(axis=1) - base[ix].mean(axis=1), seed=1)
    assert gain.estimate == pytest.approx(float((better - base).mean()))
    assert gain.lo is not None and gain.hi is not None and 0.04 < gain.lo < gain.hi < 0.06
    a, b = bootstrap_ci(better, seed=1), bootstrap_ci(base, seed=2)
    assert a.lo is not None and b.hi is not None and a.lo < b.hi  # unpaired intervals overlap: paired do not
    empty = bootstrap_paired(0, lambda ix: ix.mean(axis=1))
    assert empty.estimate is None and empty.n == 0
    undefined = bootstrap_paired(5, lambda ix: np.full(ix.shape[0], np.nan))
    assert undefined.estimate is None and undefined.lo is None
