"""Groups of cases (overall, per category, per attack type) and the case lines reports show."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from ..stats import (
    cases_needed,
    mean_interval,
    min_detectable_drop,
    wilson_interval,
)
from ._load import SCORED, ResultsTable
from ._model import CaseLine, Group, Power, ScoreOptions
from ._units import Units


def _mean_or_none(x: NDArray[np.float64]) -> float | None:
    v = x[~np.isnan(x)]
    return float(v.mean()) if v.size else None


def _group(name: str, table: ResultsTable, units: Units, sel: NDArray[np.int64] | slice,
           row_sel: NDArray[np.int64] | slice, opts: ScoreOptions, repeats: bool) -> Group:
    """``sel`` / ``row_sel``: the group's units / positions in ``units.rows`` (``slice(None)`` for all)."""
    scored = units.scored[sel]
    share = units.pass_share[sel][scored]
    means = units.mean[sel][scored]
    n = int(scored.sum())
    rows = units.rows[row_sel]
    cost_rows = rows if opts.cost_rows == "all" else rows[table.status[rows] == SCORED]
    pass_rate = mean_interval(share, n_boot=opts.n_boot, seed=opts.boot_seed, alpha=opts.alpha).as_percent()
    g = Group(
        name=name, rows=len(rows), cases=n,
        unscored=int(units.n_unscored[sel].sum()), errors=int(units.n_error[sel].sum()),
        pass_rate=pass_rate,
        pass_rate_wilson=wilson_interval(float(share.sum()), n, alpha=opts.alpha),
        mean=mean_interval(means, n_boot=opts.n_boot, seed=opts.boot_seed, alpha=opts.alpha),
        mean_cost=_mean_or_none(table.cost[cost_rows]), mean_latency_ms=_mean_or_none(table.latency[cost_rows]),
    )
    if repeats and n:
        g.pass_at_k = float((share > 0).mean())
        g.pass_all_k = float((share >= 1).mean())
    return g


def _case_line(table: ResultsTable, units: Units, i: int, *, worst_row: int | None = None,
               texts: dict[int, dict[str, object]] | None = None) -> CaseLine:
    row = int(units.first_row[i]) if worst_row is None else worst_row
    text = (texts or {}).get(row, {})
    rationale = text.get("rationale") or text.get("error")
    mean = float(units.mean[i]) if units.n_scored[i] else None
    share = float(units.pass_share[i]) if units.n_scored[i] else None
    status = "scored" if units.n_scored[i] else ("error" if units.n_error[i] else "unscored")
    return CaseLine(
        id=units.keys[i], category=table.category_names[int(units.category[i])], score=mean,
        passed=None if share is None else bool(share >= 0.5), rationale=str(rationale) if rationale else None,
        line=int(table.line[row]), repeats=int(units.n_rows[i]), pass_share=share,
        sd=None if mean is None else float(units.sd[i]), min=None if mean is None else float(units.lo[i]),
        max=None if mean is None else float(units.hi[i]), status=status,
        verdict_source="evaluator" if units.n_verdicts[i] else "threshold",
    )


def _worst_rows(table: ResultsTable, units: Units, picks: list[int]) -> dict[int, int]:
    """For each picked unit, its lowest-scoring failing scored row, else its lowest-scoring scored row (the
    rationale shown is that repeat's). Under the threshold rule the lowest score is always a failing one."""
    if not picks:
        return {}
    want = np.isin(units.unit_of_row, np.asarray(picks))
    out: dict[int, int] = {}
    rank: dict[int, tuple[bool, float]] = {}
    for r, u, ok in zip(units.rows[want].tolist(), units.unit_of_row[want].tolist(), units.row_pass[want].tolist(),
                        strict=True):
        s = table.score[r]
        key = (ok, s)
        best = rank.get(u)
        if best is None or (not math.isnan(s) and (math.isnan(best[1]) or key < best)):
            out[u] = r
            rank[u] = key
    return out


def case_lines(table: ResultsTable, units: Units, picks: list[int]) -> list[CaseLine]:
    worst = _worst_rows(table, units, picks)
    texts = table.read_rows(list(worst.values()))
    return [_case_line(table, units, i, worst_row=worst.get(i), texts=texts) for i in picks]


def _power(units: Units, scored: NDArray[np.bool_], paired: NDArray[np.float64] | None,
           opts: ScoreOptions) -> Power | None:
    n = int(scored.sum())
    if n == 0:
        return None
    if paired is not None and paired.size >= 2 and float(paired.std(ddof=1)) > 0:
        sd, basis = float(paired.std(ddof=1)), "paired differences of per-case pass flags vs the baseline"
    else:
        p = float(np.clip(units.pass_share[scored].mean(), 0.05, 0.95))
        sd, basis = math.sqrt(2 * p * (1 - p)), "two independent runs at the current pass rate"
    mdd = min_detectable_drop(sd, n, alpha=opts.alpha)
    return Power(n=n, sd=sd, basis=basis, min_detectable_drop=mdd, target_drop=opts.target_drop,
                 cases_needed=cases_needed(sd, opts.target_drop, alpha=opts.alpha),
                 detectable=mdd is not None and mdd <= 1.0)


def _split(table: ResultsTable, opts: ScoreOptions) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Row indices of the correctness track and of the adversarial track."""
    all_rows = np.arange(len(table), dtype=np.int64)
    if table.adversarial:
        return all_rows[:0], all_rows
    adv_codes = [c for c, k in enumerate(table.categories) if k in opts.adversarial_categories]
    if not adv_codes:
        return all_rows, all_rows[:0]
    adv = np.isin(table.category, np.asarray(adv_codes, dtype=np.int32))
    return all_rows[~adv], all_rows[adv]


def by_code(codes: NDArray[np.int32]) -> dict[int, NDArray[np.int64]]:
    """Each code present (ascending) -> the positions holding it, in order: one stable sort rather than a
    comparison over every position per code (a million cases in 20 categories)."""
    if not codes.size:
        return {}
    order = np.argsort(codes, kind="stable")
    ordered = codes[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], ordered.size]
    return {int(ordered[a]): order[a:b] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)}


def _groups_by_category(table: ResultsTable, units: Units, opts: ScoreOptions, repeats: bool) -> list[Group]:
    out = []
    row_groups = by_code(table.category[units.rows])
    for code, sel in by_code(units.category).items():
        out.append(_group(table.category_names[code], table, units, sel, row_groups[code], opts, repeats))
    out.sort(key=lambda g: g.name.lower())
    return out
