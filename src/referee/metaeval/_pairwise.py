"""Meta-evaluation of pairwise judges from recorded verdicts: accuracy per order, positional agreement,
kappa, position-bias shares and length bias, each with a bootstrap CI. No model is called.

Conventions: outputs are numbered by their **original** position, ``"1"`` (a) and ``"2"`` (b). Each item has
a gold ``label`` (``"1"``, ``"2"``, or ``"tie"``) and one verdict per order in that original numbering:
``noswap`` (output 1 shown first) and ``swap`` (output 2 shown first). A verdict is ``"1"``, ``"2"``,
``"tie"`` or None (the judge's reply could not be parsed: it counts as wrong, never as a winner).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..stats._agreement import cohen_kappa, kappa_ci, proportion_ci
from ..stats._bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED, Interval, bootstrap_ci


@dataclass(frozen=True)
class PairVerdict:
    """One judged pair: gold label and the verdict of each order (original numbering)."""

    id: str
    label: str | None
    noswap: str | None
    swap: str | None
    len_1: int | None = None
    len_2: int | None = None
    group: str = ""


def _iv(x: Interval | None) -> dict[str, Any] | None:
    return None if x is None else x.to_dict()


def _flags(values: Sequence[bool], n_boot: int, seed: int) -> Interval:
    return proportion_ci(values, n_boot=n_boot, seed=seed)


@dataclass
class BiasReport:
    """Position and length bias of one judge over pairs judged in both orders."""

    n: int
    consistent: Interval
    """The same (parsed) verdict in both orders; two unparsed verdicts are not consistent."""
    first: Interval
    """Picks whichever output is shown first, in both orders."""
    second: Interval
    """Picks whichever output is shown second, in both orders."""
    unparsed: int
    """Pairs with at least one verdict that could not be parsed."""
    length_pairs: int = 0
    """Pairs whose outputs differ by more than the length margin."""
    judge_prefers_longer: Interval | None = None
    """P(the judge picks the longer output), averaged over both orders."""
    gold_prefers_longer: Interval | None = None
    """P(the gold/human label is the longer output), for comparison."""
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "consistent": _iv(self.consistent), "first_shown": _iv(self.first),
                "second_shown": _iv(self.second), "unparsed_pairs": self.unparsed,
                "length_pairs": self.length_pairs, "judge_prefers_longer": _iv(self.judge_prefers_longer),
                "gold_prefers_longer": _iv(self.gold_prefers_longer), "notes": self.notes}


LENGTH_MARGIN = 30


def bias(items: Sequence[PairVerdict], *, length_margin: int = LENGTH_MARGIN, n_boot: int = DEFAULT_N_BOOT,
         seed: int = DEFAULT_SEED) -> BiasReport:
    """Order consistency, first/second-shown shares and preference for the longer output.

    Shares are over all pairs (unparsed verdicts count in the denominator and in none of the shares).
    Length bias uses the pairs whose outputs differ by more than ``length_margin`` characters.
    """
    n = len(items)
    rep = BiasReport(
        n=n,
        consistent=_flags([v.noswap is not None and v.noswap == v.swap for v in items], n_boot, seed),
        first=_flags([v.noswap == "1" and v.swap == "2" for v in items], n_boot, seed),
        second=_flags([v.noswap == "2" and v.swap == "1" for v in items], n_boot, seed),
        unparsed=sum(v.noswap is None or v.swap is None for v in items),
    )
    if n == 0:
        rep.notes.append("no pairs: no bias statistic can be computed")
        return rep
    if rep.unparsed:
        # Count-free text so that many groups share one note line; the count is in ``unparsed``.
        rep.notes.append("pairs with an order that has no usable verdict (unparsed, unscored, or not recorded "
                         "per order) count in the denominator of the consistent / first-shown / second-shown "
                         "shares and in none of them")
    with_len = [v for v in items if v.len_1 is not None and v.len_2 is not None]
    if not with_len:
        rep.notes.append("output lengths unknown: length bias not computed")
        return rep
    diff = [v for v in with_len if abs((v.len_1 or 0) - (v.len_2 or 0)) > length_margin]
    rep.length_pairs = len(diff)
    if not diff:
        rep.notes.append(f"no pair differs in length by more than {length_margin} characters: "
                         "length bias not computed")
        return rep
    longer = ["1" if (v.len_1 or 0) > (v.len_2 or 0) else "2" for v in diff]
    per_pair = [((v.noswap == lg) + (v.swap == lg)) / 2 for v, lg in zip(diff, longer, strict=True)]
    rep.judge_prefers_longer = bootstrap_ci(np.asarray(per_pair), n_boot=n_boot, seed=seed)
    labelled = [(v, lg) for v, lg in zip(diff, longer, strict=True) if v.label in ("1", "2")]
    if labelled:
        rep.gold_prefers_longer = _flags([v.label == lg for v, lg in labelled], n_boot, seed)
    return rep


@dataclass
class PairwiseMeta:
    """A pairwise judge against gold labels, from its recorded verdicts in both orders."""

    n: int
    acc_noswap: Interval
    acc_swap: Interval
    acc_mean: Interval
    agreement: Interval
    """Positional agreement: the same verdict in both orders (two unparsed verdicts count as equal)."""
    correct_both: Interval
    kappa_noswap: Interval
    kappa_swap: Interval
    kappa_mean: float | None
    bias: BiasReport
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "accuracy_noswap": _iv(self.acc_noswap), "accuracy_swap": _iv(self.acc_swap),
                "accuracy_mean": _iv(self.acc_mean), "positional_agreement": _iv(self.agreement),
                "correct_both": _iv(self.correct_both), "kappa_noswap": _iv(self.kappa_noswap),
                "kappa_swap": _iv(self.kappa_swap), "kappa_mean": self.kappa_mean,
                "bias": self.bias.to_dict(), "notes": self.notes}


_KAPPA_LABELS = ["1", "2", "tie", "unparsed"]


def pairwise_meta(items: Sequence[PairVerdict], *, length_margin: int = LENGTH_MARGIN,
                  n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED) -> PairwiseMeta:
    """Accuracy per order and on average, positional agreement, Cohen's kappa per order and bias shares.

    Items without a gold label count for agreement and bias only.
    """
    gold = [v for v in items if v.label is not None]
    notes: list[str] = []
    if len(gold) < len(items):
        notes.append(f"{len(items) - len(gold)} pair(s) have no gold label: left out of accuracy and kappa")
    if not gold:
        notes.append("no gold labels: accuracy and kappa not computed")
    c1 = [v.noswap == v.label for v in gold]
    c2 = [v.swap == v.label for v in gold]

    def lab(x: str | None) -> str:
        return "unparsed" if x is None else x

    k1 = kappa_ci([lab(v.label) for v in gold], [lab(v.noswap) for v in gold], labels=_KAPPA_LABELS,
                  n_boot=n_boot, seed=seed)
    k2 = kappa_ci([lab(v.label) for v in gold], [lab(v.swap) for v in gold], labels=_KAPPA_LABELS,
                  n_boot=n_boot, seed=seed)
    km = None if k1.estimate is None or k2.estimate is None else (k1.estimate + k2.estimate) / 2
    return PairwiseMeta(
        n=len(items),
        acc_noswap=_flags(c1, n_boot, seed),
        acc_swap=_flags(c2, n_boot, seed),
        acc_mean=bootstrap_ci(np.asarray([(a + b) / 2 for a, b in zip(c1, c2, strict=True)], dtype=np.float64),
                              n_boot=n_boot, seed=seed),
        agreement=_flags([v.noswap == v.swap for v in items], n_boot, seed),
        correct_both=_flags([a and b for a, b in zip(c1, c2, strict=True)], n_boot, seed),
        kappa_noswap=k1, kappa_swap=k2, kappa_mean=km,
        bias=bias(items, length_margin=length_margin, n_boot=n_boot, seed=seed),
        notes=notes,
    )


def llmbar_statistics(items: Sequence[PairVerdict]) -> dict[str, str | float]:
    """The nine figures of LLMBar's ``statistics.json``, computed and formatted the way upstream does.

    Upstream's kappas code a verdict as 1 ("output 1 won") or 0 (anything else) and compare that with the
    gold label coded 1/2, so only "output 1" agreements count for ``kappa_False``/``kappa_True``; this
    function reproduces that quirk on purpose (use :func:`pairwise_meta` for conventional kappas).
    """
    n = len(items)
    if n == 0:
        raise ValueError("no verdicts: LLMBar statistics are undefined for an empty sample")
    labels = [v.label for v in items]
    cf = sum(v.noswap == v.label for v in items)
    ct = sum(v.swap == v.label for v in items)
    eq = sum(v.noswap == v.swap for v in items)
    both = sum(v.noswap == v.label and v.swap == v.label for v in items)

    def coded(ws: list[str | None]) -> list[int]:
        return [1 if w == "1" else 0 for w in ws]

    gold = [1 if lab_ == "1" else 2 for lab_ in labels]
    k_false = cohen_kappa(gold, coded([v.noswap for v in items]), labels=[0, 1, 2])
    k_true = cohen_kappa(gold, coded([v.swap for v in items]), labels=[0, 1, 2])
    k_agr = cohen_kappa(coded([v.noswap for v in items]), coded([v.swap for v in items]), labels=[0, 1])

    def frac(k: int) -> str:
        return f"{k} / {n} = {k / n * 100}%"

    return {
        "correct_average": f"{(cf + ct) / (2 * n) * 100}%",
        "equal": frac(eq),
        "correct_False": frac(cf),
        "correct_True": frac(ct),
        "correct_both": frac(both),
        "kappa_average": (k_false + k_true) / 2,
        "kappa_agreement": k_agr,
        "kappa_False": k_false,
        "kappa_True": k_true,
    }
