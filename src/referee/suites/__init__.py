"""Suites: a YAML file describing cases, the evaluators applied to them, scoring and gates (``referee run``)."""

from .._util._moved import forward
from ._entries import module_findable
from ._gating import apply_gates, evaluator_table, gate_summary, summary_exit_code
from ._loader import EvalSpec, Problem, Suite, SuiteInvalid, check_suite, load_suite
from ._model import Gates, JudgeDefaults, PanelJudge, PanelOptions, Scoring, SuiteFile
from ._panel import panel_members, with_panel

__all__ = [
    "EvalSpec", "Gates", "JudgeDefaults", "PanelJudge", "PanelOptions", "Problem", "RunEstimate", "Scoring", "Suite",
    "SuiteFile", "SuiteInvalid", "apply_gates", "check_suite", "estimate_run", "evaluator_table", "gate_summary",
    "load_suite", "module_findable", "panel_members", "run_suite", "summary_exit_code", "with_panel",
]


# Running a suite moved to referee.run (above this package); the old names stay importable from here for
# one release, resolved by name on first use.
__getattr__ = forward(__name__, {"run_suite": "referee.run._suite", "RunEstimate": "referee.run._estimate",
                                 "estimate_run": "referee.run._estimate"})
