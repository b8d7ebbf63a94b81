"""Helpers shared by the agent commands (trajectory, conversation, redteam)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .. import EvalResult


def report_outcome(result: EvalResult, out: str | Path, *, by_category: bool = False, judged: bool = False) -> None:
    """The rows that did not pass, per category (with ``by_category``: through the one aggregator, by the rows'
    own verdict, else score >= 0.7), and the totals line led by the counts, on stderr."""
    from ..aggregate import ScoreOptions, summarize, tally
    from ..reports import render_tally

    rows = result.rows
    groups = summarize(list(rows), ScoreOptions(pass_rule="evaluator", n_boot=200)).categories \
        if by_category and rows else []
    render_tally(tally(rows), result.manifest.totals, out, categories=groups, judged=judged)
