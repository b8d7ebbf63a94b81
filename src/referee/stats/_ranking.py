"""Win rates and Bradley-Terry ratings from pairwise verdicts, with bootstrap CIs.

A comparison is ``(system_i, system_j, score_i)`` with ``score_i`` 1.0 (i won), 0.0 (j won) or 0.5 (tie).
Ties count as half a win for each side. Bradley-Terry strengths are fitted with the MM algorithm
(Hunter 2004) and reported on the Elo-like scale ``400 * log10(strength)``, centred on the mean system;
a tiny prior (half a virtual tie per pair of systems, ``_PRIOR``) keeps a system that won or lost everything
finite.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED, Interval, bootstrap_ci

Comparison = tuple[str, str, float]

_PRIOR = 0.5  # virtual ties per pair of systems (keeps all-win / all-loss systems finite)


def win_rate(scores: Sequence[float], *, n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED) -> Interval:
    """Win rate of A over B from per-case scores (1 a, 0 b, 0.5 tie) with a percentile bootstrap CI."""
    return bootstrap_ci(np.asarray(scores, dtype=np.float64), n_boot=n_boot, seed=seed)


def _fit(i: NDArray[np.int64], j: NDArray[np.int64], s: NDArray[np.float64], k: int,
         iters: int = 500, tol: float = 1e-10) -> NDArray[np.float64]:
    """MM iterations for Bradley-Terry strengths (ties as half wins); returns log-strengths, mean 0."""
    wins = np.zeros(k)
    np.add.at(wins, i, s)
    np.add.at(wins, j, 1.0 - s)
    games = np.zeros((k, k))
    np.add.at(games, (i, j), 1.0)
    games = games + games.T
    # Prior: _PRIOR virtual games per pair, split evenly.
    games = games + _PRIOR * (1 - np.eye(k))
    wins = wins + _PRIOR * (k - 1) / 2
    p = np.ones(k)
    for _ in range(iters):
        denom = (games / (p[:, None] + p[None, :])).sum(axis=1)
        new = wins / denom
        new = new / np.exp(np.log(new).mean())
        if np.max(np.abs(new - p)) < tol:
            p = new
            break
        p = new
    logp = np.log(p)
    return np.asarray(logp - logp.mean(), dtype=np.float64)


def _elo(logp: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.asarray(400.0 * logp / math.log(10.0), dtype=np.float64)


@dataclass(frozen=True)
class Standing:
    """One system's place in a leaderboard: rating and win rate with intervals, and its comparisons."""

    system: str
    rating: Interval
    """Bradley-Terry rating on the Elo-like scale (mean system = 0)."""
    win_rate: Interval
    """Share of points against all opponents (ties as half)."""
    comparisons: int
    one_sided: str | None = None
    """``"won all"`` / ``"lost all"``: the rating is then held finite only by the prior (see the notes)."""


@dataclass(frozen=True)
class PairRecord:
    a: str
    b: str
    wins_a: int
    wins_b: int
    ties: int
    win_rate_a: Interval


@dataclass
class Leaderboard:
    """Bradley-Terry standings of the systems compared, the pairwise records and notes on the fit."""

    standings: list[Standing] = field(default_factory=list)
    pairs: list[PairRecord] = field(default_factory=list)
    n_comparisons: int = 0
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_comparisons": self.n_comparisons,
            "standings": [{"rank": r + 1, "system": s.system, "rating": s.rating.to_dict(),
                           "win_rate": s.win_rate.to_dict(),
                           "comparisons": s.comparisons, "one_sided": s.one_sided} for r, s in enumerate(self.standings)],
            "pairs": [{"a": p.a, "b": p.b, "wins_a": p.wins_a, "wins_b": p.wins_b, "ties": p.ties,
                       "win_rate_a": p.win_rate_a.to_dict()} for p in self.pairs],
            "notes": self.notes,
        }


def leaderboard(comparisons: Sequence[Comparison], *, n_boot: int = DEFAULT_N_BOOT,
                seed: int = DEFAULT_SEED) -> Leaderboard:
    """Pairwise records for every pair of systems and, with 3+ systems, Bradley-Terry ratings with CIs."""
    lb = Leaderboard(n_comparisons=len(comparisons))
    if not comparisons:
        lb.notes.append("no scored comparisons: nothing to rank")
        return lb
    systems = sorted({c[0] for c in comparisons} | {c[1] for c in comparisons})
    index = {s: n for n, s in enumerate(systems)}
    # Each pair keeps the orientation of its first comparison (``--name-a before --name-b after`` shows
    # "before" as A), in order of first appearance.
    pair_scores: dict[tuple[str, str], list[float]] = {}
    for a, b, s in comparisons:
        if a == b:
            continue
        key, val = ((b, a), 1.0 - s) if (b, a) in pair_scores else ((a, b), s)
        pair_scores.setdefault(key, []).append(val)
    for (a, b), vals in pair_scores.items():
        # An averaged comparison (0.75: a win in one order, a tie in the other) counts as a win for the side
        # it leans to; the win rate uses the values themselves.
        lb.pairs.append(PairRecord(a, b, sum(v > 0.5 for v in vals), sum(v < 0.5 for v in vals),
                                   sum(v == 0.5 for v in vals), win_rate(vals, n_boot=n_boot, seed=seed)))
        if len(vals) == 1:
            lb.notes.append(f"{a} vs {b}: a single comparison, so its win rate has no confidence interval")
        elif len(set(vals)) == 1:
            how = {1.0: f"all won by {a}", 0.0: f"all won by {b}", 0.5: "all ties"}.get(vals[0], "all alike")
            lb.notes.append(f"{a} vs {b}: one-sided sample ({len(vals)} comparisons, {how}): the win rate's "
                            "bootstrap CI has zero width because every resample is the same, not because "
                            "the result is certain")
    ia = np.array([index[c[0]] for c in comparisons if c[0] != c[1]], dtype=np.int64)
    ja = np.array([index[c[1]] for c in comparisons if c[0] != c[1]], dtype=np.int64)
    sa = np.array([c[2] for c in comparisons if c[0] != c[1]], dtype=np.float64)
    k = len(systems)
    # Points per system against everyone (ties half), per comparison, for a bootstrap of the overall win rate.
    points: dict[int, list[float]] = {n: [] for n in range(k)}
    for ii, jj, ss in zip(ia.tolist(), ja.tolist(), sa.tolist(), strict=True):
        points[ii].append(ss)
        points[jj].append(1.0 - ss)
    if k >= 3:
        est = _elo(_fit(ia, ja, sa, k))
        rng = np.random.default_rng(seed)
        n = ia.size
        boots = np.empty((n_boot, k))
        for r in range(n_boot):
            ix = rng.integers(0, n, size=n)
            boots[r] = _elo(_fit(ia[ix], ja[ix], sa[ix], k, iters=200, tol=1e-8))
        lo, hi = np.quantile(boots, [0.025, 0.975], axis=0)
        ratings = [Interval(float(est[m]), float(lo[m]), float(hi[m]), len(points[m]),
                            method="Bradley-Terry, percentile bootstrap over comparisons") for m in range(k)]
    else:
        lb.notes.append("Bradley-Terry ratings need 3 or more systems; see the pairwise win rate instead")
        ratings = [Interval(None, None, None, len(points[m]), method="not computed") for m in range(k)]
    for m, name in enumerate(systems):
        pts = points[m]
        one_sided = ("won all" if pts and min(pts) == 1.0 else "lost all" if pts and max(pts) == 0.0 else None)
        if one_sided and k >= 3:
            lb.notes.append(f"{name} {one_sided.replace('all', 'every one')} of its {len(pts)} comparisons: its "
                            "Bradley-Terry rating has no finite maximum-likelihood value, so it is held finite by "
                            "the prior (half a virtual tie per pair of systems) and its CI reflects that prior "
                            "as much as the data")
        lb.standings.append(Standing(name, ratings[m], win_rate(pts, n_boot=n_boot, seed=seed), len(pts),
                                     one_sided))
    lb.standings.sort(key=lambda st: (-(st.rating.estimate if st.rating.estimate is not None
                                        else (st.win_rate.estimate or 0.0)), st.system))
    # Systems never compared with each other directly leave the ranking partly unidentified.
    linked = {frozenset(p) for p in pair_scores}
    if k >= 3 and not _connected(systems, linked):
        lb.notes.append("the comparison graph is not connected: ratings of separate groups are not comparable")
    return lb


def _connected(systems: list[str], pairs: set[frozenset[str]]) -> bool:
    seen = {systems[0]}
    frontier = [systems[0]]
    while frontier:
        cur = frontier.pop()
        for p in pairs:
            if cur in p:
                for other in p:
                    if other not in seen:
                        seen.add(other)
                        frontier.append(other)
    return len(seen) == len(systems)
