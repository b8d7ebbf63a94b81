"""Aggregation of results files: the engine behind ``referee score`` (columns in, a ``Summary`` out)."""

from importlib import import_module as _import_module
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from ._format import printable

if _TYPE_CHECKING:
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

# numpy and the results models load with the first name that needs them: a command that only prints case text
# safely (``referee runs list``) imports none of it.
_LAZY = {**{n: "._load" for n in ("PASS_RULES", "ResultsTable", "load_table", "load_tables", "normalise_category")},
         **{n: "._summary" for n in ("CaseLine", "Comparison", "Group", "PairedTest", "Power", "ScoreOptions",
                                     "Summary", "all_cases", "score_distribution", "summarize")},
         "Tally": "._tally", "tally": "._tally"}


def __getattr__(name: str) -> _Any:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_import_module(where, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:  # the lazy names too, as the results face lists them (completion in a notebook)
    return sorted(set(globals()) | set(__all__))


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
