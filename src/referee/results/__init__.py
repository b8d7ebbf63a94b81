"""Result rows (one schema for every evaluator), reading and writing them, and the run manifest.

Names load on first use (PEP 562): a run imports the models (and pydantic) while its first requests are in
flight, not before them (``runner/_session.py``)."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._files import file_sha256, manifest_path, text_sha256
    from ._io import LoadedResults, read_results, row_from_dict
    from ._manifest import EvalSetInfo, JudgeConfig, RunManifest, TemplateInfo, Totals
    from ._panel import PanelRecord, PanelVote, panel_of
    from ._schema import SCHEMA_VERSION, CriterionScore, JudgeInfo, ResultRow, Status, TargetInfo, Usage
    from ._writer import ResultWriter

_LAZY = {
    **dict.fromkeys(("file_sha256", "manifest_path", "text_sha256"), "._files"),
    **dict.fromkeys(("LoadedResults", "read_results", "row_from_dict"), "._io"),
    "ResultWriter": "._writer",
    **dict.fromkeys(("PanelRecord", "PanelVote", "panel_of"), "._panel"),
    **dict.fromkeys(("EvalSetInfo", "JudgeConfig", "RunManifest", "TemplateInfo", "Totals"), "._manifest"),
    **dict.fromkeys(("SCHEMA_VERSION", "CriterionScore", "JudgeInfo", "ResultRow", "Status", "TargetInfo", "Usage"),
                    "._schema"),
}


def __getattr__(name: str) -> Any:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(where, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "CriterionScore",
    "EvalSetInfo",
    "JudgeConfig",
    "JudgeInfo",
    "LoadedResults",
    "PanelRecord",
    "PanelVote",
    "ResultRow",
    "ResultWriter",
    "RunManifest",
    "SCHEMA_VERSION",
    "Status",
    "TargetInfo",
    "TemplateInfo",
    "Totals",
    "Usage",
    "file_sha256",
    "manifest_path",
    "panel_of",
    "read_results",
    "row_from_dict",
    "text_sha256",
]
