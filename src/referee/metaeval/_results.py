"""referee's own results files as meta-evaluation input: pairwise rows (both orders kept in ``details``)
against gold labels, and absolute scores against several human raters (human mean, leave-one-out ceiling).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError, UserError
from ..results._io import iter_jsonl_objects, read_results
from ..results._schema import ResultRow
from ..stats._agreement import correlation, correlation_ci
from ..stats._bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED, Interval
from ._pairwise import PairVerdict

_GOLD = {"a": "1", "1": "1", "output_a": "1", "b": "2", "2": "2", "output_b": "2", "tie": "tie"}
_W = {"a": "1", "b": "2", "tie": "tie"}


def order_verdicts(row: ResultRow) -> tuple[str | None, str | None]:
    """The winner of each order of a pairwise row in original numbering (a -> 1, b -> 2), None when that
    order was not scored. Rows without per-order details (seed rows) give their reconciled winner twice only
    when no position bias was recorded."""
    orders = row.details.get("orders") if isinstance(row.details, dict) else None
    if isinstance(orders, list) and orders:
        got: dict[str, str | None] = {"a": None, "b": None}
        for o in orders:
            if isinstance(o, dict) and o.get("shown_first") in got and o.get("status") == "scored":
                got[o["shown_first"]] = _W.get(str(o.get("winner")))
        return got["a"], got["b"]
    if row.status == "scored" and row.winner is not None and not row.position_bias_detected:
        w = _W[row.winner]
        return w, w
    return None, None


def read_gold(path: str | Path) -> dict[str, str]:
    """Gold labels ``{id, label}`` (or ``winner``/``gold``): a, b, tie, 1 or 2."""
    p = Path(path)
    gold: dict[str, str] = {}
    for lineno, obj in iter_jsonl_objects(p):
        key = next((k for k in ("label", "gold", "winner") if k in obj), "label")
        val = _GOLD.get(str(obj.get(key, "")).strip().lower())
        if obj.get("id") in (None, ""):
            raise InputError("missing", file=str(p), line=lineno, field="id")
        if val is None:
            raise InputError(f"{obj.get(key)!r} is not a, b, tie, 1 or 2", file=str(p), line=lineno,
                             field=key)
        gold[str(obj["id"])] = val
    return gold


def pairwise_rows(rows: Iterable[ResultRow], path: str | Path) -> list[ResultRow]:
    """The pairwise rows (evaluator ``pairwise``, or any row with a winner) of results file ``path``; a
    :class:`UserError` when it has none."""
    found = [r for r in rows if r.evaluator == "pairwise" or r.winner is not None]
    if not found:
        raise UserError(f"{path}: no pairwise rows (evaluator 'pairwise' with a winner) in this file")
    return found


def pairwise_from_rows(rows: Iterable[ResultRow], gold: dict[str, str] | None = None,
                       lengths: dict[str, tuple[int, int]] | None = None) -> list[PairVerdict]:
    """Pairwise rows as verdicts in both orders, joined with gold labels and output lengths."""
    out = []
    for r in rows:
        n1, n2 = order_verdicts(r)
        ln = (lengths or {}).get(r.id)
        if ln is None and isinstance(r.details, dict) and "len_a" in r.details:
            ln = (int(r.details["len_a"]), int(r.details["len_b"]))
        out.append(PairVerdict(id=r.id, label=(gold or {}).get(r.id), noswap=n1, swap=n2,
                               len_1=ln[0] if ln else None, len_2=ln[1] if ln else None))
    return out


def pairwise_from_results(path: str | Path, gold: dict[str, str] | None = None,
                          lengths: dict[str, tuple[int, int]] | None = None) -> list[PairVerdict]:
    """Pairwise verdicts of a referee results file (rows of evaluator ``pairwise``), joined with gold."""
    return pairwise_from_rows(pairwise_rows(read_results(path).rows, path), gold, lengths)


@dataclass
class AbsoluteMeta:
    """An absolute-score judge against several human raters."""

    n: int
    raters: int
    spearman: Interval
    kendall: Interval
    ceiling_kendall: float | None
    """Leave-one-out human ceiling: each rater vs the mean of the others (Kendall tau-b), averaged."""
    ceiling_spearman: float | None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "raters": self.raters, "spearman_vs_human_mean": self.spearman.to_dict(),
                "kendall_vs_human_mean": self.kendall.to_dict(), "human_ceiling_kendall": self.ceiling_kendall,
                "human_ceiling_spearman": self.ceiling_spearman, "notes": self.notes}


def read_human_ratings(path: str | Path) -> dict[str, dict[str, float]]:
    """Human ratings ``{id, rater, score}`` (one row per rater and case) -> id -> rater -> score."""
    p = Path(path)
    out: dict[str, dict[str, float]] = {}
    for lineno, obj in iter_jsonl_objects(p):
        if obj.get("id") in (None, ""):
            raise InputError("missing", file=str(p), line=lineno, field="id")
        key = "score" if "score" in obj else "label"
        v = obj.get(key)
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise InputError(f"{v!r} is not a number", file=str(p), line=lineno, field=key)
        rater = str(obj.get("rater", f"rater{len(out.get(str(obj.get('id')), {})) + 1}"))
        out.setdefault(str(obj.get("id")), {})[rater] = float(v)
    return out


def absolute_meta(judge: dict[str, float], humans: dict[str, dict[str, float]], *,
                  n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED) -> AbsoluteMeta:
    """Correlation of judge scores with the human mean, and the leave-one-out human ceiling."""
    ids = [i for i in judge if i in humans]
    notes: list[str] = []
    if not ids:
        raise UserError("no ids in common between the judge results and the human ratings")
    raters = sorted({r for i in ids for r in humans[i]})
    x = np.array([judge[i] for i in ids])
    y = np.array([np.mean(list(humans[i].values())) for i in ids])
    ck: float | None = None
    cs: float | None = None
    if len(raters) >= 2:
        taus, rhos = [], []
        for r in raters:
            sel = [i for i in ids if r in humans[i] and len(humans[i]) >= 2]
            if len(sel) < 3:
                continue
            own = [humans[i][r] for i in sel]
            rest = [np.mean([v for k, v in humans[i].items() if k != r]) for i in sel]
            taus.append(correlation(own, rest, "kendall"))
            rhos.append(correlation(own, rest, "spearman"))
        taus = [t for t in taus if t == t]
        rhos = [t for t in rhos if t == t]
        ck = float(np.mean(taus)) if taus else None
        cs = float(np.mean(rhos)) if rhos else None
        if ck is None:
            notes.append("no rater shares 3 or more cases with another rater: no leave-one-out ceiling")
    else:
        notes.append("only one human rater: no leave-one-out ceiling")
    sp = correlation_ci(x, y, "spearman", n_boot=n_boot, seed=seed)
    kt = correlation_ci(x, y, "kendall", n_boot=n_boot, seed=seed)
    if sp.estimate is None:
        notes.append("correlations undefined: fewer than 2 cases in common, or the judge or the human mean is "
                     "constant (a one-sided sample)")
    elif len(ids) < 10:
        notes.append(f"small sample ({len(ids)} cases): the correlations and their intervals are unreliable")
    return AbsoluteMeta(n=len(ids), raters=len(raters), spearman=sp, kendall=kt,
                        ceiling_kendall=ck, ceiling_spearman=cs, notes=notes)


def judge_scores(path: str | Path) -> dict[str, float]:
    """Mean score per id of the scored rows of a results file (repeats averaged)."""
    loaded = read_results(path)
    acc: dict[str, list[float]] = {}
    for r in loaded.rows:
        if r.status == "scored" and r.score is not None:
            acc.setdefault(r.id, []).append(r.score)
    return {k: float(np.mean(v)) for k, v in acc.items()}


