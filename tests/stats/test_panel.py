"""Panel statistics against hand-computed values and against the krippendorff package."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest
from scipy.stats import binomtest

from referee.stats._panel import (
    binomial_lower_bound,
    clopper_pearson,
    effective_votes,
    independent_majority,
    krippendorff_alpha,
    pairwise_kappa,
)


def test_alpha_by_hand_two_raters_four_items() -> None:
    # Coincidences: (a,a) 2, (a,b)+(b,a) 2, (b,b) 4; n = 8, n_a = 3, n_b = 5.
    # D_o = 2/8, D_e = 2 * 3 * 5 / (8 * 7); alpha = 1 - D_o / D_e = 1 - 112/240.
    iv = krippendorff_alpha([["a", "a", "b", "b"], ["a", "b", "b", "b"]], n_boot=200)
    assert iv.estimate == pytest.approx(1 - 112 / 240)
    assert iv.n == 4


def test_alpha_matches_the_package_on_its_own_example_and_on_random_data_with_gaps() -> None:
    nan = None
    data = [[nan, nan, nan, nan, nan, 3, 4, 1, 2, 1, 1, 3, 3, nan, 3],
            [1, nan, 2, 1, 3, 3, 4, 3, nan, nan, nan, nan, nan, nan, nan],
            [nan, nan, 2, 1, 3, 4, 4, nan, 2, 1, 1, 3, 3, nan, 4]]
    assert krippendorff_alpha(data, n_boot=0).estimate == pytest.approx(0.691358, abs=1e-6)
    assert krippendorff_alpha(data, level="interval", n_boot=0).estimate == pytest.approx(0.810845, abs=1e-6)
    rng = np.random.default_rng(7)
    for _ in range(5):
        raw = rng.integers(0, 3, size=(4, 60)).astype(float)
        raw[rng.random(raw.shape) < 0.2] = np.nan
        ours = [[None if math.isnan(x) else int(x) for x in row] for row in raw]
        want = krippendorff.alpha(reliability_data=raw, level_of_measurement="nominal")
        assert krippendorff_alpha(ours, n_boot=0).estimate == pytest.approx(want)
        want_ord = krippendorff.alpha(reliability_data=raw, level_of_measurement="ordinal")
        assert krippendorff_alpha(ours, level="ordinal", n_boot=0).estimate == pytest.approx(want_ord)


def test_alpha_interval_brackets_the_estimate_and_undefined_alpha_has_no_estimate() -> None:
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 2, size=120)
    votes = [[int(t) if rng.random() < 0.85 else 1 - int(t) for t in truth] for _ in range(3)]
    iv = krippendorff_alpha(votes, n_boot=300)
    assert iv.lo is not None and iv.hi is not None and iv.estimate is not None
    assert -1 <= iv.lo <= iv.estimate <= iv.hi <= 1
    assert iv.hi - iv.lo > 0.01
    # One value in play, or no item rated twice: alpha is undefined, not 0 or 1.
    assert krippendorff_alpha([["x", "x"], ["x", "x"]], n_boot=50).estimate is None
    assert krippendorff_alpha([["x", None], [None, "y"]], n_boot=50).estimate is None


def test_ragged_votes_are_refused() -> None:
    with pytest.raises(ValueError, match="one vote"):
        krippendorff_alpha([["a", "b"], ["a"]])


def test_pairwise_kappa_by_hand_and_over_shared_items_only() -> None:
    # po = 3/4; pe = 1/2 * 1/4 + 1/2 * 3/4 = 1/2; kappa = (0.75 - 0.5) / 0.5.
    (k,) = pairwise_kappa([[1, 1, 0, 0, None], [1, 0, 0, 0, 1]], ["a", "b"])
    assert (k.n, k.kappa, k.agreement) == (4, pytest.approx(0.5), 0.75)
    (k,) = pairwise_kappa([[1, 1], [1, 1]], ["a", "b"])
    assert k.kappa is None and k.agreement == 1.0  # a constant pair: kappa undefined


def test_effective_votes_from_error_correlation() -> None:
    labels = [1] * 8
    # Errors on bit 0, bit 1, bit 2 of the item number: pairwise phi = 0, three independent votes.
    votes = [[0 if (i >> b) & 1 else 1 for i in range(8)] for b in range(3)]
    e = effective_votes(votes, labels)
    assert (e.basis, e.pairs, e.mean_correlation, e.estimate) == ("errors", 3, pytest.approx(0.0), 3.0)
    # Three copies of one judge: one vote.
    same = effective_votes([votes[0]] * 3, labels)
    assert same.estimate == pytest.approx(1.0) and same.mean_correlation == pytest.approx(1.0)
    # Two judges, phi = 0.5 by construction -> 2 / (1 + 0.5).
    a = [0, 0, 1, 1, 1, 1, 1, 1]
    b = [0, 1, 0, 1, 1, 1, 1, 1]
    # errors a = [1,1,0,0,0,0,0,0], b = [1,0,1,0,...]: phi = (1/8 - 1/16) / (1/4 * 3/4) = 1/3.
    e2 = effective_votes([a, b], labels)
    assert e2.mean_correlation == pytest.approx(1 / 3)
    assert e2.estimate == pytest.approx(2 / (1 + 1 / 3))


def test_effective_votes_edges() -> None:
    labels = [1, 1, 1, 1]
    # A judge that never erred makes every pair with it undefined: no estimate rather than a guess.
    assert effective_votes([[1, 1, 1, 1], [1, 0, 1, 0]], labels).estimate is None
    # Negatively correlated errors are reported as at most k votes.
    e = effective_votes([[0, 0, 1, 1], [1, 1, 0, 0]], labels)
    assert e.mean_correlation == pytest.approx(-1.0) and e.estimate == 2.0
    # Labels for only some items: the unlabelled ones are left out of the error correlation.
    part = effective_votes([[0, 0, 1, 1, 0], [0, 1, 0, 1, 1]], [1, 1, 1, 1, None])
    assert part.estimate == pytest.approx(2.0)  # phi over the 4 labelled items is 0
    # Without labels: from agreement (mean kappa); a panel of one is one vote.
    agree = effective_votes([[1, 1, 0, 0], [1, 0, 0, 0]])
    assert agree.basis == "agreement" and agree.estimate == pytest.approx(2 / 1.5)
    assert effective_votes([[1, 0, 1]]).estimate == 1.0


def test_independent_majority_by_hand() -> None:
    assert independent_majority([0.7, 0.7, 0.7]) == pytest.approx(3 * 0.7**2 * 0.3 + 0.7**3)
    assert independent_majority([0.6, 0.8]) == pytest.approx(0.48)  # an even split is not right
    assert independent_majority([0.9]) == pytest.approx(0.9)
    with pytest.raises(ValueError):
        independent_majority([1.2])


def test_clopper_pearson_matches_scipy_exact_interval() -> None:
    for k, n in [(0, 10), (3, 10), (10, 10), (87, 100)]:
        ci = binomtest(k, n).proportion_ci(confidence_level=0.9, method="exact")
        assert clopper_pearson(k, n, 0.9) == (pytest.approx(ci.low), pytest.approx(ci.high))
    # The one-sided 95% lower bound is the two-sided 90% interval's lower end.
    assert binomial_lower_bound(87, 100, 0.95) == pytest.approx(clopper_pearson(87, 100, 0.9)[0])
    assert binomial_lower_bound(0, 5, 0.95) == 0.0
    with pytest.raises(ValueError):
        clopper_pearson(3, 0)
