"""Synthetic cases: generate test cases from a team's documents (or existing cases, or any source of documents)
and keep only the ones that pass gates a program checks (docs/synth.md).

Chunking (``_documents.py``), the plan of kinds and personas (``_plan.py``), generation (``_generate.py``), the
gates (``_gates.py``: duplicates, a strict verified quote, no answer in the input, unanswerable, the critic), the
rounds (``_run.py``), the coverage report (``_coverage.py``) and the dry run's estimate (``_estimate.py``).
"""

import sys as _sys
import types as _types
from typing import Any as _Any

from ._coverage import coverage_of, coverage_table, gate_lines
from ._documents import (
    MAX_DOCUMENT_BYTES,
    Chunk,
    Document,
    Redactor,
    Skipped,
    Splitter,
    html_text,
    load_documents,
    load_redactor,
    redact_pii,
)
from ._estimate import SynthEstimate, estimate_synth
from ._gates import (
    ALL_PAIRS_LIMIT,
    ANSWERABLE_SHARE,
    CRITIC_THRESHOLD,
    GATES,
    NEAR_DUPLICATE,
    DuplicateIndex,
)
from ._plan import BATCH_SIZE, DEFAULT_KINDS, KINDS, UNANSWERABLE_REFERENCE
from ._run import (
    MAX_ROUNDS,
    GenerationStore,
    SynthResult,
    documents_from_cases,
    documents_from_traces,
    rejected_path,
    synth,
    synth_async,
)

__all__ = [
    "ALL_PAIRS_LIMIT",
    "ANSWERABLE_SHARE",
    "BATCH_SIZE",
    "CRITIC_THRESHOLD",
    "Chunk",
    "DEFAULT_KINDS",
    "Document",
    "DuplicateIndex",
    "GATES",
    "GenerationStore",
    "KINDS",
    "MAX_DOCUMENT_BYTES",
    "MAX_ROUNDS",
    "NEAR_DUPLICATE",
    "Redactor",
    "Skipped",
    "Splitter",
    "SynthEstimate",
    "SynthResult",
    "UNANSWERABLE_REFERENCE",
    "coverage_of",
    "coverage_table",
    "documents_from_cases",
    "documents_from_traces",
    "estimate_synth",
    "gate_lines",
    "html_text",
    "load_documents",
    "load_redactor",
    "redact_pii",
    "rejected_path",
    "synth",
    "synth_async",
]


class _CallableModule(_types.ModuleType):
    """``referee.synth(...)`` calls :func:`synth` (the package and the function share the name)."""

    def __call__(self, *args: _Any, **kwargs: _Any) -> SynthResult:
        return synth(*args, **kwargs)


_sys.modules[__name__].__class__ = _CallableModule
