"""Aggregation of results files: the engine behind ``referee score`` (columns in, a ``Summary`` out)."""

from ._load import ResultsTable, load_table, normalise_category
from ._summary import CaseLine, Comparison, Group, PairedTest, Power, ScoreOptions, Summary, summarize
from ._tally import Tally, tally

__all__ = [
    "CaseLine",
    "Comparison",
    "Group",
    "PairedTest",
    "Power",
    "ResultsTable",
    "ScoreOptions",
    "Summary",
    "Tally",
    "load_table",
    "normalise_category",
    "summarize",
    "tally",
]
