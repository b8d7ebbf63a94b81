"""Helpers shared by the agent commands (trajectory, conversation, redteam)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..results._schema import ResultRow


def report_outcome(rows: Sequence[ResultRow], out: str | Path, *, by_category: bool = False) -> None:
    """The rows that did not pass, per category (with ``by_category``: through the one aggregator, by the rows'
    own verdict, else score >= 0.7) and the counts, on stderr."""
    from ..aggregate import ScoreOptions, summarize, tally
    from ..reports._agents import render_tally

    groups = summarize(list(rows), ScoreOptions(pass_rule="evaluator", n_boot=200)).categories \
        if by_category and rows else []
    render_tally(tally(rows), out, categories=groups)
