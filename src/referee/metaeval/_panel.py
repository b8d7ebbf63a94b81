"""Panels of recorded pairwise judges (``referee metaeval panel``): every panel's accuracy under each
aggregation rule, against the best single judge, with the panel's agreement, its effective number of votes,
and a panel chosen by cross-validation. No model is called.

**A judge's vote on a pair** combines its two recorded orders by JudgeBench's rule: each order scores +1
when it names output 1, -1 for output 2, 0 for a tie or no verdict; the vote is the sign of the sum (``"1"``,
``"2"``, ``"tie"`` at 0), and no vote at all (``None``) when neither order has a verdict. A judge is right on a
pair when its vote equals the label, so a judge's accuracy here is JudgeBench's accuracy.

**Rules** (a judge with no vote on a pair is left out of it; a pair no judge voted on is not right):

- ``majority``: the output more judges voted for; an even split (tie votes abstain) is a tie.
- ``mean``: the sign of the mean order score over the judges (a judge split between orders counts 0).
- ``median``: the sign of the median of the judges' mean order scores.
- ``unanimous``: the output every voting judge named; any dissent or tie vote makes the panel say tie (the
  pairwise form of all-must-pass; ``min`` has no meaning for a winner).
- ``weighted``: a majority with each judge weighted ``log(p / (1 - p))`` (the optimal weights for
  independent judges of accuracy ``p``; Nitzan and Paroush, 1982), ``p`` measured on the training folds
  (clipped to [0.01, 0.99]; a judge no better than chance weighs 0). It needs held-out items, so it is only
  scored in the cross-validation, never in-sample.

A tie is never right: labels here always name a winner.

**Selection.** The in-sample table ranks panels on the very items it scores them on, so its best row is
optimistic and is labelled so. The headline is the cross-validation: on each of ``folds`` folds the best
single judge and the best panel (any size of 2 or more, any rule) are chosen on the other folds and scored
on this one; the held-out results of the folds are pooled and compared paired, item by item.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InputError, UserError
from ..providers import model_family
from ..stats._agreement import proportion_ci
from ..stats._bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED, Interval
from ..stats._paired import PairedResult, paired_bootstrap
from ..stats._panel import (
    EffectiveVotes,
    effective_votes,
    independent_majority,
    krippendorff_alpha,
)
from ._judgebench import read_outputs
from ._llmbar import read_verdicts
from ._pairwise import PairVerdict

RULES = ("majority", "mean", "median", "unanimous", "weighted")
IN_SAMPLE_RULES = ("majority", "mean", "median", "unanimous")
MAX_PANELS = 20_000


def _score(v: str | None) -> float:
    return 1.0 if v == "1" else -1.0 if v == "2" else 0.0


@dataclass
class PanelData:
    """Recorded pairwise verdicts of several judges on the same pairs, aligned by pair."""

    name: str
    judges: list[str]
    ids: list[str]
    labels: NDArray[np.float64]
    """+1: output 1 is the better one; -1: output 2."""
    strength: NDArray[np.float64]
    """Judges x pairs: the mean order score in [-1, 1]; nan where the judge has no vote on the pair."""
    notes: list[str] = field(default_factory=list)
    """What was left out while reading (judges not recorded on every chosen subset)."""

    @property
    def votes(self) -> NDArray[np.float64]:
        """Judges x pairs: +1, -1, 0 (tie) or nan (no vote)."""
        return np.sign(self.strength)

    def vote_lists(self) -> list[list[str | None]]:
        names = {1.0: "1", -1.0: "2", 0.0: "tie"}
        return [[None if math.isnan(x) else names[float(x)] for x in row] for row in self.votes]


def panel_data(name: str, judges: Mapping[str, Sequence[PairVerdict]]) -> PanelData:
    """Align judges' recorded verdicts by pair id. A pair every judge lacks is dropped; a pair a judge lacks
    is no vote for that judge. Labels must agree between judges' files and name a winner (1 or 2)."""
    if len(judges) < 2:
        raise UserError(f"{name}: a panel needs at least two judges; found {len(judges)}")
    labels: dict[str, str] = {}
    for jname, items in judges.items():
        for v in items:
            if v.label not in ("1", "2"):
                raise InputError(f"{jname}: pair {v.id} has label {v.label!r}; panels need a winner (1 or 2)")
            old = labels.setdefault(v.id, v.label)
            if old != v.label:
                raise InputError(f"pair {v.id}: judges' files disagree on its label ({old} vs {v.label})")
    ids = sorted(labels)
    pos = {i: k for k, i in enumerate(ids)}
    strength = np.full((len(judges), len(ids)), np.nan)
    for j, items in enumerate(judges.values()):
        for v in items:
            if v.noswap is None and v.swap is None:
                continue
            strength[j, pos[v.id]] = (_score(v.noswap) + _score(v.swap)) / 2
    return PanelData(name, list(judges), ids, np.array([_score(labels[i]) for i in ids]), strength)


def judgebench_panel_data(outputs: Iterable[str | Path], name: str = "JudgeBench") -> PanelData:
    """JudgeBench outputs (``<response_model>__<judge>__<judge_model>.jsonl``, one judge per file) as a panel.

    Judge names are ``<judge>:<judge_model>`` from the file name (the file stem when it does not split)."""
    judges: dict[str, list[PairVerdict]] = {}
    models: set[str] = set()
    for path in outputs:
        p = Path(path)
        parts = p.stem.split("__")
        jname = f"{parts[1]}:{parts[2]}" if len(parts) == 3 else p.stem
        if len(parts) == 3:
            models.add(parts[0])
        if jname in judges:
            raise UserError(f"judge {jname} is given twice ({p})")
        judges[jname] = read_outputs(p)
    if len(models) > 1:
        raise UserError(f"these outputs judge different response models ({', '.join(sorted(models))}): a panel "
                        "needs its judges on the same pairs")
    return panel_data(name, judges)


def llmbar_panel_data(root: str | Path, *, subsets: Iterable[str] = (), evaluators: Iterable[str] = (),
                      strategies: Iterable[str] = ("Vanilla_NoRules",)) -> PanelData:
    """LLMBar's recorded verdicts as a panel: one judge per (evaluator, strategy), items ``subset:idx`` over the
    chosen subsets (empty: LLMBar's Natural and four Adversarial subsets). A judge must be recorded on every
    chosen subset; one that is not is left out, with the reason, by :class:`UserError` if fewer than two remain."""
    subsets = set(subsets) or {"LLMBar/Natural", "LLMBar/Adversarial/Neighbor", "LLMBar/Adversarial/GPTInst",
                               "LLMBar/Adversarial/GPTOut", "LLMBar/Adversarial/Manual"}
    evaluators, strategies = set(evaluators), set(strategies)
    groups = read_verdicts(Path(root) / "verdicts.csv")
    by_judge: dict[str, dict[str, list[PairVerdict]]] = {}
    for (subset, ev, st), items in groups.items():
        if subset in subsets and (not evaluators or ev in evaluators) and (not strategies or st in strategies):
            jname = ev if len(strategies) == 1 else f"{ev}/{st}"
            by_judge.setdefault(jname, {})[subset] = [
                PairVerdict(f"{subset}:{v.id}", v.label, v.noswap, v.swap) for v in items]
    missing = sorted(subsets - {s for per in by_judge.values() for s in per})
    if missing:
        raise UserError(f"no recorded verdicts for subset(s) {', '.join(missing)}")
    seen_ev = {k[1] for k in groups}
    seen_st = {k[2] for k in groups}
    unknown = sorted(evaluators - seen_ev) + sorted(strategies - seen_st)
    if unknown:
        raise UserError(f"no recorded verdicts for {', '.join(unknown)} (judges: {', '.join(sorted(seen_ev))}; "
                        f"strategies: {', '.join(sorted(seen_st))})")
    judges = {j: [v for s in sorted(per) for v in per[s]] for j, per in sorted(by_judge.items())
              if set(per) == subsets}
    partial = sorted(j for j, per in by_judge.items() if set(per) != subsets)
    data = panel_data("LLMBar " + ", ".join(sorted(subsets)), judges)
    if partial:
        data.notes.append(f"left out, not recorded on every chosen subset: {', '.join(partial)}")
    return data


def _verdicts(data: PanelData, panel: Sequence[int], rule: str, weights: NDArray[np.float64] | None = None
              ) -> NDArray[np.float64]:
    """The panel's verdict per pair: +1, -1, 0 (tie) or nan (no judge voted)."""
    s = data.strength[list(panel)]
    v = np.sign(s)
    voted = ~np.isnan(s)
    none = ~voted.any(axis=0)
    with warnings.catch_warnings():
        # An all-nan column (a pair no judge of the panel voted on) is expected; its verdict is set below.
        warnings.simplefilter("ignore", RuntimeWarning)
        if rule == "majority":
            out = np.sign(np.nansum(v, axis=0))
        elif rule == "mean":
            out = np.sign(np.nanmean(s, axis=0))
        elif rule == "median":
            out = np.sign(np.nanmedian(s, axis=0))
        elif rule == "unanimous":
            lo, hi = np.nanmin(v, axis=0), np.nanmax(v, axis=0)
            out = np.where(lo == hi, lo, 0.0)
        elif rule == "weighted":
            if weights is None:
                raise ValueError("the weighted rule needs weights from training items")
            w = weights[list(panel)][:, None]
            out = np.sign(np.nansum(v * w, axis=0))
        else:
            raise ValueError(f"unknown rule {rule!r}; one of {', '.join(RULES)}")
    out = np.asarray(out, dtype=np.float64)
    out[none] = np.nan
    return out


def _correct(data: PanelData, verdicts: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.asarray(verdicts == data.labels, dtype=np.float64)


def log_odds_weights(acc: NDArray[np.float64]) -> NDArray[np.float64]:
    """Weights ``log(p / (1 - p))`` of judges of accuracy ``p`` (clipped to [0.01, 0.99]), 0 at or below chance."""
    p = np.clip(acc, 0.01, 0.99)
    return np.asarray(np.maximum(0.0, np.log(p / (1 - p))), dtype=np.float64)


@dataclass
class JudgeFigure:
    name: str
    family: str | None
    voted: int
    """Pairs on which the judge has a vote."""
    accuracy: Interval

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "family": self.family, "voted": self.voted,
                "accuracy": self.accuracy.to_dict()}


@dataclass
class PanelFigure:
    judges: tuple[str, ...]
    rule: str
    accuracy: Interval
    vs_best: PairedResult
    """Paired bootstrap of (panel right) - (best single judge right), item by item."""
    effective: EffectiveVotes
    independent: float
    """The majority accuracy ``len(judges)`` independent judges of these accuracies would reach."""
    alpha: Interval | None = None
    """Krippendorff's alpha of the panel's votes (with an interval for the rows shown)."""
    shared_families: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"judges": list(self.judges), "rule": self.rule, "accuracy": self.accuracy.to_dict(),
                "vs_best": _paired(self.vs_best), "effective_votes": self.effective.to_dict(),
                "independent_majority": self.independent,
                "alpha": None if self.alpha is None else self.alpha.to_dict(),
                "shared_families": self.shared_families}


def _paired(r: PairedResult) -> dict[str, Any]:
    return {"n": r.n, "diff": None if math.isnan(r.diff) else r.diff, "lo": r.lo, "hi": r.hi,
            "p_value": r.p_value}


@dataclass
class FoldChoice:
    fold: int
    n: int
    single: str
    panel: tuple[str, ...]
    rule: str

    def to_dict(self) -> dict[str, Any]:
        return {"fold": self.fold, "n": self.n, "single": self.single, "panel": list(self.panel),
                "rule": self.rule}


@dataclass
class CrossValidated:
    folds: int
    single: Interval
    """Held-out accuracy of the single judge chosen on the other folds."""
    panel: Interval
    """Held-out accuracy of the panel (and rule) chosen on the other folds."""
    panel_vs_single: PairedResult
    choices: list[FoldChoice]

    def to_dict(self) -> dict[str, Any]:
        return {"folds": self.folds, "single": self.single.to_dict(), "panel": self.panel.to_dict(),
                "panel_vs_single": _paired(self.panel_vs_single),
                "choices": [c.to_dict() for c in self.choices]}


@dataclass
class PanelMeta:
    """Everything ``referee metaeval panel`` reports for one data set."""

    name: str
    n: int
    judges: list[JudgeFigure]
    best_single: str
    panels: list[PanelFigure]
    """Every panel under every in-sample rule, best first: **chosen on the items it is scored on**."""
    all_judges: PanelFigure
    """The panel of every judge, by majority."""
    cv: CrossValidated
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "n": self.n, "judges": [j.to_dict() for j in self.judges],
                "best_single": self.best_single, "all_judges": self.all_judges.to_dict(),
                "cross_validated": self.cv.to_dict(),
                "in_sample_panels": [p.to_dict() for p in self.panels],
                "in_sample_note": "ranked on the items they are scored on: the best row is optimistic",
                "notes": self.notes}


def _families(names: Sequence[str]) -> list[str]:
    seen: dict[str, int] = {}
    for n in names:
        fam = model_family(n)
        if fam:
            seen[fam] = seen.get(fam, 0) + 1
    return sorted(f for f, c in seen.items() if c > 1)


def _panels(k: int, max_size: int) -> list[tuple[int, ...]]:
    out = [c for size in range(2, min(k, max_size) + 1) for c in combinations(range(k), size)]
    if len(out) * len(RULES) > MAX_PANELS:
        raise UserError(f"{k} judges make {len(out)} panels of up to {max_size}: too many to score; "
                        "lower --max-size or choose fewer judges")
    return out


def panel_meta(data: PanelData, *, max_size: int = 5, folds: int = 5, top: int = 10,
               n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED) -> PanelMeta:
    """Each judge's accuracy, every panel (2 to ``max_size`` judges) under each in-sample rule, and the
    cross-validated choice of single judge and of panel (see the module text). ``top`` panels get an alpha
    interval (the bootstrap of alpha is the slow part); the others get its estimate."""
    if folds < 2:
        raise UserError("--folds must be at least 2")
    n = len(data.ids)
    if n < folds:
        raise UserError(f"{data.name}: {n} pairs cannot make {folds} folds")
    k = len(data.judges)
    votes = data.votes
    lists = data.vote_lists()
    label_list: list[str | None] = ["1" if x > 0 else "2" for x in data.labels]
    right = (votes == data.labels).astype(np.float64)  # nan (no vote) compares unequal: not right
    acc = right.mean(axis=1)
    judges = [JudgeFigure(name, model_family(name), int((~np.isnan(votes[j])).sum()),
                          proportion_ci(right[j], n_boot=n_boot, seed=seed)) for j, name in enumerate(data.judges)]
    best = int(np.argmax(acc))
    notes: list[str] = list(data.notes)
    unvoted = int(np.isnan(votes).sum())
    if unvoted:
        notes.append(f"{unvoted} (judge, pair) verdicts are missing in both orders: that judge has no vote "
                     "there and is left out of the panel's count")

    def figure(panel: tuple[int, ...], rule: str, correct: NDArray[np.float64]) -> PanelFigure:
        sub_votes = [lists[j] for j in panel]
        names = tuple(data.judges[j] for j in panel)
        return PanelFigure(
            names, rule, proportion_ci(correct, n_boot=n_boot, seed=seed),
            paired_bootstrap(correct - right[best], n_boot=n_boot, seed=seed),
            effective_votes(sub_votes, label_list), independent_majority([float(acc[j]) for j in panel]),
            shared_families=_families(names))

    combos = _panels(k, max_size)
    rows: list[tuple[float, tuple[int, ...], str, NDArray[np.float64]]] = []
    for c in combos:
        for rule in IN_SAMPLE_RULES:
            corr = _correct(data, _verdicts(data, c, rule))
            rows.append((float(corr.mean()), c, rule, corr))
    rows.sort(key=lambda r: (-r[0], len(r[1]), IN_SAMPLE_RULES.index(r[2]), r[1]))
    panels = [figure(c, rule, corr) for _, c, rule, corr in rows]
    for i, (p, (_, c, _, _)) in enumerate(zip(panels, rows, strict=True)):
        sub = [lists[j] for j in c]
        p.alpha = (krippendorff_alpha(sub, n_boot=n_boot, seed=seed) if i < top
                   else krippendorff_alpha(sub, n_boot=0, seed=seed))
    everyone = tuple(range(k))
    all_fig = figure(everyone, "majority", _correct(data, _verdicts(data, everyone, "majority")))
    all_fig.alpha = krippendorff_alpha(lists, n_boot=n_boot, seed=seed)

    cv = _cross_validate(data, combos, right, folds, n_boot, seed)
    return PanelMeta(data.name, n, judges, data.judges[best], panels, all_fig, cv, notes)


def _cross_validate(data: PanelData, combos: list[tuple[int, ...]], right: NDArray[np.float64], folds: int,
                    n_boot: int, seed: int) -> CrossValidated:
    n = len(data.ids)
    order = np.random.default_rng(seed).permutation(n)
    fold_of = np.empty(n, dtype=np.int64)
    fold_of[order] = np.arange(n) % folds
    fixed = {(c, rule): _correct(data, _verdicts(data, c, rule)) for c in combos for rule in IN_SAMPLE_RULES}
    single_out = np.empty(n)
    panel_out = np.empty(n)
    choices = []
    for f in range(folds):
        test, train = fold_of == f, fold_of != f
        s = int(np.argmax(right[:, train].mean(axis=1)))
        weights = log_odds_weights(right[:, train].mean(axis=1))
        best: tuple[float, int, int, tuple[int, ...], str, NDArray[np.float64]] | None = None
        for c in combos:
            for rule in RULES:
                corr = (_correct(data, _verdicts(data, c, rule, weights)) if rule == "weighted"
                        else fixed[(c, rule)])
                key = (float(corr[train].mean()), -len(c), -RULES.index(rule))
                if best is None or key > best[:3]:
                    best = (*key, c, rule, corr)
        assert best is not None
        single_out[test] = right[s, test]
        panel_out[test] = best[5][test]
        choices.append(FoldChoice(f, int(test.sum()), data.judges[s], tuple(data.judges[j] for j in best[3]),
                                  best[4]))
    return CrossValidated(folds, proportion_ci(single_out, n_boot=n_boot, seed=seed),
                          proportion_ci(panel_out, n_boot=n_boot, seed=seed),
                          paired_bootstrap(panel_out - single_out, n_boot=n_boot, seed=seed), choices)
