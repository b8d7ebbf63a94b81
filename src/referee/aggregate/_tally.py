"""Rows counted by verdict under a pass rule, read by the aggregator's own rules (the table that
:func:`~referee.aggregate.summarize` reads): the counts line of the agent commands and the example."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..results._schema import ResultRow
from ._load import SCORED, table_from_rows


@dataclass
class Tally:
    """Rows by verdict: scored rows that pass or fail under the pass rule, unscored rows, error rows."""

    passed: int = 0
    failed: int = 0
    unscored: int = 0
    errors: int = 0
    not_passed: list[ResultRow] = field(default_factory=list)
    """The failed, unscored and error rows, worst first: errors, then unscored, then by score."""

    @property
    def scored(self) -> int:
        return self.passed + self.failed


def tally(rows: Sequence[ResultRow], *, threshold: float = 0.7, pass_rule: str = "evaluator") -> Tally:
    """Count ``rows`` by verdict. ``pass_rule`` as in :class:`~referee.aggregate.ScoreOptions`: ``evaluator``
    (the row's own ``passed``, else ``score >= threshold``) or ``threshold``. A row repeating an earlier one
    (same id, repeat and turn) is left out, as the aggregator leaves it out."""
    if not rows:
        return Tally()
    table = table_from_rows(rows)
    index = np.arange(len(table), dtype=np.int64)
    scored = table.status[index] == SCORED
    passes = table.row_passes(index, threshold, pass_rule) & scored
    kept = [rows[i] for i in (table.line[index] - 1).tolist()]  # the table's rows, by their input position
    t = Tally()
    for row, ok in zip(kept, passes.tolist(), strict=True):
        if ok:
            t.passed += 1
            continue
        t.not_passed.append(row)
        if row.status == "scored":
            t.failed += 1
        elif row.status == "error":
            t.errors += 1
        else:
            t.unscored += 1
    t.not_passed.sort(key=lambda r: (r.status != "error", r.score if r.score is not None else -1.0))
    return t


@dataclass
class EvaluatorCounts:
    """One evaluator's results over a run: scored results (their scores), those with a verdict of their own and
    how many of those passed, and the unscored and error results."""

    scores: list[float] = field(default_factory=list)
    passed: int = 0
    with_verdict: int = 0
    other: int = 0
    """Unscored and error results."""


def evaluator_counts(rows: Sequence[ResultRow]) -> dict[str, EvaluatorCounts]:
    """Each evaluator's counts over ``rows``, in the order evaluators first appear: a suite's combined row
    (``evaluator: suite``) counts each of its criteria (one per evaluator), a one-evaluator row counts itself
    under its ``evaluator`` (its own criteria are that evaluator's parts, not evaluators)."""
    from ..results._check import SUITE_EVALUATOR

    out: dict[str, EvaluatorCounts] = {}

    def add(label: str, status: str, score: float | None, passed: bool | None) -> None:
        k = out.get(label)
        if k is None:
            k = out[label] = EvaluatorCounts()
        if status == "scored" and score is not None:
            k.scores.append(score)
            if passed is not None:
                k.with_verdict += 1
                k.passed += int(passed)
        else:
            k.other += 1

    for r in rows:
        if r.evaluator == SUITE_EVALUATOR:
            for c in r.criteria:
                add(c.id, c.status, c.score, c.passed)
        else:
            add(r.evaluator, r.status, r.score, r.passed)
    return out
