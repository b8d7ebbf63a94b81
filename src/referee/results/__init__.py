"""Result rows (one schema for every evaluator), reading and writing them, and the run manifest."""

from ._io import LoadedResults, ResultWriter, read_results, row_from_dict
from ._manifest import (
    EvalSetInfo,
    JudgeConfig,
    RunManifest,
    TemplateInfo,
    Totals,
    file_sha256,
    manifest_path,
    text_sha256,
)
from ._schema import SCHEMA_VERSION, CriterionScore, JudgeInfo, ResultRow, Status, TargetInfo, Usage

__all__ = [
    "CriterionScore",
    "EvalSetInfo",
    "JudgeConfig",
    "JudgeInfo",
    "LoadedResults",
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
    "read_results",
    "row_from_dict",
    "text_sha256",
]
