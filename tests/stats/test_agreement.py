"""Agreement statistics: kappa (unweighted and quadratic), confusion matrix, correlations, CIs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from referee.stats._agreement import (
    agreement,
    cohen_kappa,
    confusion_matrix,
    correlation,
    correlation_ci,
    kappa_ci,
)


def test_unweighted_kappa_by_hand() -> None:
    # po = 3/4; pe = (2*1 + 2*3)/16 = 1/2 -> kappa = 0.5
    assert cohen_kappa([0, 1, 0, 1], [0, 1, 1, 1]) == pytest.approx(0.5)


def test_quadratic_kappa_by_hand() -> None:
    x, y = [1, 2, 3], [1, 3, 3]
    # O: (1,1),(2,3),(3,3). Row sums x: 1,1,1; col sums y: 1,0,2. E = outer/3.
    o = np.zeros((3, 3))
    for a, b in zip(x, y, strict=True):
        o[a - 1, b - 1] += 1
    e = np.outer(o.sum(1), o.sum(0)) / 3
    w = np.array([[(i - j) ** 2 for j in range(3)] for i in range(3)], dtype=float)
    expected = 1 - (w * o).sum() / (w * e).sum()
    assert cohen_kappa(x, y, labels=[1, 2, 3], weights="quadratic") == pytest.approx(expected)
    # Near misses cost less with quadratic weights than with none.
    assert cohen_kappa(x, y, labels=[1, 2, 3], weights="quadratic") > cohen_kappa(x, y, labels=[1, 2, 3])


def test_kappa_is_undefined_for_one_sided_raters() -> None:
    assert math.isnan(cohen_kappa([1, 1, 1], [1, 1, 1]))
    iv = kappa_ci([1, 1, 1], [1, 1, 1], n_boot=100)
    assert iv.estimate is None
    assert kappa_ci([], []).n == 0


def test_confusion_matrix() -> None:
    m = confusion_matrix([1, 1, 2, 3], [1, 2, 2, 3], [1, 2, 3])
    assert m.tolist() == [[1, 1, 0], [0, 1, 0], [0, 0, 1]]


def test_correlations_match_scipy_and_have_cis() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=60)
    y = x + rng.normal(size=60)
    assert correlation(x, y, "spearman") == pytest.approx(stats.spearmanr(x, y).statistic)
    assert correlation(x, y, "kendall") == pytest.approx(stats.kendalltau(x, y).statistic)
    iv = correlation_ci(x, y, "kendall", n_boot=300)
    assert iv.lo is not None and iv.hi is not None and iv.lo < (iv.estimate or 0) < iv.hi
    assert math.isnan(correlation([1, 2, 3], [5, 5, 5], "spearman"))


def test_agreement_bundle_ordinal() -> None:
    judge = [5, 4, 3, 2, 1, 5, 4, 3]
    human = [5, 5, 3, 2, 2, 4, 4, 3]
    a = agreement(judge, human, categorical=True, ordinal=True, labels=[1, 2, 3, 4, 5], n_boot=200)
    assert a.kappa_weights == "quadratic"
    assert a.exact is not None and a.exact.estimate == pytest.approx(5 / 8)
    assert a.mean_abs_diff.estimate == pytest.approx(3 / 8)
    assert a.mean_signed_diff.estimate == pytest.approx((0 - 1 + 0 + 0 - 1 + 1 + 0 + 0) / 8)
    assert a.confusion is not None and sum(map(sum, a.confusion)) == 8
    assert a.kappa is not None and a.kappa.estimate is not None and a.kappa.estimate > 0.7


def test_agreement_continuous_has_no_kappa() -> None:
    a = agreement([0.1, 0.5, 0.9], [0.2, 0.4, 1.0], categorical=False, ordinal=False, n_boot=100)
    assert a.kappa is None and a.confusion is None
    assert a.spearman.estimate == pytest.approx(1.0)


def test_alpha_interval_in_closed_form_equals_the_krippendorff_package() -> None:
    import krippendorff
    import numpy as np

    from referee.stats._agreement import alpha_interval, alpha_interval_rows

    rng = np.random.default_rng(3)
    for n in (5, 30, 200):
        x = rng.integers(1, 6, size=n).astype(float)
        y = np.clip(x + rng.integers(-1, 2, size=n), 1, 5)
        ref = krippendorff.alpha(reliability_data=np.vstack([x, y]), level_of_measurement="interval")
        assert alpha_interval(x, y) == pytest.approx(ref, abs=1e-9)
        rows = alpha_interval_rows(np.vstack([x, y]), np.vstack([y, x]))
        assert rows == pytest.approx([ref, ref], abs=1e-9)
    assert math.isnan(alpha_interval([2.0, 2.0], [2.0, 2.0]))


def test_kappa_rows_equals_kappa_from_each_matrix() -> None:
    import numpy as np

    from referee.stats._agreement import confusion_matrix, kappa_from_matrix, kappa_rows

    rng = np.random.default_rng(5)
    x = rng.integers(0, 4, size=(6, 25))
    y = np.where(rng.random((6, 25)) < 0.6, x, rng.integers(0, 4, size=(6, 25)))
    for w in (None, "quadratic"):
        got = kappa_rows(x, y, 4, w)
        want = [kappa_from_matrix(confusion_matrix(a.tolist(), b.tolist(), [0, 1, 2, 3]), w)
                for a, b in zip(x, y, strict=True)]
        assert got == pytest.approx(want)
    assert math.isnan(kappa_rows(np.zeros((1, 5), int), np.zeros((1, 5), int), 2)[0])
