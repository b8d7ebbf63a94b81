"""Statistics of a panel of judges rating the same items: Krippendorff's alpha with a bootstrap interval,
pairwise Cohen's kappa, the effective number of independent votes, the accuracy independent voters would
reach, and the exact (Clopper-Pearson) binomial bounds escalation uses.

Votes come as one row per judge and one column per item; a judge that gave no usable verdict on an item
has ``None`` there (missing, never a vote). Votes are categorical (``"1"``, ``"2"``, ``"tie"``, ``True``,
``"pass"`` ...): anything hashable.

**Effective votes.** ``k`` judges whose errors (or votes) have mean pairwise correlation ``rho`` are worth

    n_eff = k / (1 + (k - 1) * rho)

independent ones: the variance of the mean of ``k`` equicorrelated variables is ``sigma^2 (1 + (k-1) rho) / k``,
the same as that of ``n_eff`` independent ones (Kish's design effect, *Survey Sampling*, 1965, section 8.2;
the Spearman-Brown relation). With labels ``rho`` is the mean phi coefficient (Pearson correlation) of the
judges' 0/1 error indicators over the items both graded: shared mistakes, not shared right answers, are
what make votes redundant. Without labels it is the mean pairwise Cohen's kappa of the votes (for two
categories kappa is the intraclass correlation of the votes); agreement from both being right then counts
as dependence, so that figure is a floor on the independent votes. ``rho`` below 0 is taken as 0 (at most
``k`` votes are reported); pairs whose correlation is undefined (a judge that never erred) are left out,
and with no defined pair there is no estimate.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from ._agreement import cohen_kappa
from ._bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED, Interval

Votes = Sequence[Sequence[Hashable | None]]
Level = Literal["nominal", "ordinal", "interval", "ratio"]


def _value_counts(votes: Votes, domain: Sequence[Hashable] | None = None
                  ) -> tuple[NDArray[np.float64], list[Hashable]]:
    """Units x values counts (how many judges gave each value to each item) and the value domain."""
    if not votes:
        raise ValueError("no judges: a panel statistic needs at least one row of votes")
    n = len(votes[0])
    if any(len(r) != n for r in votes):
        raise ValueError("every judge must have one vote (or None) per item")
    if domain is None:
        seen = {v for r in votes for v in r if v is not None}
        try:
            domain = sorted(seen)  # type: ignore[type-var]
        except TypeError:  # mixed kinds of value: any fixed order will do for nominal data
            domain = sorted(seen, key=repr)
    idx = {v: i for i, v in enumerate(domain)}
    counts = np.zeros((n, len(domain)), dtype=np.float64)
    for row in votes:
        for j, v in enumerate(row):
            if v is None:
                continue
            if v not in idx:
                raise ValueError(f"vote {v!r} is not in the value domain {list(domain)!r}")
            counts[j, idx[v]] += 1
    return counts, list(domain)


def _alpha(counts: NDArray[np.float64], domain: Sequence[Hashable], level: Level) -> float:
    """Krippendorff's alpha from value counts (the ``krippendorff`` package); nan when undefined."""
    import krippendorff

    pairable = counts[counts.sum(axis=1) >= 2]
    # Undefined: fewer than two values in play, or no item rated twice (the package raises or divides by 0).
    if pairable.shape[0] == 0 or int((pairable.sum(axis=0) > 0).sum()) < 2:
        return math.nan
    dom: Sequence[Any] = list(range(len(domain))) if level == "nominal" else list(domain)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = float(krippendorff.alpha(value_counts=pairable, value_domain=dom, level_of_measurement=level))
    return a if math.isfinite(a) else math.nan


def krippendorff_alpha(votes: Votes, *, level: Level = "nominal", domain: Sequence[Hashable] | None = None,
                       n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED) -> Interval:
    """Krippendorff's alpha of the judges' votes, with a percentile bootstrap interval over resampled items.

    Items rated by fewer than two judges carry no agreement information and are left out (``n`` counts the
    items used). ``domain`` fixes the order of the values for ordinal/interval levels. Undefined (no item
    rated twice, a single value in play): an interval with no estimate, never a made-up 0.
    """
    counts, dom = _value_counts(votes, domain)
    counts = counts[counts.sum(axis=1) >= 2]
    n = int(counts.shape[0])
    est = _alpha(counts, dom, level)
    if math.isnan(est):
        return Interval(None, None, None, n, "Krippendorff's alpha, percentile bootstrap")
    if n < 2:
        return Interval(est, None, None, n, "Krippendorff's alpha, percentile bootstrap")
    rng = np.random.default_rng(seed)
    vals = np.array([_alpha(counts[rng.integers(0, n, size=n)], dom, level) for _ in range(n_boot)])
    vals = vals[np.isfinite(vals)]
    if vals.size == 0:
        return Interval(est, None, None, n, "Krippendorff's alpha, percentile bootstrap")
    lo, hi = np.quantile(vals, [0.025, 0.975])
    return Interval(est, float(lo), float(hi), n, "Krippendorff's alpha, percentile bootstrap")


@dataclass(frozen=True)
class PairKappa:
    """Cohen's kappa of two judges over the items both rated (``None``: undefined, e.g. a constant judge)."""

    a: str
    b: str
    n: int
    kappa: float | None
    agreement: float | None
    """Raw share of those items on which the two gave the same vote."""

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "n": self.n, "kappa": self.kappa, "agreement": self.agreement}


def pairwise_kappa(votes: Votes, names: Sequence[str]) -> list[PairKappa]:
    """Cohen's kappa (unweighted) for every pair of judges, over the items both rated."""
    if len(names) != len(votes):
        raise ValueError("one name per judge")
    out = []
    for i, j in combinations(range(len(votes)), 2):
        both = [(x, y) for x, y in zip(votes[i], votes[j], strict=True) if x is not None and y is not None]
        if not both:
            out.append(PairKappa(names[i], names[j], 0, None, None))
            continue
        xs, ys = [x for x, _ in both], [y for _, y in both]
        k = cohen_kappa(xs, ys, labels=sorted({*xs, *ys}, key=str))
        out.append(PairKappa(names[i], names[j], len(both), None if math.isnan(k) else k,
                             sum(x == y for x, y in both) / len(both)))
    return out


@dataclass(frozen=True)
class EffectiveVotes:
    """How many independent judges a panel is worth: ``k / (1 + (k - 1) * rho)`` (see the module text)."""

    k: int
    estimate: float | None
    mean_correlation: float | None
    basis: Literal["errors", "agreement"]
    """``errors``: rho is the judges' error correlation (labels given); ``agreement``: their mean kappa."""
    pairs: int
    """Judge pairs whose correlation was defined and averaged."""

    def to_dict(self) -> dict[str, Any]:
        return {"k": self.k, "estimate": self.estimate, "mean_correlation": self.mean_correlation,
                "basis": self.basis, "pairs": self.pairs}


def _phi(x: NDArray[np.float64], y: NDArray[np.float64]) -> float:
    if x.size < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return math.nan
    return float(np.corrcoef(x, y)[0, 1])


def effective_votes(votes: Votes, labels: Sequence[Hashable | None] | None = None) -> EffectiveVotes:
    """The effective number of independent votes of the panel ``votes``.

    With ``labels`` (``None`` where an item has none) the error correlation over labelled items is used;
    without, the mean pairwise kappa. A vote that is missing is left out of the pairs it would be in.
    """
    k = len(votes)
    rhos: list[float] = []
    if labels is not None:
        if any(len(r) != len(labels) for r in votes):
            raise ValueError("one label (or None) per item")
        for i, j in combinations(range(k), 2):
            keep = [(x != g, y != g) for x, y, g in zip(votes[i], votes[j], labels, strict=True)
                    if x is not None and y is not None and g is not None]
            r = _phi(np.array([a for a, _ in keep], dtype=np.float64), np.array([b for _, b in keep],
                                                                                dtype=np.float64))
            if not math.isnan(r):
                rhos.append(r)
        basis: Literal["errors", "agreement"] = "errors"
    else:
        rhos = [p.kappa for p in pairwise_kappa(votes, [str(i) for i in range(k)]) if p.kappa is not None]
        basis = "agreement"
    if k == 1:
        return EffectiveVotes(1, 1.0, None, basis, 0)
    if not rhos:
        return EffectiveVotes(k, None, None, basis, 0)
    rho = float(np.mean(rhos))
    return EffectiveVotes(k, k / (1 + (k - 1) * max(0.0, rho)), rho, basis, len(rhos))


def independent_majority(accuracies: Sequence[float]) -> float:
    """The accuracy of a strict majority of independent judges with these accuracies (exact, by dynamic
    programming over the number right; an even split counts as not right, as a tied panel does)."""
    if not accuracies:
        raise ValueError("no judges")
    dist = np.zeros(len(accuracies) + 1)
    dist[0] = 1.0
    for p in accuracies:
        if not 0.0 <= p <= 1.0 or not math.isfinite(p):
            raise ValueError(f"accuracy {p!r} is not in [0, 1]")
        dist[1:] = dist[1:] * (1 - p) + dist[:-1] * p
        dist[0] *= 1 - p
    k = len(accuracies)
    return float(dist[k // 2 + 1:].sum())


def clopper_pearson(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The exact two-sided binomial interval for ``successes`` of ``n`` at ``confidence``."""
    from scipy.stats import beta

    if n <= 0 or not 0 <= successes <= n:
        raise ValueError(f"{successes} of {n} is not a binomial count")
    a = (1 - confidence) / 2
    lo = 0.0 if successes == 0 else float(beta.ppf(a, successes, n - successes + 1))
    hi = 1.0 if successes == n else float(beta.ppf(1 - a, successes + 1, n - successes))
    return lo, hi


def binomial_lower_bound(successes: int, n: int, confidence: float) -> float:
    """The one-sided exact (Clopper-Pearson) lower bound on a success rate: with probability ``confidence``
    the true rate is at least this. 0 for no successes."""
    from scipy.stats import beta

    if n <= 0 or not 0 <= successes <= n:
        raise ValueError(f"{successes} of {n} is not a binomial count")
    if successes == 0:
        return 0.0
    return float(beta.ppf(1 - confidence, successes, n - successes + 1))
