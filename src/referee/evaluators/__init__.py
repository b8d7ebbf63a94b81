"""Evaluators: everything that turns a case into result rows (judges, checks, pairwise, trajectories).

The one contract (:mod:`._base`) is re-exported here; each judge and check lives in its own private module
(``checks/``, ``_rubric.py``, ``_pairwise.py``, ...) and is imported when used: the names below that come from
those modules load on first use.
"""

from typing import Any

from ._base import (
    CheckResult,
    Evaluator,
    JudgeSettings,
    LLMEvaluator,
    function_evaluator,
    register,
    registry,
)

_LAZY = {
    "build": "._options",  # its option models need pydantic: loaded when a suite is built, not on import
    **dict.fromkeys(("JudgeOutcome", "ReplyInvalid", "ask_judge"), "._reply"),
    **dict.fromkeys(("PairwiseJudge", "parse_pairwise_reply"), "._pairwise"),
    **dict.fromkeys(("ToolUsed", "TrajectoryCheck", "combine"), "._trajectory"),
}

__all__ = [
    "CheckResult", "Evaluator", "JudgeOutcome", "JudgeSettings", "LLMEvaluator", "PairwiseJudge", "ReplyInvalid",
    "ToolUsed", "TrajectoryCheck", "ask_judge", "build", "combine", "function_evaluator", "parse_pairwise_reply",
    "register", "registry",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
