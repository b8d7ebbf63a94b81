"""The bootstrap of a mean by cost (`stats.counts`): every method agrees with a direct index bootstrap within
Monte Carlo error, on samples small enough for that reference to be cheap.

Tolerances are not fixed numbers: each is 4 standard errors of the difference between the method and the
reference (a percentile bound from B resamples has standard error sqrt(p (1 - p) / B) / f(q), f the density of
the resample mean there; a bootstrap p-value 2 sqrt(P (1 - P) / B)), plus one lattice step of the resample
means where the data sit on a grid, plus the expansion's own error bound where it is used.
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist

import numpy as np
import pytest
from numpy.typing import NDArray

from referee.stats import _counts as counts
from referee.stats import mean_interval, paired_bootstrap
from referee.stats._counts import choose_method, expansion_error, mc_quantile_error, mean_bootstrap

B = 2000
B_REF = 20000
ALPHA = 0.05
Z = 4.0  # standard errors: a false failure has probability ~6e-5 per comparison (and the seeds are fixed)


@functools.cache
def _reference_of(name: str) -> NDArray[np.float64]:
    return _reference(SAMPLES[name])


def _reference(x: NDArray[np.float64], seed: int = 99) -> NDArray[np.float64]:
    """The exact index bootstrap: B_REF resamples of n indices each."""
    rng = np.random.default_rng(seed)
    out = np.empty(B_REF)
    chunk = max(1, 4_000_000 // x.size)
    for s in range(0, B_REF, chunk):
        e = min(B_REF, s + chunk)
        out[s:e] = x[rng.integers(0, x.size, size=(e - s, x.size))].mean(axis=1)
    return out


def _lattice_step(x: NDArray[np.float64]) -> float:
    u = np.unique(x)
    return float(np.diff(u).min()) / x.size if u.size > 1 else 0.0


def _quantile_se(ref: NDArray[np.float64], p: float, n_boot: int) -> float:
    """Standard error of the p-quantile of n_boot resample means, with the density read off the reference
    (a central difference of its quantiles over +-0.01 in probability, which is smooth at these B)."""
    lo, hi = np.quantile(ref, [p - 0.01, p + 0.01])
    density = 0.02 / max(float(hi - lo), 1e-12)
    return math.sqrt(p * (1 - p) / n_boot) / density


def _p_ref(ref: NDArray[np.float64]) -> float:
    return min(1.0, 2 * min(float(np.mean(ref <= 0)), float(np.mean(ref >= 0))))


def _p_se(p: float, n_boot: int) -> float:
    tail = min(max(p / 2, 1 / n_boot), 0.5)
    return 2 * math.sqrt(tail * (1 - tail) / n_boot)


_RNG = np.random.default_rng(2026)
SAMPLES = {
    "pass flags": (_RNG.random(400) < 0.85).astype(np.float64),
    "1-5 scale": _RNG.choice([0.0, 0.25, 0.5, 0.75, 1.0], size=300, p=[0.05, 0.1, 0.15, 0.35, 0.35]),
    "3-decimal scores": _RNG.beta(5, 2, size=2000).round(3),
    "skewed 3-decimal": np.minimum(_RNG.exponential(0.08, size=2000), 1).round(3),
    # 1% of the values spread over 0-1, the rest under 0.01: skewness ~15, near the expansion's limit at n=4000.
    "rare large values": np.where(_RNG.random(4000) < 0.01, _RNG.random(4000), _RNG.random(4000) * 0.01).round(6),
    # Paired differences with a small shift, so the p-values are neither 0 nor 1.
    "pass-flag differences": _RNG.choice([-1.0, 0.0, 1.0], size=600, p=[0.12, 0.8, 0.08]),
    "score differences": (_RNG.normal(-0.004, 0.06, size=2000) * (_RNG.random(2000) < 0.5)).round(3),
}


def _expansion_accurate(x: NDArray[np.float64]) -> bool:
    m = counts._moments(x)
    gap = float(np.diff(np.unique(x)).min())
    return expansion_error(m, x.size, gap, ALPHA) <= counts._ACCURACY * mc_quantile_error(B, ALPHA)


# The expansion is tested where it can be chosen (where it cannot, see test_the_samples_cover_every_method).
CASES = [(name, method) for name in SAMPLES for method in ("auto", "counts", "index", "expansion")
         if method != "expansion" or _expansion_accurate(SAMPLES[name])]


@pytest.mark.parametrize(("name", "method"), CASES)
def test_every_method_is_within_monte_carlo_error_of_the_index_bootstrap(name: str, method: str) -> None:
    x = SAMPLES[name]
    ref = _reference_of(name)
    b = mean_bootstrap(x, n_boot=B, seed=5, alpha=ALPHA, method=method)
    assert b is not None and b.estimate == pytest.approx(float(x.mean()))
    used = b.method
    own_b = 0 if used == "expansion" else B  # the expansion has no Monte Carlo error of its own
    sd = float(ref.std())
    extra = _lattice_step(x) + (expansion_error(counts._moments(x), x.size, float(np.diff(np.unique(x)).min()),
                                                ALPHA) * sd if used == "expansion" else 0.0)
    lo, hi = b.quantiles([ALPHA / 2, 1 - ALPHA / 2])
    for got, p in ((lo, ALPHA / 2), (hi, 1 - ALPHA / 2)):
        want = float(np.quantile(ref, p))
        se = math.hypot(_quantile_se(ref, p, B_REF), _quantile_se(ref, p, own_b) if own_b else 0.0)
        assert abs(got - want) <= Z * se + extra, (name, used, p, got, want, se)
    p_ref = _p_ref(ref)
    p_got = b.p_two_sided()
    se_p = math.hypot(_p_se(p_ref, B_REF), _p_se(p_ref, own_b) if own_b else 0.0)
    # A p-value is a tail probability: the bound on the expansion's error in units of sd becomes one of
    # probability through the normal density (at most 0.4).
    p_extra = 2 * 0.4 * (extra / sd)
    assert abs(p_got - p_ref) <= Z * se_p + p_extra, (name, used, p_got, p_ref, se_p)


def test_the_samples_cover_every_method() -> None:
    """The test above is only worth something if it exercised each method, chosen automatically too."""
    chosen = {mean_bootstrap(x, n_boot=B, alpha=ALPHA).method for x in SAMPLES.values()}  # type: ignore[union-attr]
    assert {"counts", "index"} <= chosen
    assert all(map(_expansion_accurate, (SAMPLES["3-decimal scores"], SAMPLES["score differences"],
                                         SAMPLES["rare large values"])))
    assert not _expansion_accurate(SAMPLES["pass flags"])  # lattice of 1/400 steps: resample, whatever it costs


def test_the_method_is_chosen_by_cost() -> None:
    # Few distinct values: the multinomial over counts is cheap at any n.
    assert choose_method(1_000_000, 2, B, expansion_ok=True) == "counts"
    assert choose_method(1_000_000, 5, B, expansion_ok=True) == "counts"
    # Nearly all distinct, small n: index resampling is cheaper than counts and within budget.
    assert choose_method(300, 290, B, expansion_ok=True) == "index"
    # Too costly to resample: the expansion, but only where it is accurate; else exact whatever it costs.
    assert choose_method(50_000, 1000, B, expansion_ok=True) == "expansion"
    assert choose_method(50_000, 1000, B, expansion_ok=False) == "counts"
    assert choose_method(50_000, 40_000, B, expansion_ok=False) == "index"


def test_a_million_three_decimal_scores_take_the_expansion_and_it_matches_a_resampling_bootstrap() -> None:
    rng = np.random.default_rng(8)
    x = rng.beta(5, 2, size=1_000_000).round(3)
    iv = mean_interval(x, n_boot=B)
    assert "Cornish-Fisher" in iv.method
    # The exact multinomial over the 1001 distinct values, forced (it costs about 0.2 s here).
    exact = mean_bootstrap(x, n_boot=B, seed=3, method="counts")
    assert exact is not None and exact.draws is not None
    sd = float(exact.draws.std())
    mc = mc_quantile_error(B, ALPHA) * sd
    elo, ehi = exact.quantiles([ALPHA / 2, 1 - ALPHA / 2])
    assert iv.lo is not None and iv.hi is not None
    assert abs(iv.lo - elo) <= Z * mc and abs(iv.hi - ehi) <= Z * mc


def test_skewed_moderate_samples_keep_resampling_even_when_costly(monkeypatch: pytest.MonkeyPatch) -> None:
    # As "rare large values" but n=1500: the expansion's order-1/n terms are too large, so resampling is kept.
    rng = np.random.default_rng(1)
    x = np.where(rng.random(1500) < 0.01, rng.random(1500), rng.random(1500) * 0.01).round(6)
    monkeypatch.setattr(counts, "BUDGET_S", 0.0)
    assert not _expansion_accurate(x)
    b = mean_bootstrap(x, n_boot=B)
    assert b is not None and b.method in ("counts", "index")


def test_the_expansion_has_the_bootstrap_tail_for_p_values() -> None:
    # A shift of exactly 2 standard errors: the p-value is about 0.046 by the bootstrap; the expansion's p is
    # within Monte Carlo error of the reference and consistent with its own interval (0 just outside).
    rng = np.random.default_rng(12)
    d = (rng.normal(0, 0.05, size=4000)).round(3)
    d = d - d.mean() - 2 * d.std() / math.sqrt(d.size)
    ref = _reference(d)
    r = paired_bootstrap(d, n_boot=B, method="expansion")
    assert "Cornish-Fisher" in r.method and r.hi is not None and r.hi < 0 < r.hi + 0.01
    p_ref = _p_ref(ref)
    assert abs(r.p_value - p_ref) <= Z * _p_se(p_ref, B_REF)
    assert r.p_value == pytest.approx(2 * NormalDist().cdf(-2.0), abs=0.01)
