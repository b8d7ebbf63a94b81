"""Self-grading: the judge is the model that produced the judged output (a known source of inflated scores).

The agent-eval seed's rule is "never let a judge grade its own output unflagged". Every judging command records
the system under test (``--system-model``, else each case's ``metadata.system_model``), flags the rows a judge
graded for its own model (``self_grading``) and every report says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._schema import ResultRow

FLAG = "self_grading"
SYSTEM_MODEL_KEYS = ("system_model", "system_under_test")
# Pairwise cases compare two systems: either one may be the judge's own model.
PAIRWISE_MODEL_KEYS = ("system_model_a", "system_model_b")


def _norm(model: str) -> str:
    # "openai/gpt-4o" and "GPT-4o " are the same model; a provider prefix says where, not what.
    return model.strip().lower().rsplit("/", 1)[-1]


def same_model(judge_model: str | None, system_model: str | None) -> bool:
    """Whether the judge is the model that produced the output."""
    if not judge_model or not system_model:
        return False
    return _norm(judge_model) == _norm(str(system_model))


def system_models(metadata: Mapping[str, Any] | None, default: str | None = None) -> list[str]:
    """The models that produced a case's outputs: its metadata's, else ``default`` (``--system-model``)."""
    md = metadata or {}
    found = [str(md[k]) for k in (*SYSTEM_MODEL_KEYS, *PAIRWISE_MODEL_KEYS)
             if isinstance(md.get(k), str | int | float) and not isinstance(md.get(k), bool) and str(md[k]).strip()]
    if not found and default:
        found = [default]
    return list(dict.fromkeys(found))


def mark(row: ResultRow, *, default_system_model: str | None = None, judge_model: str | None = None) -> ResultRow:
    """``row`` with the ``self_grading`` flag and an explanation when its judge graded its own model's output.

    The judge is the row's own (``row.judge.model``), else ``judge_model`` (the run's). Idempotent."""
    if FLAG in row.flags or (not row.metadata and not default_system_model):
        return row  # already flagged, or no system model named (most runs: checked on every row, so first)
    judge = (row.judge.model if row.judge is not None and row.judge.model else None) or judge_model
    if not judge:
        return row
    same = [m for m in system_models(row.metadata, default_system_model) if same_model(judge, m)]
    if not same:
        return row
    why = (f"the judge model ({judge}) is the system under test ({same[0]}): scores may be inflated; "
           "judge with another model")
    return row.model_copy(update={"flags": [*row.flags, FLAG], "details": {**row.details, FLAG: why}})


def count(rows: Iterable[ResultRow]) -> int:
    return sum(FLAG in r.flags for r in rows)


def caveat(n: int, total: int, judge_model: str | None = None) -> str:
    """The one line every command prints when rows are self-graded."""
    who = f" ({judge_model})" if judge_model else ""
    return (f"caveat: {n} of {total} row(s) were graded by the model that produced them{who}: self-grading "
            "inflates scores (flag 'self_grading'); judge with a different model")
