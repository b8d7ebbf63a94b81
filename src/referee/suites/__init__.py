"""Suites: a YAML file describing cases, the evaluators applied to them, scoring and gates (``referee run``)."""

from typing import Any

from ._estimate import RunEstimate, estimate_run
from ._loader import EvalSpec, Problem, Suite, SuiteInvalid, check_suite, load_suite
from ._model import Gates, JudgeDefaults, Scoring, SuiteFile

__all__ = [
    "EvalSpec", "Gates", "JudgeDefaults", "Problem", "RunEstimate", "Scoring", "Suite", "SuiteFile",
    "SuiteInvalid", "check_suite", "estimate_run", "load_suite", "run_suite",
]


def __getattr__(name: str) -> Any:
    # The runner imports the evaluators and the run machinery: loaded when a suite is run, not when one is read.
    if name == "run_suite":
        from ._runner import run_suite

        return run_suite
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
