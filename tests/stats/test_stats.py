"""The statistics behind `referee score`, checked against scipy and against direct index resampling."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest, false_discovery_control

from referee.stats import (
    benjamini_hochberg,
    bootstrap_ci,
    bootstrap_means,
    cases_needed,
    mcnemar_exact,
    mean_interval,
    min_detectable_drop,
    paired_bootstrap,
    wilson_interval,
)


@pytest.mark.parametrize(("b", "c"), [(0, 1), (1, 0), (3, 9), (9, 3), (10, 10), (0, 25), (17, 40),
                                      (480, 520), (30, 3000)])
def test_mcnemar_matches_scipy_binomtest(b: int, c: int) -> None:
    assert mcnemar_exact(b, c).p_value == pytest.approx(binomtest(b, b + c, 0.5).pvalue, rel=1e-8)


def test_mcnemar_without_discordant_pairs_is_one() -> None:
    assert mcnemar_exact(0, 0).p_value == 1.0


def test_wilson_known_values() -> None:
    iv = wilson_interval(5, 10)
    assert (iv.lo, iv.hi) == (pytest.approx(0.2366, abs=1e-4), pytest.approx(0.7634, abs=1e-4))
    zero = wilson_interval(0, 10)
    assert zero.lo == 0.0 and zero.hi == pytest.approx(0.2775, abs=1e-4)
    assert wilson_interval(0, 0).estimate is None


def test_benjamini_hochberg_matches_scipy() -> None:
    p = np.array([0.001, 0.008, 0.039, 0.041, 0.042, 0.06, 0.074, 0.205, 0.212, 0.216])
    rejected, adjusted = benjamini_hochberg(p, alpha=0.05)
    np.testing.assert_allclose(adjusted, false_discovery_control(p), rtol=1e-12)
    assert rejected.tolist() == (adjusted <= 0.05).tolist()
    assert rejected[:2].all() and not rejected[2:].any()


def test_benjamini_hochberg_step_up_rejects_below_the_largest_passing_rank() -> None:
    # 0.04 fails its own rank-1 test (0.04 > 0.05 * 1/2), but 0.045 passes at rank 2 (<= 0.05 * 2/2), and
    # step-up rejects every hypothesis ranked at or below the largest passing rank.
    rejected, _ = benjamini_hochberg([0.04, 0.045], alpha=0.05)
    assert rejected.tolist() == [True, True]


@pytest.mark.parametrize("values", [
    np.r_[np.ones(37), np.zeros(63)],
    np.round(np.random.default_rng(3).beta(2, 2, size=150), 1),
])
def test_count_bootstrap_has_the_index_bootstrap_distribution(values: np.ndarray) -> None:
    dist, method = bootstrap_means(values, n_boot=20000, seed=1)
    assert dist is not None and method == "percentile bootstrap"
    rng = np.random.default_rng(2)
    direct = values[rng.integers(0, values.size, size=(20000, values.size))].mean(axis=1)
    assert dist.mean() == pytest.approx(direct.mean(), abs=2e-3)
    assert dist.std() == pytest.approx(direct.std(), rel=0.03)
    np.testing.assert_allclose(np.quantile(dist, [0.025, 0.975]), np.quantile(direct, [0.025, 0.975]), atol=0.012)


def test_mean_interval_agrees_with_the_generic_bootstrap_ci() -> None:
    x = np.round(np.random.default_rng(5).random(300), 2)
    a = mean_interval(x, n_boot=4000, seed=9)
    b = bootstrap_ci(x, n_boot=4000, seed=9)
    assert a.estimate == pytest.approx(b.estimate)
    assert a.lo == pytest.approx(b.lo, abs=0.01) and a.hi == pytest.approx(b.hi, abs=0.01)


def test_mean_interval_is_reproducible_by_seed() -> None:
    x = np.r_[np.ones(30), np.zeros(20)]
    assert mean_interval(x, seed=1) == mean_interval(x, seed=1)
    a, _ = bootstrap_means(x, seed=1)
    b, _ = bootstrap_means(x, seed=2)
    assert a is not None and b is not None
    np.testing.assert_array_equal(a, bootstrap_means(x, seed=1)[0])
    assert not np.array_equal(a, b)


def test_paired_bootstrap_p_value_rule() -> None:
    assert paired_bootstrap(np.zeros(50)).p_value == 1.0
    all_down = paired_bootstrap(np.full(20, -1.0))
    assert all_down.p_value == 0.0 and all_down.hi is not None and all_down.hi < 0
    mixed = paired_bootstrap(np.r_[np.full(6, -1.0), np.full(5, 1.0), np.zeros(30)], n_boot=4000)
    assert 0.5 < mixed.p_value <= 1.0


def test_power_figures_are_inverse_of_each_other() -> None:
    sd = 0.5
    mdd = min_detectable_drop(sd, 400)
    assert mdd is not None and mdd == pytest.approx(2.8016 * 0.5 / 20, rel=1e-3)
    n = cases_needed(sd, mdd)
    assert n is not None and abs(n - 400) <= 1
    assert cases_needed(sd, 0.0) is None


def test_by_code_groups_positions_in_order() -> None:
    from referee.aggregate._summary import by_code

    codes = np.array([3, 1, 3, 0, 1, 3], dtype=np.int32)
    groups = by_code(codes)
    assert list(groups) == [0, 1, 3]
    assert {k: v.tolist() for k, v in groups.items()} == {0: [3], 1: [1, 4], 3: [0, 2, 5]}
    assert by_code(np.zeros(0, dtype=np.int32)) == {}
