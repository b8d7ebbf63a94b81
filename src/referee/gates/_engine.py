"""CI gates over an aggregate: each flag the user passed becomes a gate that passes or fails (exit 1)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._util._display import Block, Table, to_html, to_rich

if TYPE_CHECKING:  # the verdict rule runs at every command's exit: it must not load the aggregator
    from ..aggregate._summary import Summary


@dataclass
class GateResult:
    """One gate's verdict: the flag that asked for it, whether it failed, and why (in the flag's words)."""

    flag: str
    failed: bool
    message: str
    evaluated: bool = True
    """False when the gate could not be checked (e.g. no cost data); it then does not fail."""


class GateResults(list[GateResult]):
    """A list of gate verdicts that displays as a table in a notebook or a rich terminal."""

    def headline(self) -> str:
        if not self:
            return "no gate was set"
        failed = [g.flag for g in self if g.failed]
        return f"gates: {len(failed)} of {len(self)} failed" + (f" ({', '.join(failed)})" if failed else "")

    def blocks(self) -> list[Block]:
        rows = [[g.flag, "failed" if g.failed else ("passed" if g.evaluated else "not evaluated"), g.message]
                for g in self]
        return [Table("", ["gate", "result", "message"], rows)] if rows else []

    def _repr_html_(self) -> str:
        return to_html(self.headline(), self.blocks(), ok=not any(g.failed for g in self))

    def __rich__(self) -> object:
        return to_rich(self.headline(), self.blocks(), ok=not any(g.failed for g in self))


@dataclass
class GateConfig:
    """The gates asked for (``referee score``'s flags; None or False: not asked for)."""

    fail_under: float | None = None
    fail_on_regression: bool = False
    fail_on_cost_regression: bool = False
    fail_on_latency_regression: bool = False
    cost_tolerance: float = 0.2
    latency_tolerance: float = 0.2
    max_mean_cost: float | None = None
    max_mean_latency: float | None = None
    fail_on_significant_regression: bool = False
    fail_on_inconclusive: bool = False
    max_unscored_rate: float | None = None
    min_case_pass_rate: float | None = None


def _relative(flag: str, what: str, cur: float | None, base: float | None, tol: float, unit: str) -> GateResult:
    if base is None:
        return GateResult(flag, False, f"skipped: the baseline has no {what}", evaluated=False)
    if cur is None:
        return GateResult(flag, False, f"skipped: the current results have no {what}", evaluated=False)
    if base <= 0:
        # As the seed: a relative increase over nothing is undefined (the absolute ceilings cover that case).
        return GateResult(flag, False, f"skipped: the baseline mean {what} is 0", evaluated=False)
    limit = base * (1 + tol)
    failed = cur > limit
    verb = "above" if failed else "within"
    return GateResult(flag, failed, f"mean {what} {cur:.6g}{unit} is {verb} baseline {base:.6g}{unit} "
                                    f"x (1 + {tol:g}) = {limit:.6g}{unit}")


def _ceiling(flag: str, what: str, cur: float | None, limit: float, unit: str) -> GateResult:
    if cur is None:
        return GateResult(flag, False, f"skipped: no {what} in the results", evaluated=False)
    failed = cur > limit
    return GateResult(flag, failed, f"mean {what} {cur:.6g}{unit} {'>' if failed else '<='} {limit:g}{unit}")


def evaluate_gates(s: Summary, cfg: GateConfig) -> list[GateResult]:
    """The gates asked for, in a stable order. Baseline-only gates must have been refused earlier
    (exit 2) when there is no baseline."""
    out: list[GateResult] = []
    o = s.overall
    comp = s.comparison
    if cfg.fail_under is not None:
        pr = o.pass_rate.estimate
        if pr is None:
            out.append(GateResult("--fail-under", True, "no scored cases, so the pass rate is undefined"))
        else:
            out.append(GateResult("--fail-under", pr < cfg.fail_under,
                                  f"pass rate {pr:.1%} {'<' if pr < cfg.fail_under else '>='} "
                                  f"{cfg.fail_under:.1%}"))
    if cfg.fail_on_regression and comp is not None:
        n = comp.regression_count + len(comp.adversarial_regressions)
        ids = ", ".join(c.id for c in (comp.regressions + comp.adversarial_regressions)[:5])
        msg = f"{n} case(s) passed in the baseline and fail now" + (f": {ids}" if n else "")
        if comp.regression_min_drop is not None:
            # The seed's --regression-min-drop: a sharp drop of a still-passing case fails the gate too.
            sharp = comp.magnitude_drop_count
            msg += (f"; {sharp} case(s) still passing, but dropped sharply (by more than "
                    f"{comp.regression_min_drop:g})")
            if sharp:
                msg += ": " + ", ".join(c.id for c in comp.magnitude_drops[:5])
            n += sharp
        out.append(GateResult("--fail-on-regression", n > 0, msg))
    if cfg.fail_on_cost_regression and comp is not None:
        out.append(_relative("--fail-on-cost-regression", "cost", o.mean_cost, comp.baseline_overall.mean_cost,
                             cfg.cost_tolerance, " USD"))
    if cfg.fail_on_latency_regression and comp is not None:
        out.append(_relative("--fail-on-latency-regression", "latency", o.mean_latency_ms,
                             comp.baseline_overall.mean_latency_ms, cfg.latency_tolerance, " ms"))
    if cfg.max_mean_cost is not None:
        out.append(_ceiling("--fail-if-mean-cost-above", "cost", o.mean_cost, cfg.max_mean_cost, " USD"))
    if cfg.max_mean_latency is not None:
        out.append(_ceiling("--fail-if-mean-latency-above", "latency", o.mean_latency_ms, cfg.max_mean_latency,
                            " ms"))
    if cfg.fail_on_significant_regression and comp is not None:
        drops = [t for t in comp.tests if t.direction == "drop" and t.significant]
        msg = (f"{len(drops)} significant drop(s) after Benjamini-Hochberg: "
               + "; ".join(f"{t.scope} {t.metric} {t.diff:+.3f}" for t in drops[:4])) if drops else \
            "no drop is significant after Benjamini-Hochberg"
        out.append(GateResult("--fail-on-significant-regression", bool(drops), msg))
    if cfg.fail_on_inconclusive and comp is not None:
        # Stricter than --fail-on-significant-regression, so a significant drop fails it too: a flag that
        # refuses "within noise" must not pass a proven regression.
        out.append(GateResult("--fail-on-inconclusive", comp.verdict in ("INCONCLUSIVE", "REGRESSED"),
                              f"verdict {comp.verdict}: {comp.verdict_reason}"))
    if cfg.max_unscored_rate is not None:
        rate = o.unscored_rate
        failed = rate > cfg.max_unscored_rate
        out.append(GateResult("--fail-if-unscored-above", failed,
                              f"{o.unscored + o.errors} of {o.rows} rows unscored or errored ({rate:.1%}) "
                              f"{'>' if failed else '<='} {cfg.max_unscored_rate:.1%}"))
    if cfg.min_case_pass_rate is not None and s.repeats is not None:
        bad = s.repeats.below_min_pass_rate
        out.append(GateResult("--min-case-pass-rate", bool(bad),
                              f"{s.repeats.below_min_count} case(s) pass in under "
                              f"{cfg.min_case_pass_rate:.0%} of their repeats"
                              + (": " + ", ".join(c.id for c in bad[:5]) if bad else "")))
    return out


# -- the verdict rule ------------------------------------------------------------------------------------------

GRADED_FLAG = "graded"
"""The flag of the verdict rule's own check (see :func:`graded_check`), shown beside the gates."""


def verdict(gates: Sequence[GateResult], scored: int) -> bool:
    """The verdict rule of every entry point (``referee run``/``score``/``judge``/..., ``EvalResult.passed``,
    ``assert_eval``, ``run_targets``): passed only when every gate passed **and** the gated run has at least one
    scored row. A run that graded nothing never passes, whatever its gates say (they are computed over nothing)."""
    return scored > 0 and not any(g.failed for g in gates)


def exit_code(passed: bool) -> int:
    """The exit code of a verdict: 0 passed, 1 a gate failed or nothing was graded (2, usage errors, is raised
    before any verdict)."""
    return 0 if passed else 1


def graded_check(scored: int, rows: int, *, unscored: int | None = None,
                 errors: int | None = None) -> GateResult | None:
    """The failed gate-like entry that says why a run that graded nothing fails (``scored`` of ``rows`` rows
    scored), so that the gate list, the terminal and the Markdown summary show it; None when something was
    scored (the entry is then left out: the gates read as before)."""
    if scored > 0:
        return None
    detail = f"0 of {rows} rows scored"
    if unscored is not None and errors is not None:
        detail += f": {unscored} unscored, {errors} error"
    return GateResult(GRADED_FLAG, True, f"nothing was graded ({detail})")


def graded_counts(s: Summary) -> tuple[int, int, int, int]:
    """(scored rows, rows, unscored, errors) of a summary, the correctness and adversarial tracks together."""
    groups = [s.overall, *s.adversarial]
    rows = sum(g.rows for g in groups)
    unscored = sum(g.unscored for g in groups)
    errors = sum(g.errors for g in groups)
    return rows - unscored - errors, rows, unscored, errors


def with_graded_check(gates: list[GateResult], s: Summary) -> list[GateResult]:
    """``gates`` and, when ``s`` has no scored row, the failed :func:`graded_check` entry after them."""
    scored, rows, unscored, errors = graded_counts(s)
    entry = graded_check(scored, rows, unscored=unscored, errors=errors)
    return gates if entry is None else [*gates, entry]
