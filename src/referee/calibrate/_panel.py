"""Is a run's panel worth its cost? From the rows' panel records (:func:`referee.results.panel_of`): how much
the judges agree (Krippendorff's alpha with a bootstrap interval, Cohen's kappa per pair), how many
independent votes they are worth (from their error correlation with human labels where given, else from
their agreement; :mod:`referee.stats._panel`), a warning when judges share a model family, and, with labels,
the panel's agreement with the humans against each judge's, paired item by item with intervals.

Votes are categorical: ``pass``/``fail`` (pairwise: ``a``/``b``/``tie``). A human label is a vote too: a
pairwise label ``a``/``b``/``tie`` as it is, a number ``pass`` at or above ``label_threshold`` (0.5: 0/1
labels and 0-1 scores alike), else ``fail``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..providers._families import model_family
from ..results._panel import PanelRecord, panel_of
from ..results._schema import ResultRow
from ..stats._bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED, Interval, bootstrap_ci
from ..stats._paired import PairedResult, paired_bootstrap
from ..stats._panel import EffectiveVotes, PairKappa, effective_votes, krippendorff_alpha, pairwise_kappa


@dataclass
class MemberVsHuman:
    judge: str
    agreement: Interval
    """Share of the labelled cases (that this judge graded) on which its vote is the human's."""
    panel_minus_judge: PairedResult
    """Paired bootstrap of (panel agrees) - (judge agrees), over the labelled cases both graded."""

    def to_dict(self) -> dict[str, Any]:
        p = self.panel_minus_judge
        return {"judge": self.judge, "agreement": self.agreement.to_dict(),
                "panel_minus_judge": {"n": p.n, "diff": None if math.isnan(p.diff) else p.diff, "lo": p.lo,
                                      "hi": p.hi, "p_value": p.p_value}}


@dataclass
class PanelAgreement:
    """The panel figures of one evaluator over a run's rows."""

    label: str
    judges: list[str]
    cases: int
    """Rows with a panel record for this evaluator."""
    split: int
    """Cases where the graded judges did not all vote alike."""
    alpha: Interval
    kappas: list[PairKappa]
    effective: EffectiveVotes
    shared_families: dict[str, list[str]]
    """Model family -> the judges of it, where two or more share one."""
    cost_usd: float | None
    """What the panel cost over these cases (every judge)."""
    labelled: int = 0
    panel_vs_human: Interval | None = None
    members_vs_human: list[MemberVsHuman] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"evaluator": self.label, "judges": self.judges, "cases": self.cases, "split": self.split,
                "alpha": self.alpha.to_dict(), "kappas": [k.to_dict() for k in self.kappas],
                "effective_votes": self.effective.to_dict(), "shared_families": self.shared_families,
                "cost_usd": self.cost_usd, "labelled": self.labelled,
                "panel_vs_human": None if self.panel_vs_human is None else self.panel_vs_human.to_dict(),
                "members_vs_human": [m.to_dict() for m in self.members_vs_human], "warnings": self.warnings}


def human_vote(value: Any, label_threshold: float = 0.5) -> str | None:
    """A human label as a vote (module text); None for a value that is neither a winner nor a finite number."""
    if isinstance(value, str):
        v = value.strip().lower()
        return v if v in ("a", "b", "tie", "pass", "fail") else None
    if isinstance(value, bool):
        return "pass" if value else "fail"
    if isinstance(value, int | float) and math.isfinite(value):
        return "pass" if value >= label_threshold else "fail"
    return None


def _records(rows: Sequence[ResultRow]) -> dict[str, list[tuple[str, PanelRecord, ResultRow]]]:
    out: dict[str, list[tuple[str, PanelRecord, ResultRow]]] = {}
    for r in rows:
        own = panel_of(r)
        if own is not None and r.evaluator != "suite":
            out.setdefault(r.evaluator, []).append((r.id, own, r))
            continue
        checks = (r.details or {}).get("checks")
        if isinstance(checks, Mapping):
            for label in checks:
                rec = panel_of(r, label)
                if rec is not None:
                    out.setdefault(str(label), []).append((r.id, rec, r))
    return out


def _verdict(rec: PanelRecord, row: ResultRow, label: str) -> str | None:
    """The panel's vote on the case: its winner or pass/fail (None when the panel gave none)."""
    if row.evaluator == "suite":
        crit = next((c for c in row.criteria if c.id == label), None)
        if crit is None or crit.status != "scored":
            return None
        checks = (row.details or {}).get("checks", {})
        winner = checks.get(label, {}).get("winner") if isinstance(checks, Mapping) else None
        if winner is not None:
            return str(winner)
        return None if crit.passed is None else ("pass" if crit.passed else "fail")
    if row.status != "scored":
        return None
    if row.winner is not None:
        return row.winner
    return None if row.passed is None else ("pass" if row.passed else "fail")


def panel_agreement(rows: Sequence[ResultRow], labels: Mapping[str, Any] | None = None, *,
                    label_threshold: float = 0.5, n_boot: int = DEFAULT_N_BOOT,
                    seed: int = DEFAULT_SEED) -> list[PanelAgreement]:
    """One :class:`PanelAgreement` per panel-judged evaluator in ``rows`` (empty when no panel judged).
    ``labels``: human labels by case id (numbers or winners), for some cases or all."""
    out = []
    for label, recs in _records(rows).items():
        judges = [m.judge for m in recs[0][1].members]
        if any([m.judge for m in rec.members] != judges for _, rec, _ in recs):
            out.append(PanelAgreement(label, judges, len(recs), 0, Interval(None, None, None, 0), [],
                                      EffectiveVotes(len(judges), None, None, "agreement", 0), {}, None,
                                      warnings=["the rows were judged by different panels: no agreement figure"]))
            continue
        votes = [[rec.members[j].vote for _, rec, _ in recs] for j in range(len(judges))]
        split = sum(len({v for v in col if v is not None}) > 1 for col in zip(*votes, strict=True))
        human: list[str | None] = [None] * len(recs)
        if labels:
            human = [human_vote(labels.get(cid), label_threshold) if cid in labels else None
                     for cid, _, _ in recs]
        have_labels = any(h is not None for h in human)
        fams: dict[str, list[str]] = {}
        for jn in judges:
            f = model_family(jn)
            if f:
                fams.setdefault(f, []).append(jn)
        shared = {f: js for f, js in fams.items() if len(js) > 1}
        costs = [m.cost_usd for _, rec, _ in recs for m in rec.members if m.cost_usd is not None]
        rep = PanelAgreement(
            label, judges, len(recs), split, krippendorff_alpha(votes, n_boot=n_boot, seed=seed),
            pairwise_kappa(votes, judges), effective_votes(votes, human if have_labels else None), shared,
            round(sum(costs), 8) if costs else None)
        for f, js in shared.items():
            rep.warnings.append(f"judges {', '.join(js)} are all {f} models: their errors tend to correlate, so the "
                                "panel is worth fewer independent votes than it has judges")
        if len(set(judges)) < len(judges):
            rep.warnings.append("the same judge is listed more than once: its copies add cost, not votes")
        if have_labels:
            verdicts = [_verdict(rec, row, label) for _, rec, row in recs]
            idx = [i for i, h in enumerate(human) if h is not None]
            rep.labelled = len(idx)
            if len(idx) < len(recs):
                rep.warnings.append(f"{len(recs) - len(idx)} of {len(recs)} cases have no human label: the "
                                    f"comparison with humans uses the other {len(idx)}")
            panel_ok = np.array([verdicts[i] == human[i] for i in idx], dtype=np.float64)
            rep.panel_vs_human = bootstrap_ci(panel_ok, n_boot=n_boot, seed=seed)
            for j, jname in enumerate(judges):
                both = [i for i in idx if votes[j][i] is not None]
                mine = np.array([votes[j][i] == human[i] for i in both], dtype=np.float64)
                theirs = np.array([verdicts[i] == human[i] for i in both], dtype=np.float64)
                rep.members_vs_human.append(MemberVsHuman(
                    jname, bootstrap_ci(mine, n_boot=n_boot, seed=seed),
                    paired_bootstrap(theirs - mine, n_boot=n_boot, seed=seed)))
        out.append(rep)
    return out
