"""Gates: CI verdicts over a summary (pass-rate floors, regressions against a baseline, cost, latency,
unscored share). ``GateConfig`` -> ``evaluate_gates(summary, config)`` -> ``GateResult`` per gate."""

from ._engine import GateConfig, GateResult, evaluate_gates

__all__ = ["GateConfig", "GateResult", "evaluate_gates"]
