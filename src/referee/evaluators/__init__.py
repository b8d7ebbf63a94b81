"""Evaluators: everything that turns a case into result rows (judges, checks, pairwise, trajectories).

The one contract (:mod:`.base`) is re-exported here; each judge and check lives in its own module
(``checks/``, ``rubric.py``, ``pairwise.py``, ...) and is imported when used.
"""

from .base import (
    CheckResult,
    Evaluator,
    JudgeSettings,
    LLMEvaluator,
    build,
    function_evaluator,
    register,
    registry,
)

__all__ = [
    "CheckResult", "Evaluator", "JudgeSettings", "LLMEvaluator", "build", "function_evaluator", "register",
    "registry",
]
