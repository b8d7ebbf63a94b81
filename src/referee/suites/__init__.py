"""Suites: a YAML file describing cases, the evaluators applied to them, scoring and gates (``referee run``)."""

from .loader import EvalSpec, Problem, Suite, SuiteInvalid, check_suite, load_suite
from .model import Gates, JudgeDefaults, Scoring, SuiteFile

__all__ = [
    "EvalSpec", "Gates", "JudgeDefaults", "Problem", "Scoring", "Suite", "SuiteFile", "SuiteInvalid",
    "check_suite", "load_suite",
]
