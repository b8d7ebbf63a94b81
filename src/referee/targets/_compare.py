"""Comparing targets: a targets x evaluators table with intervals, the best target and whether its lead over the
runner-up is significant (a paired test on the shared cases), all through ``referee score``'s own aggregator."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..stats._bootstrap import Interval

if TYPE_CHECKING:
    from ..results._schema import ResultRow


@dataclass
class TargetLine:
    id: str
    path: Path
    pass_rate: Interval
    mean: Interval
    cases: int
    unscored: int
    errors: int
    mean_cost: float | None
    mean_latency_ms: float | None
    evaluators: dict[str, Interval] = field(default_factory=dict)
    """Pass rate of each evaluator (Wilson interval) over the cases it scored."""


@dataclass
class Lead:
    best: str
    runner_up: str
    diff: float
    lo: float | None
    hi: float | None
    p_value: float
    significant: bool
    n: int
    adjusted: bool = False
    """Whether ``p_value`` is Benjamini-Hochberg adjusted (as ``referee score`` decides significance)."""


@dataclass
class TargetComparison:
    lines: list[TargetLine]
    evaluators: list[str]
    best: str | None
    lead: Lead | None
    note: str | None = None


def compare_targets(results: Sequence[tuple[str, Path]], *, threshold: float, pass_rule: str = "evaluator",
                    n_boot: int | None = None, boot_seed: int | None = None,
                    rows: Mapping[str, Sequence[ResultRow]] | None = None) -> TargetComparison:
    """``rows``: a target's rows already in memory (this run's, exactly what its file holds), so the per-evaluator
    counts need not parse the file again; other results (an earlier run's baseline) are read from their file."""
    from ..aggregate import ScoreOptions, load_table, summarize
    from ..aggregate._tally import evaluator_counts
    from ..results._io import read_results
    from ..stats import DEFAULT_N_BOOT, DEFAULT_SEED
    from ..stats._intervals import wilson_interval

    opts = ScoreOptions(threshold=threshold, n_boot=n_boot or DEFAULT_N_BOOT,
                        boot_seed=boot_seed if boot_seed is not None else DEFAULT_SEED, pass_rule=pass_rule)
    lines: list[TargetLine] = []
    tables: dict[str, Any] = {}
    order: dict[str, None] = {}
    for tid, path in results:
        table = load_table(str(path))
        tables[tid] = table
        s = summarize(table, opts).overall
        counts = evaluator_counts(rows[tid] if rows is not None and tid in rows else read_results(path).rows)
        order.update(dict.fromkeys(counts))
        lines.append(TargetLine(
            id=tid, path=path, pass_rate=s.pass_rate, mean=s.mean, cases=s.cases, unscored=s.unscored,
            errors=s.errors, mean_cost=s.mean_cost, mean_latency_ms=s.mean_latency_ms,
            evaluators={k: wilson_interval(float(v.passed), v.with_verdict) for k, v in counts.items()
                        if v.with_verdict}))
    ranked = sorted((ln for ln in lines if ln.pass_rate.estimate is not None),
                    key=lambda ln: (ln.pass_rate.estimate or 0.0, ln.mean.estimate or 0.0), reverse=True)
    best = ranked[0].id if ranked else None
    lead = None
    note = None
    if len(ranked) >= 2:
        a, b = ranked[0], ranked[1]
        try:
            comp = summarize(tables[a.id], dataclasses.replace(opts, allow_case_set_change=True),
                             baseline=tables[b.id]).comparison
        except Exception as exc:  # noqa: BLE001 - the table is still worth showing
            comp = None
            note = f"no paired test of {a.id} against {b.id}: {exc}"
        tests = [t for t in (comp.tests if comp else []) if t.scope == "overall" and t.metric == "pass rate"]
        if tests:
            t = tests[0]
            lead = Lead(best=a.id, runner_up=b.id, diff=t.diff, lo=t.lo, hi=t.hi,
                        p_value=t.p_adjusted if t.p_adjusted is not None else t.p_value,
                        significant=t.significant, n=t.n, adjusted=t.p_adjusted is not None)
        elif note is None:
            note = f"no paired test of {a.id} against {b.id}: too few shared scored cases"
    return TargetComparison(lines=lines, evaluators=list(order), best=best, lead=lead, note=note)


def _pct(iv: Interval) -> str:
    if iv.estimate is None:
        return "-"
    if iv.lo is None or iv.hi is None:
        return f"{iv.estimate:.0%}"
    return f"{iv.estimate:.0%} [{iv.lo:.0%}, {iv.hi:.0%}]"


def render_comparison(c: TargetComparison, width: int | None = None) -> str:
    """Plain text: one line per target (folded to ``width``, by default the terminal's: each part repeats the
    target's name), then the verdict on the best one."""
    from .._util._fold import terminal_width, text_table

    head = ["target", "pass rate [95% CI]", "mean score", "cases", "unscored", "error", "cost/case", "latency",
            *c.evaluators]
    rows = []
    for ln in c.lines:
        mean = f"{ln.mean.estimate:.3f}" if ln.mean.estimate is not None else "-"
        cost = f"${ln.mean_cost:.5f}" if ln.mean_cost is not None else "-"
        lat = f"{ln.mean_latency_ms:.0f} ms" if ln.mean_latency_ms is not None else "-"
        rows.append([ln.id, _pct(ln.pass_rate), mean, str(ln.cases), str(ln.unscored), str(ln.errors), cost, lat,
                     *(_pct(ln.evaluators[e]) if e in ln.evaluators else "-" for e in c.evaluators)])
    out = text_table(head, rows, width or terminal_width())
    out.append("(evaluator columns: pass rate with a Wilson 95% interval over the cases each scored)")
    if c.best is None:
        out.append("best target: none (no target has scored cases)")
    elif c.lead is None:
        out.append(f"best target: {c.best}" + (f" ({c.note})" if c.note else ""))
    else:
        ld = c.lead
        ci = f", 95% CI [{ld.lo:+.1%}, {ld.hi:+.1%}]" if ld.lo is not None and ld.hi is not None else ""
        verdict = "significant" if ld.significant else "not significant"
        name = "adjusted p" if ld.adjusted else "p"
        p = f"{name} < 0.001" if ld.p_value < 0.001 else f"{name} = {ld.p_value:.3g}"
        out.append(f"best target: {ld.best}, pass rate {ld.diff:+.1%} vs {ld.runner_up} on {ld.n} shared cases "
                   f"({p}{ci}, paired bootstrap): the lead is {verdict}")
    return "\n".join(out)


def render_comparison_markdown(c: TargetComparison, title: str) -> str:
    """The same table for a pull-request comment or the step summary (labels escaped: they come from files)."""
    from ..reports._markdown_summary import _cell

    lines = [f"### referee: {_cell(title)}", "",
             "| target | pass rate [95% CI] | mean score | cases | unscored | error | cost/case | latency | "
             + " | ".join(_cell(e) for e in c.evaluators) + " |",
             "|---" * (8 + len(c.evaluators)) + "|"]
    for ln in c.lines:
        mean = f"{ln.mean.estimate:.3f}" if ln.mean.estimate is not None else "-"
        cost = f"${ln.mean_cost:.5f}" if ln.mean_cost is not None else "-"
        lat = f"{ln.mean_latency_ms:.0f} ms" if ln.mean_latency_ms is not None else "-"
        best = " **(best)**" if ln.id == c.best else ""
        cells = [f"`{_cell(ln.id)}`{best}", _pct(ln.pass_rate), mean, str(ln.cases), str(ln.unscored),
                 str(ln.errors), cost, lat, *(_pct(ln.evaluators[e]) if e in ln.evaluators else "-"
                                              for e in c.evaluators)]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    verdict = render_comparison(c).splitlines()[-1]
    lines.append(_cell(verdict, limit=400))
    return "\n".join(lines) + "\n"
