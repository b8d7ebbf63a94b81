"""Rows -> cases: repeats of one case (same id and turn) are aggregated before any statistic is taken."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ._load import ERROR, SCORED, UNSCORED, ResultsTable


@dataclass
class Units:
    """One entry per case (``id``, or ``id`` + turn) of a subset of a table's rows."""

    keys: list[str]
    rows: NDArray[np.int64]
    """The table rows in this subset."""
    unit_of_row: NDArray[np.int64]
    """For each row in ``rows``, its unit index."""
    category: NDArray[np.int32]
    """Category code of each unit (that of its first row)."""
    n_rows: NDArray[np.int64]
    n_scored: NDArray[np.int64]
    n_unscored: NDArray[np.int64]
    n_error: NDArray[np.int64]
    mean: NDArray[np.float64]
    """Mean score over scored repeats (NaN when none)."""
    pass_share: NDArray[np.float64]
    """Share of scored repeats that pass (NaN when none)."""
    sd: NDArray[np.float64]
    """Population SD of the scores over repeats (0 for a single repeat)."""
    lo: NDArray[np.float64]
    hi: NDArray[np.float64]
    first_row: NDArray[np.int64]
    row_pass: NDArray[np.bool_]
    """For each row in ``rows``, whether it passes under the pass rule (False for rows not scored)."""
    n_verdicts: NDArray[np.int64]
    """Scored repeats whose pass came from the evaluator's own ``passed`` (0 under the threshold rule)."""

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def scored(self) -> NDArray[np.bool_]:
        return self.n_scored > 0

    def index(self) -> dict[str, int]:
        return dict(zip(self.keys, range(len(self.keys)), strict=True))


def unit_key(case_id: str, turn: int) -> str:
    return case_id if turn < 0 else f"{case_id} (turn {turn})"


def build_units(table: ResultsTable, rows: NDArray[np.int64], threshold: float,
                pass_rule: str = "threshold") -> Units:
    """Group ``rows`` of ``table`` into cases and aggregate their repeats. ``pass_rule`` decides which scored
    rows pass (``load.PASS_RULES``); every pass statistic downstream is built on ``pass_share``."""
    ids = table.ids
    turn = table.turn[rows]
    rep = table.repeat[rows]
    row_list = rows.tolist()
    if not bool((rep >= 0).any()) and not bool((turn >= 0).any()):
        # One row per case (the loader dropped duplicate ids): units are the rows, in order.
        keys = ids if len(rows) == len(ids) else [ids[r] for r in row_list]
        u = np.arange(len(rows), dtype=np.int64)
    else:
        names = [unit_key(ids[r], t) for r, t in zip(row_list, turn.tolist(), strict=True)] \
            if bool((turn >= 0).any()) else [ids[r] for r in row_list]
        keys = list(dict.fromkeys(names))  # first-appearance order
        index = dict(zip(keys, range(len(keys)), strict=True))
        u = np.fromiter(map(index.__getitem__, names), dtype=np.int64, count=len(names))
    n_units = len(keys)
    status = table.status[rows]
    score = table.score[rows]
    s = status == SCORED
    us = u[s]
    sc = score[s]
    n_rows = np.bincount(u, minlength=n_units)
    n_scored = np.bincount(us, minlength=n_units)
    total = np.bincount(us, weights=sc, minlength=n_units)
    row_pass = table.row_passes(rows, threshold, pass_rule) & s
    passes = np.bincount(us, weights=row_pass[s].astype(np.float64), minlength=n_units)
    if pass_rule == "evaluator":
        n_verdicts = np.bincount(us, weights=table.has_verdict(rows)[s], minlength=n_units).astype(np.int64)
    else:
        n_verdicts = np.zeros(n_units, dtype=np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / n_scored
        share = passes / n_scored
    first_row = np.full(n_units, -1, dtype=np.int64)
    # Reversed assignment leaves each unit's first row (numpy applies fancy assignments in order).
    first_row[u[::-1]] = rows[::-1]
    if len(rows) == n_units:  # no repeats: spread is 0 and bounds are the score itself
        lo = score.copy()  # every row is a new unit, so units are in row order
        hi = lo
        sd = np.where(np.isnan(lo), np.nan, 0.0)
    else:
        sq = np.bincount(us, weights=sc * sc, minlength=n_units)
        with np.errstate(invalid="ignore", divide="ignore"):
            sd = np.sqrt(np.maximum(sq / n_scored - mean * mean, 0.0))
        lo = np.full(n_units, np.inf)
        hi = np.full(n_units, -np.inf)
        np.minimum.at(lo, us, sc)
        np.maximum.at(hi, us, sc)
        lo[n_scored == 0] = np.nan
        hi[n_scored == 0] = np.nan
    return Units(
        keys=keys, rows=rows, unit_of_row=u, category=table.category[first_row],
        n_rows=n_rows, n_scored=n_scored,
        n_unscored=np.bincount(u, weights=(status == UNSCORED), minlength=n_units).astype(np.int64),
        n_error=np.bincount(u, weights=(status == ERROR), minlength=n_units).astype(np.int64),
        mean=mean, pass_share=share, sd=sd, lo=lo, hi=hi, first_row=first_row, row_pass=row_pass,
        n_verdicts=n_verdicts,
    )
