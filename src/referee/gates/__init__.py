"""Gates: CI verdicts over a summary (pass-rate floors, regressions against a baseline, cost, latency,
unscored share). ``GateConfig`` -> ``evaluate_gates(summary, config)`` -> ``GateResult`` per gate, and the one
verdict rule every entry point ends with: ``verdict(gates, scored)`` (passed only when every gate passed and
something was graded) -> ``exit_code``."""

from ._engine import (
    GRADED_FLAG,
    GateConfig,
    GateResult,
    GateResults,
    evaluate_gates,
    exit_code,
    graded_check,
    graded_counts,
    verdict,
    with_graded_check,
)

__all__ = ["GRADED_FLAG", "GateConfig", "GateResult", "GateResults", "evaluate_gates", "exit_code", "graded_check", "graded_counts", "verdict",
           "with_graded_check"]
