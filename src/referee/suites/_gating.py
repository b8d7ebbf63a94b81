"""The suite's gates, applied with ``referee score``'s own engine (``referee.aggregate`` + ``referee.evaluate_gates``)
so a suite gates exactly as ``referee score RESULTS --pass-rule evaluator --<same options>`` would.

The suite defines what a pass is (its scoring mode, critical evaluators, ``scoring.threshold``) and writes
that verdict as each row's ``passed``, so the gates count that verdict (``--pass-rule evaluator``); rows
without one (a seed baseline) pass by ``score >= threshold``. ``gates.threshold`` set to a threshold other
than ``scoring.threshold`` is an explicit request to re-threshold, so it switches to ``score >= threshold``."""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UserError
from ._model import BASELINE_ONLY_GATES, Gates

if TYPE_CHECKING:
    from ..aggregate import Summary
    from ..gates._engine import GateConfig, GateResult
    from ..results._schema import ResultRow

log = logging.getLogger(__name__)


def apply_gates(results: Path, gates: Gates, *, threshold: float, base_dir: Path, show: bool = True) -> int:
    """Aggregate ``results``, print the score summary with the gate verdicts, return the exit code."""
    code, _ = gate_verdicts(results, gates, threshold=threshold, base_dir=base_dir, show=show)
    return code


def gate_verdicts(results: Path, gates: Gates, *, threshold: float, base_dir: Path,
                  show: bool = False, candidate: Any = None) -> tuple[int, list[Any]]:
    """(exit code, ``referee.GateResult`` list) for ``results`` under ``gates``, by the verdict rule."""
    summary, verdicts = gate_summary(results, gates, threshold=threshold, base_dir=base_dir, candidate=candidate)
    code = summary_exit_code(summary, verdicts)
    if show:
        from ..reports._score_terminal import render_terminal

        render_terminal(summary, verdicts, code)
    return code, verdicts


def gate_summary(results: Any, gates: Gates, *, threshold: float, base_dir: Path,
                 candidate: Any = None, siblings: Collection[str] = ()) -> tuple[Summary, list[GateResult]]:
    """The summary of ``results`` (a results file or rows in memory) and the verdict of each of ``gates``
    (the one gate model of suites, ``assert_eval`` and ``referee.evaluate``), followed by the verdict rule's
    failed ``graded`` entry when ``results`` has no scored row.

    ``gates.baseline`` is a results file, or a run in the history (``main``, a branch, ``last``, a run id,
    ``@COMMIT``) of the same identity as ``candidate`` (the run's manifest; read beside a results file when not
    given), never one of ``siblings`` (the runs of the same invocation); the chosen run and why are logged."""
    from ..aggregate import ScoreOptions, summarize
    from ..gates._engine import evaluate_gates, with_graded_check
    from ..stats import DEFAULT_N_BOOT, DEFAULT_SEED

    baseline: Any = None
    if gates.baseline is not None:
        baseline = load_baseline(gates.baseline, base_dir=base_dir, results=results, candidate=candidate,
                                 siblings=siblings)
    else:
        asked = [k for k in BASELINE_ONLY_GATES if getattr(gates, k)]
        if asked:
            raise UserError(f"gates.{asked[0]} needs gates.baseline")
    opts = ScoreOptions(threshold=gates.threshold if gates.threshold is not None else threshold,
                        n_boot=gates.n_boot or DEFAULT_N_BOOT,
                        boot_seed=gates.boot_seed if gates.boot_seed is not None else DEFAULT_SEED,
                        pass_rule=suite_pass_rule(gates, threshold))
    summary = summarize(results if not isinstance(results, Path) else str(results), opts, baseline=baseline,
                        min_case_pass_rate=gates.min_case_pass_rate)
    return summary, with_graded_check(evaluate_gates(summary, gate_config(gates)), summary)


def load_baseline(spec: str, *, base_dir: Path, results: Any = None, candidate: Any = None,
                  siblings: Collection[str] = ()) -> Any:
    """A baseline file's path, or a stored run's rows (the choice and why logged to stderr)."""
    from ..results._manifest import RunManifest
    from ..store import resolve_baseline

    if candidate is None and isinstance(results, str | Path):
        try:
            candidate = RunManifest.read(results)
        except (OSError, ValueError):
            candidate = None
    b = resolve_baseline(spec, base_dir=base_dir, candidate=candidate, siblings=siblings)
    for note in b.notes:
        log.warning("%s", note)
    if b.path is not None:
        return b.path
    log.warning("%s", b.describe())
    return b.table()


def summary_exit_code(summary: Summary, verdicts: list[GateResult]) -> int:
    """The exit code of ``summary`` gated by ``verdicts`` (:func:`referee.gates.verdict`: 1 when a gate failed
    or nothing was scored)."""
    from ..gates._engine import exit_code, graded_counts, verdict

    return exit_code(verdict(verdicts, graded_counts(summary)[0]))


def gate_config(gates: Gates) -> GateConfig:
    """The gates of a suite (``referee score``'s option names) as the gate engine's configuration."""
    from ..gates._engine import GateConfig

    return GateConfig(
        fail_under=gates.fail_under, fail_on_regression=gates.fail_on_regression,
        fail_on_cost_regression=gates.fail_on_cost_regression,
        fail_on_latency_regression=gates.fail_on_latency_regression,
        cost_tolerance=gates.cost_regression_tolerance, latency_tolerance=gates.latency_regression_tolerance,
        max_mean_cost=gates.fail_if_mean_cost_above, max_mean_latency=gates.fail_if_mean_latency_above,
        fail_on_significant_regression=gates.fail_on_significant_regression,
        fail_on_inconclusive=gates.fail_on_inconclusive, max_unscored_rate=gates.fail_if_unscored_above,
        min_case_pass_rate=gates.min_case_pass_rate,
    )


def suite_pass_rule(gates: Gates, scoring_threshold: float) -> str:
    """The pass rule of a suite's gates: the suite's own verdict, unless the gates set another threshold."""
    if gates.threshold is None or gates.threshold == scoring_threshold:
        return "evaluator"
    return "threshold"


def evaluator_table(rows: Sequence[ResultRow], width: int | None = None) -> str:
    """Pass rate and mean score per evaluator (the aggregator's per-evaluator counts): which check fails most."""
    from ..aggregate._tally import evaluator_counts

    counts = evaluator_counts(rows)
    if not counts:
        return ""
    from .._util._fold import terminal_width, text_table

    rows_out = []
    for k, n in counts.items():
        pr = f"{n.passed / n.with_verdict:.1%}" if n.with_verdict else "-"
        mean = f"{sum(n.scores) / len(n.scores):.3f}" if n.scores else "-"
        rows_out.append([k, pr, mean, str(len(n.scores)), str(n.other)])
    lines = text_table(["evaluator", "pass rate", "mean", "n", "unscored/error"], rows_out,
                       width or terminal_width(), right=[False, True, True, True, True])
    return "\n".join(lines)
