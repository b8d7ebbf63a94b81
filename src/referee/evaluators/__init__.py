"""Evaluators: everything that turns a case into result rows (judges, checks, pairwise, trajectories).

The one contract (:mod:`._base`) is re-exported here; each judge and check lives in its own private module
(``checks/``, ``_rubric.py``, ``_pairwise.py``, ...) and is imported when used: the names below that come from
those modules load on first use.
"""

from typing import TYPE_CHECKING, Any

from ._base import (
    CheckResult,
    Evaluator,
    JudgeSettings,
    LLMEvaluator,
    register,
    registry,
)
from ._functions import function_evaluator

if TYPE_CHECKING:  # the lazy names below, typed for type checkers and editors
    from ._conversation import CONVERSATION_MODES
    from ._evidence import describe_ungrounded
    from ._gold import threshold_warning
    from ._gold_dataset import discover_gold_cases, gold_results_json, single_gold_case
    from ._pairwise import RECONCILE_MODES, PairwiseJudge, Reconcile, parse_pairwise_reply
    from ._plugins import build
    from ._reply import JudgeOutcome, ReplyInvalid, ask_judge
    from ._tool_calls import ToolCalls, match_tool_calls
    from ._trajectory import ToolUsed, TrajectoryCheck, combine

_LAZY = {
    "CONVERSATION_MODES": "._conversation",
    **dict.fromkeys(("RECONCILE_MODES", "Reconcile"), "._pairwise"),
    "describe_ungrounded": "._evidence",
    "threshold_warning": "._gold",
    **dict.fromkeys(("discover_gold_cases", "gold_results_json", "single_gold_case"), "._gold_dataset"),
    "build": "._plugins",  # its option models need pydantic: loaded when a suite is built, not on import
    **dict.fromkeys(("JudgeOutcome", "ReplyInvalid", "ask_judge"), "._reply"),
    **dict.fromkeys(("PairwiseJudge", "parse_pairwise_reply"), "._pairwise"),
    **dict.fromkeys(("ToolUsed", "TrajectoryCheck", "combine"), "._trajectory"),
    **dict.fromkeys(("ToolCalls", "match_tool_calls"), "._tool_calls"),
}

__all__ = [
    "CONVERSATION_MODES",
    "CheckResult",
    "Evaluator",
    "JudgeOutcome",
    "JudgeSettings",
    "LLMEvaluator",
    "PairwiseJudge",
    "RECONCILE_MODES",
    "Reconcile",
    "ReplyInvalid",
    "ToolCalls",
    "ToolUsed",
    "TrajectoryCheck",
    "ask_judge",
    "build",
    "combine",
    "describe_ungrounded",
    "discover_gold_cases",
    "function_evaluator",
    "gold_results_json",
    "match_tool_calls",
    "parse_pairwise_reply",
    "register",
    "registry",
    "single_gold_case",
    "threshold_warning",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
