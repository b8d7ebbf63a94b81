"""Reliability across tries: pass^k (every one of k tries succeeds) and pass@k (at least one does).

For a case tried n times with c successes, the unbiased estimates over k of its n tries are
``pass^k = C(c, k) / C(n, k)`` and ``pass@k = 1 - C(n - c, k) / C(n, k)``; a run's figure is their mean over
cases, with a bootstrap interval over cases. Only graded tries count (an unscored or error try is neither a
success nor a failure); a case with fewer than k graded tries is left out and listed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from math import comb
from typing import Any

from ..stats import Interval, mean_interval


def pass_hat_k(c: int, n: int, k: int) -> float:
    """``C(c, k) / C(n, k)``: the chance that k tries drawn from these n all succeeded."""
    _check(c, n, k)
    return comb(c, k) / comb(n, k)


def pass_at_k(c: int, n: int, k: int) -> float:
    """``1 - C(n - c, k) / C(n, k)``: the chance that at least one of k tries drawn from these n succeeded."""
    _check(c, n, k)
    return 1.0 - comb(n - c, k) / comb(n, k)


def _check(c: int, n: int, k: int) -> None:
    if not (isinstance(k, int) and 1 <= k <= n and 0 <= c <= n):
        raise ValueError(f"need 1 <= k <= n and 0 <= c <= n (c={c}, n={n}, k={k})")


@dataclass
class Reliability:
    """pass^k and pass@k over a run's cases, the flaky cases and those with too few tries."""

    k: int
    pass_hat_k: Interval
    """pass^k: the mean over cases of C(c, k) / C(n, k), with its interval."""
    pass_at_k: Interval
    cases: int
    flaky: list[str] = field(default_factory=list)
    """Cases that both succeeded and failed."""
    too_few: list[str] = field(default_factory=list)
    """Cases with fewer than k graded tries (left out)."""
    per_case: dict[str, tuple[int, int]] = field(default_factory=dict)
    """id -> (successes, graded tries)."""

    def to_dict(self) -> dict[str, Any]:
        return {"k": self.k, "pass_hat_k": self.pass_hat_k.to_dict(), "pass_at_k": self.pass_at_k.to_dict(),
                "cases": self.cases, "flaky": self.flaky, "too_few": self.too_few,
                "per_case": {i: {"successes": c, "tries": n} for i, (c, n) in self.per_case.items()}}


def reliability(rows: Iterable[Any], k: int, *, n_boot: int = 2000, seed: int = 0,
                alpha: float = 0.05) -> Reliability:
    """pass^k and pass@k over result rows (any objects with ``id``, ``status`` and ``passed``)."""
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a whole number >= 1, not {k!r}")
    counts: dict[str, list[int]] = {}
    for r in rows:
        cn = counts.setdefault(r.id, [0, 0])
        if r.status == "scored":
            cn[1] += 1
            cn[0] += bool(r.passed)
    hat, at, too_few, flaky = [], [], [], []
    for cid, (c, n) in counts.items():
        if n < k:
            too_few.append(cid)
            continue
        hat.append(pass_hat_k(c, n, k))
        at.append(pass_at_k(c, n, k))
        if 0 < c < n:
            flaky.append(cid)
    return Reliability(k=k, pass_hat_k=mean_interval(hat, n_boot=n_boot, seed=seed, alpha=alpha).as_percent(),
                       pass_at_k=mean_interval(at, n_boot=n_boot, seed=seed, alpha=alpha).as_percent(),
                       cases=len(hat), flaky=flaky, too_few=too_few,
                       per_case={i: (c, n) for i, (c, n) in counts.items()})
