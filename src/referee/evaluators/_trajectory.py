"""Deterministic trajectory checks: which tools, in what order, with which arguments, within what budget,
without loops or ignored errors, and whether the goal was reached; and ``trajectory``, their combination.

Expectations come from the check's options (the same for every case in a suite file) or, when an option is
not given, from the case's ``expect`` block, so one suite serves cases with different expected tools::

    {"id": "r1", "input": "...", "trajectory": [...], "final_output": "...",
     "expect": {"tools_used": ["lookup_invoice"], "tools_not_used": ["delete_account"],
                "sequence": ["lookup_invoice", "issue_refund"], "sequence_mode": "in_order",
                "args": [{"tool": "issue_refund", "match": "subset", "args": {"invoice_id": "INV-1"}}],
                "max_steps": 6, "goal": {"contains": ["refund"], "state": {"refund_issued": true}}}}

The checks live in ``_trajectory_checks.py``, the combination in ``_trajectory_combine.py``; this module is
their public face.
"""

from ._trajectory_checks import (
    DEFAULT_ACK,
    GoalReached,
    NoRepeatedCalls,
    ToolArgs,
    ToolErrorsHandled,
    ToolNotUsed,
    ToolSequence,
    ToolUsed,
    TrajectoryBudget,
    expectations,
    subset_match,
)
from ._trajectory_combine import CRITICAL_CHECKS, PROCESS_CHECKS, TrajectoryCheck, check_row, combine

__all__ = [
    "CRITICAL_CHECKS",
    "DEFAULT_ACK",
    "PROCESS_CHECKS",
    "GoalReached",
    "NoRepeatedCalls",
    "ToolArgs",
    "ToolErrorsHandled",
    "ToolNotUsed",
    "ToolSequence",
    "ToolUsed",
    "TrajectoryBudget",
    "TrajectoryCheck",
    "check_row",
    "combine",
    "expectations",
    "subset_match",
]
