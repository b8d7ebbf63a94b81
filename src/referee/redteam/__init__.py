"""Red teaming: labelled adversarial cases (generator + seed cases and templates shipped as package data),
deterministic checks of the expected behaviour, and the red-team judge."""

from typing import Any

from ._generator import BEHAVIOURS, FAILURE_MODES, SURFACES, generate, load_seeds, load_templates, write_cases

# The checks and the run build on the evaluators, which import this package: they load on first use.
_CHECKS = ("REFUSAL_PATTERN", "RedteamExpectation", "RedteamJudge", "combine_redteam")
_RUN = ("RedteamRun", "merge_replies", "run_redteam", "run_redteam_async")

__all__ = [
    "BEHAVIOURS",
    "FAILURE_MODES",
    "REFUSAL_PATTERN",
    "RedteamExpectation",
    "RedteamJudge",
    "RedteamRun",
    "SURFACES",
    "combine_redteam",
    "generate",
    "load_seeds",
    "load_templates",
    "merge_replies",
    "run_redteam",
    "run_redteam_async",
    "write_cases",
]


def __getattr__(name: str) -> Any:
    if name in _CHECKS:
        from ..evaluators import _redteam as _checks

        return getattr(_checks, name)
    if name in _RUN:
        from ..run import _redteam as _run

        return getattr(_run, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
