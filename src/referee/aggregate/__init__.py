"""Aggregation of results files: the engine behind ``referee score`` (columns in, a ``Summary`` out)."""

from ._format import printable
from ._load import PASS_RULES, ResultsTable, load_table, load_tables, normalise_category
from ._summary import (
    CaseLine,
    Comparison,
    Group,
    PairedTest,
    Power,
    ScoreOptions,
    Summary,
    all_cases,
    score_distribution,
    summarize,
)
from ._tally import Tally, tally

__all__ = [
    "CaseLine",
    "Comparison",
    "Group",
    "PASS_RULES",
    "PairedTest",
    "Power",
    "ResultsTable",
    "ScoreOptions",
    "Summary",
    "Tally",
    "all_cases",
    "load_table",
    "load_tables",
    "normalise_category",
    "printable",
    "score_distribution",
    "summarize",
    "tally",
]
