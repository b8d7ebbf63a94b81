"""Cases: what a run evaluates. ``Case`` (an id and its fields: input, output, reference, turns, ...),
``load_cases`` (JSONL, YAML, JSON lists, CSV, Parquet; errors name file, line and field) and ``cases_from``
(lists of dicts or strings, pandas and polars DataFrames). Template filling lives in ``_templates``."""

from ._case import Case, CaseSet, CasesLike, cases_from, load_cases
from ._templates import NoValidCases, Preflight, preflight, read_template, render_value, require_valid

__all__ = ["Case", "CaseSet", "CasesLike", "NoValidCases", "Preflight", "cases_from", "load_cases", "preflight", "read_template",
           "render_value", "require_valid"]
