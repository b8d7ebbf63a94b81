"""The fixed held-out split: stratified by label, grouped (a group's cases all on one side), the same for the
same ids, groups and seed whatever order the labels came in."""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from dataclasses import dataclass

import numpy as np

from ..errors import UserError


@dataclass(frozen=True)
class Split:
    """The case ids on each side, and how the split was drawn (seed, share held out, grouped or not)."""

    train: list[str]
    heldout: list[str]
    seed: int
    holdout: float
    grouped: bool

    def to_dict(self) -> dict[str, object]:
        return {"seed": self.seed, "holdout": self.holdout, "grouped": self.grouped, "train": len(self.train),
                "heldout_ids": self.heldout}


def _order(seed: int, key: str) -> str:
    return hashlib.sha256(f"{seed}\x00{key}".encode()).hexdigest()


def _strata(values: dict[str, float], categorical: bool) -> dict[str, str]:
    if categorical:
        return {cid: f"{v:g}" for cid, v in values.items()}
    # Continuous labels: four bins by quantile, so each side sees low and high labels.
    arr = np.array(list(values.values()))
    cuts = np.quantile(arr, [0.25, 0.5, 0.75])
    return {cid: str(int(np.searchsorted(cuts, v, side="right"))) for cid, v in values.items()}


def held_out_split(values: dict[str, float], *, groups: dict[str, str] | None = None, holdout: float = 0.5,
                   seed: int = 0, categorical: bool = True) -> Split:
    """Hold out about ``holdout`` of the cases, in every stratum (label class, or label quartile), keeping each
    group on one side. A group's stratum is its cases' most common one. Raises :class:`UserError` when a side
    would be empty."""
    if not 0 < holdout < 1:
        raise UserError(f"holdout {holdout:g}: give a share between 0 and 1")
    groups = groups or {}
    strata = _strata(values, categorical)
    members: dict[str, list[str]] = defaultdict(list)
    for cid in values:
        members[groups.get(cid, f"\x00{cid}")].append(cid)
    by_stratum: dict[str, list[str]] = defaultdict(list)
    for g, cids in members.items():
        by_stratum[Counter(strata[c] for c in cids).most_common(1)[0][0]].append(g)
    held: list[str] = []
    want = 0.0
    taken = 0
    # The share is carried over from stratum to stratum, so many small strata still give a held-out side.
    for _, gs in sorted(by_stratum.items()):
        gs.sort(key=lambda g: _order(seed, g))
        want += holdout * sum(len(members[g]) for g in gs)
        for g in gs:
            size = len(members[g])
            if abs(taken + size - want) < abs(taken - want) - 1e-9:  # a group goes where it brings the share closer
                held.extend(members[g])
                taken += size
    heldout = sorted(held)
    train = sorted(set(values) - set(held))
    if not train or not heldout:
        raise UserError(f"{len(values)} labelled case(s) in {len(members)} group(s) cannot be split into a training "
                        "and a held-out side: label more cases (alignment works from 20)")
    return Split(train=train, heldout=heldout, seed=seed, holdout=holdout, grouped=bool(groups))
