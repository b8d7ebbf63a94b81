"""Cases: what a run evaluates. ``Case`` (an id and its fields: input, output, reference, contexts, turns, ...),
``load_cases`` (JSONL, YAML, JSON lists, CSV, Parquet; errors name file, line and field) and ``cases_from``
(lists of dicts or strings, pandas and polars DataFrames); ``Chunk`` (one retrieved context chunk); ``from_ragas``
and ``from_deepeval`` (other tools' RAG evaluation files as cases). Template filling lives in ``_templates``."""

from ._case import Case, CaseSet, CasesLike, cases_from, load_cases
from ._contexts import Chunk
from ._rag_import import RAG_FORMATS, from_deepeval, from_ragas, import_rag_cases, write_cases
from ._templates import NoValidCases, Preflight, preflight, read_template, render_value, require_valid

__all__ = ["Case", "CaseSet", "CasesLike", "Chunk", "NoValidCases", "Preflight", "RAG_FORMATS", "cases_from",
           "from_deepeval", "from_ragas", "import_rag_cases", "load_cases", "preflight", "read_template",
           "render_value", "require_valid", "write_cases"]
