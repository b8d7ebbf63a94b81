"""Escalation with a guarantee: keep a judge's verdict only where its confidence is high enough that the kept
verdicts agree with humans at a level the user sets, with a confidence the user sets; escalate the rest (to a
stronger judge, or to a human).

**Choosing the threshold** (:func:`choose_threshold`), as Trust or Escalate (Jung et al., ICLR 2025) does, by
fixed-sequence testing on a calibration split with human labels: the candidate thresholds are the
confidences that keep 5%, 10%, ..., 100% of the calibration cases (but at least the fewest that could pass
if every one agreed, ``log(1 - confidence) / log(target)``), from the highest down: a grid chosen from the
confidences alone, never the labels, so the order of the tests is fixed given them, and coarse, so one
unlucky small step does not end the walk early. At each, the verdicts kept (confidence at or above it) are tested
against ``H0: P(agree with the human | kept) < target`` with the exact binomial test, ``p = P(Bin(n, target) >=
k)`` for ``k`` agreements of ``n`` kept; the walk stops at the first threshold whose ``p`` exceeds ``1 -
confidence``, and the last one that passed is chosen. Testing in a fixed order needs no multiplicity
correction, so with probability at least ``confidence`` (over the calibration sample) the chosen threshold's
kept verdicts meet ``target`` on new cases from the same distribution. The same test in interval form: the
one-sided Clopper-Pearson lower bound of the kept agreement is at least ``target``. When even the most
confident verdicts cannot pass, no threshold is chosen: nothing is kept automatically.

**Confidence** of a case (:func:`case_confidence`): ``agreement``, the share of a panel's graded judges that
voted with its verdict; or ``margin``, how far one judge's score is from the pass mark (``(s - t) / (1 - t)``
above it, ``(t - s) / t`` below). A case without a verdict has confidence 0 and is never kept.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..errors import UserError
from ..results._panel import panel_of
from ..results._schema import ResultRow
from ..stats._panel import binomial_lower_bound, clopper_pearson
from ._panel import _verdict, human_vote

Basis = Literal["agreement", "margin"]
GRID = 20
"""Candidate thresholds: the confidences that keep 5%, 10%, ..., 100% of the calibration cases."""


@dataclass(frozen=True)
class Step:
    threshold: float
    kept: int
    agree: int
    p_value: float


@dataclass
class Threshold:
    """The threshold chosen on a calibration split (None: no threshold meets the target)."""

    target: float
    confidence: float
    threshold: float | None
    n: int
    kept: int = 0
    agree: int = 0
    lower_bound: float | None = None
    """One-sided Clopper-Pearson lower bound (at ``confidence``) of the kept verdicts' agreement."""
    steps: list[Step] = field(default_factory=list)

    @property
    def met(self) -> bool:
        return self.threshold is not None

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "confidence": self.confidence, "threshold": self.threshold, "n": self.n,
                "kept": self.kept, "agree": self.agree, "lower_bound": self.lower_bound, "met": self.met,
                "steps": [s.__dict__ for s in self.steps]}


def _check_level(name: str, v: float) -> None:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or not 0 < v < 1:
        raise UserError(f"{name} must be a number strictly between 0 and 1, got {v!r}")


def min_kept(target: float, confidence: float) -> int:
    """The fewest kept verdicts that can show ``target`` agreement at ``confidence`` (all of them agreeing)."""
    _check_level("the target agreement", target)
    _check_level("the confidence", confidence)
    return math.ceil(math.log(1 - confidence) / math.log(target))


def choose_threshold(confidences: Sequence[float], agrees: Sequence[bool], *, target: float,
                     confidence: float = 0.9) -> Threshold:
    """The lowest confidence threshold whose kept verdicts meet ``target`` agreement with probability
    ``confidence`` (module text); ``threshold`` None when none does."""
    _check_level("the target agreement", target)
    _check_level("the confidence", confidence)
    if len(confidences) != len(agrees):
        raise ValueError("one agreement flag per confidence")
    from scipy.stats import binom

    c = np.asarray(confidences, dtype=np.float64)
    if not np.all(np.isfinite(c)):
        raise UserError("confidences must be finite numbers")
    a = np.asarray(agrees, dtype=bool)
    out = Threshold(target, confidence, None, int(c.size))
    fewest = min_kept(target, confidence)  # fewer cannot pass even when all agree (target^n > 1 - confidence)
    desc = np.sort(c)[::-1]
    grid = sorted({float(desc[min(c.size, max(fewest, math.ceil(q * c.size))) - 1])
                   for q in np.arange(1, GRID + 1) / GRID} if c.size >= fewest else set(), reverse=True)
    for t in grid:
        if t <= 0:
            break  # a case without a verdict (confidence 0) is never kept
        kept = c >= t
        n, k = int(kept.sum()), int(a[kept].sum())
        p = float(binom.sf(k - 1, n, target))  # P(X >= k) under agreement exactly at the target
        out.steps.append(Step(float(t), n, k, p))
        if p > 1 - confidence:
            break
        out.threshold, out.kept, out.agree = float(t), n, k
    if out.threshold is not None:
        out.lower_bound = binomial_lower_bound(out.agree, out.kept, confidence)
    return out


def case_confidence(row: ResultRow, basis: Basis = "agreement", *, pass_mark: float = 0.7,
                    label: str | None = None) -> float:
    """How sure the judging of ``row`` is (module text); 0 when it gave no verdict."""
    if basis == "agreement":
        rec = panel_of(row, label)
        if rec is None:
            raise UserError(f"row {row.id}: no panel record, so no panel agreement (use the margin confidence)")
        return 0.0 if rec.agreement is None else float(rec.agreement)
    if row.status != "scored" or row.score is None:
        return 0.0
    s, t = float(row.score), pass_mark
    return (s - t) / (1 - t) if s >= t else (t - s) / t


@dataclass
class EscalationReport:
    """A threshold chosen on a calibration split of the labelled cases and checked on the held-out rest."""

    basis: Basis
    choice: Threshold
    held_out: int
    held_out_kept: int = 0
    held_out_agreement: tuple[float, float, float] | None = None
    """(estimate, lo, hi): the kept held-out verdicts' agreement with the humans, exact 95% interval."""
    coverage: float = 0.0
    """Share of all the run's cases whose verdict is kept at the threshold."""
    cases: int = 0
    escalated: list[str] = field(default_factory=list)
    """Ids of the run's cases below the threshold: for a stronger judge or a human."""
    cost_usd: float | None = None
    cost_per_kept: float | None = None
    """The run's judge cost divided by the verdicts kept."""

    def to_dict(self) -> dict[str, Any]:
        ha = self.held_out_agreement
        return {"basis": self.basis, "choice": self.choice.to_dict(), "held_out": self.held_out,
                "held_out_kept": self.held_out_kept,
                "held_out_agreement": None if ha is None else {"estimate": ha[0], "lo": ha[1], "hi": ha[2]},
                "coverage": self.coverage, "cases": self.cases, "escalated": self.escalated,
                "cost_usd": self.cost_usd, "cost_per_kept": self.cost_per_kept}


def escalation_report(rows: Sequence[ResultRow], labels: Mapping[str, Any], *, target: float,
                      confidence: float = 0.9, basis: Basis = "agreement", holdout: float = 0.5,
                      pass_mark: float = 0.7, label_threshold: float = 0.5, seed: int = 12345,
                      label: str | None = None) -> EscalationReport:
    """Split the labelled cases of ``rows`` (seeded) into calibration and held-out parts (``holdout`` of them
    held out), choose the threshold on the first, and report on the second and on the whole run: coverage,
    held-out agreement of the kept verdicts with its interval, cost per kept verdict, the escalated ids."""
    if not 0 <= holdout < 1:
        raise UserError(f"holdout must be in [0, 1), got {holdout!r}")
    conf = {r.id: case_confidence(r, basis, pass_mark=pass_mark, label=label) for r in rows}
    verdict: dict[str, str | None] = {}
    for r in rows:
        rec = panel_of(r, label)
        if rec is not None:
            verdict[r.id] = _verdict(rec, r, label or r.evaluator)
        elif r.status == "scored":
            verdict[r.id] = r.winner or (None if r.passed is None else ("pass" if r.passed else "fail"))
        else:
            verdict[r.id] = None
    labelled = sorted(i for i in conf if i in labels and human_vote(labels[i], label_threshold) is not None)
    if not labelled:
        raise UserError("no case of the run has a human label: escalation needs a labelled calibration split")
    rng = np.random.default_rng(seed)
    order = [labelled[i] for i in rng.permutation(len(labelled))]
    n_hold = int(round(len(order) * holdout))
    calib, held = order[n_hold:], order[:n_hold]

    def agrees(i: str) -> bool:
        return verdict[i] is not None and verdict[i] == human_vote(labels[i], label_threshold)

    choice = choose_threshold([conf[i] for i in calib], [agrees(i) for i in calib], target=target,
                              confidence=confidence)
    rep = EscalationReport(basis, choice, len(held), cases=len(rows))
    t = choice.threshold
    kept_ids = set() if t is None else {i for i, c in conf.items() if c >= t and verdict[i] is not None}
    rep.escalated = sorted(set(conf) - kept_ids)
    rep.coverage = len(kept_ids) / len(rows) if rows else 0.0
    kept_held = [i for i in held if i in kept_ids]
    rep.held_out_kept = len(kept_held)
    if kept_held:
        k = sum(agrees(i) for i in kept_held)
        lo, hi = clopper_pearson(k, len(kept_held), 0.95)
        rep.held_out_agreement = (k / len(kept_held), lo, hi)
    costs = [r.cost_usd for r in rows if r.cost_usd is not None]
    rep.cost_usd = round(sum(costs), 8) if costs else None
    if rep.cost_usd is not None and kept_ids:
        rep.cost_per_kept = rep.cost_usd / len(kept_ids)
    return rep
