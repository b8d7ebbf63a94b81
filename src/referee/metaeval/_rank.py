"""Pairwise results as a leaderboard: comparisons of named systems, the Bradley-Terry ranking under both
reconciliation rules, and the judge's bias per file (``referee rank``; the HTML report's leaderboard section).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..evaluators._pairwise import RECONCILE_MODES, SCORES, Reconcile, reconciled_score
from ..results._io import read_results
from ..results._schema import ResultRow
from ..stats._bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED
from ..stats._ranking import Comparison, Leaderboard, leaderboard
from ._pairwise import BiasReport, bias
from ._results import pairwise_from_rows, pairwise_rows


def row_score(r: ResultRow, mode: Reconcile = "strict") -> float:
    """Score of A under ``mode``: the row's recorded score for that rule, else recomputed from both orders'
    winners, else (rows of older runs or other tools) the row's own winner."""
    scores = r.details.get("scores")
    if isinstance(scores, dict) and isinstance(scores.get(mode), int | float) and not isinstance(
            scores.get(mode), bool):
        return float(scores[mode])
    orders = r.details.get("orders")
    if isinstance(orders, list) and len(orders) == 2 and all(isinstance(o, dict) for o in orders):
        w = [o.get("winner") for o in orders]
        if w[0] in SCORES and w[1] in SCORES:
            return reconciled_score(w[0], w[1], mode)[0]
    assert r.winner is not None
    return SCORES[r.winner]


def comparisons(rows: Iterable[ResultRow], modes: Sequence[Reconcile] = RECONCILE_MODES, *,
                unnamed: str = "") -> tuple[dict[Reconcile, list[Comparison]], int]:
    """Scored pairwise rows as ``(system_a, system_b, score_a)`` under each of ``modes``, and the number of
    unscored or error rows left out (never counted as a win or a loss). Systems are named by the rows'
    ``system_a``/``system_b`` (details, else metadata), else ``<unnamed>:a`` and ``<unnamed>:b``."""
    comps: dict[Reconcile, list[Comparison]] = {m: [] for m in modes}
    skipped = 0
    for r in rows:
        if r.status != "scored" or r.winner is None:
            skipped += 1
            continue
        a = str(r.details.get("system_a") or r.metadata.get("system_a") or f"{unnamed}:a")
        b = str(r.details.get("system_b") or r.metadata.get("system_b") or f"{unnamed}:b")
        for m in modes:
            comps[m].append((a, b, row_score(r, m)))
    return comps, skipped


def named_leaderboard(rows: Iterable[ResultRow], *, n_boot: int = DEFAULT_N_BOOT,
                      seed: int = DEFAULT_SEED) -> Leaderboard | None:
    """The leaderboard of the scored rows that compare two named systems (``details.system_a/system_b``),
    by each row's own winner; None when no row does."""
    comps = [(str(r.details["system_a"]), str(r.details["system_b"]), SCORES[r.winner]) for r in rows
             if r.status == "scored" and r.winner is not None and r.details.get("system_a")
             and r.details.get("system_b")]
    return leaderboard(comps, n_boot=n_boot, seed=seed) if comps else None


@dataclass
class PairwiseTally:
    """The scored pairwise rows of a run counted: wins of each side, ties, position bias, A's mean score."""

    wins: dict[str, int]
    """``{"a": n, "b": n, "tie": n}``."""
    position_bias: int
    """Rows whose two orders disagreed."""
    mean_score_a: float
    """Mean score of A over the scored rows (0.0 when none)."""


def pairwise_tally(rows: Iterable[ResultRow]) -> PairwiseTally:
    """Count the scored rows of a ``referee pairwise`` run."""
    scored = [r for r in rows if r.status == "scored"]
    return PairwiseTally(wins={w: sum(r.winner == w for r in scored) for w in ("a", "b", "tie")},
                         position_bias=sum(bool(r.position_bias_detected) for r in scored),
                         mean_score_a=sum(r.score or 0.0 for r in scored) / len(scored) if scored else 0.0)


@dataclass
class Ranking:
    """Systems ranked from pairwise results files."""

    reconcile: Reconcile
    """The rule of :attr:`leaderboard` (``boards`` holds both)."""
    boards: dict[Reconcile, Leaderboard]
    bias: dict[str, BiasReport] = field(default_factory=dict)
    """The judge's order consistency, position and length bias, per results file."""

    @property
    def leaderboard(self) -> Leaderboard:
        return self.boards[self.reconcile]

    def to_dict(self) -> dict[str, Any]:
        data = self.leaderboard.to_dict()
        data["reconcile"] = self.reconcile
        data["by_reconcile"] = {m: b.to_dict() for m, b in self.boards.items()}
        data["bias"] = {k: v.to_dict() for k, v in self.bias.items()}
        return data

    def inconsistent(self, min_consistency: float) -> list[tuple[str, float | None]]:
        """Files whose judge order consistency is undefined or below ``min_consistency``."""
        return [(k, b.consistent.estimate) for k, b in self.bias.items()
                if b.consistent.estimate is None or b.consistent.estimate < min_consistency]


def rank_results(paths: Sequence[str | Path], *, reconcile: Reconcile = "strict", n_boot: int = DEFAULT_N_BOOT,
                 seed: int = DEFAULT_SEED, on_note: Callable[[str], None] | None = None) -> Ranking:
    """Rank the systems of pairwise results files (``referee pairwise`` rows) under both reconciliation rules.

    ``on_note`` receives each file's read warnings (``warning: ...``) and left-out rows (``note: ...``) as they
    are found. A :class:`UserError` for a file without pairwise rows, or when no comparison is scored.
    """
    by_mode: dict[Reconcile, list[Comparison]] = {m: [] for m in RECONCILE_MODES}
    biases: dict[str, BiasReport] = {}
    for path in paths:
        loaded = read_results(path)
        for w in loaded.warnings:
            if on_note is not None:
                on_note(f"warning: {w}")
        rows = pairwise_rows(loaded.rows, path)
        comps, skipped = comparisons(rows, RECONCILE_MODES, unnamed=Path(path).stem)
        if skipped and on_note is not None:
            on_note(f"note: {path}: {skipped} unscored/error row(s) left out (never counted as a win or a loss)")
        for m in RECONCILE_MODES:
            by_mode[m].extend(comps[m])
        biases[str(path)] = bias(pairwise_from_rows(rows), n_boot=min(n_boot, DEFAULT_N_BOOT), seed=seed)
    if not by_mode[reconcile]:
        raise UserError("no scored pairwise comparisons in the given files: nothing to rank")
    boards = {m: leaderboard(by_mode[m], n_boot=n_boot, seed=seed) for m in RECONCILE_MODES}
    return Ranking(reconcile=reconcile, boards=boards, bias=biases)
