"""The terminal report of ``referee score`` (rich tables on stdout; warnings go to stderr elsewhere)."""

from __future__ import annotations

import os
import sys
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from .._util._fold import rich_tables, terminal_width
from .._util._numbers import count
from ..aggregate._format import ci_range, num, pct
from ..aggregate._load import UNCATEGORIZED
from ..aggregate._summary import CaseLine, Group, Summary, format_p, printable
from ..gates._engine import GateResult
from ._safe import SafeConsole, neutralise_bidi


def _plain(text: str) -> str:
    """Case text for a terminal: no control characters (ANSI escapes), bidi controls as visible marks (made
    here, before the layout, so a wrapped line keeps its width)."""
    return neutralise_bidi(printable(text))


def _safe(text: str) -> str:
    """:func:`_plain`, and no rich markup."""
    return escape(_plain(text))


def _ci(lo: float | None, hi: float | None, as_pct: bool = True) -> str:
    return ci_range(lo, hi, as_pct, one_percent_sign=True)


def _groups_tables(title: str, first: str, groups: list[Group], total: Group | None, repeats: bool,
                   width: int) -> list[Table]:
    """The groups table, folded to ``width`` (each part repeats the group's name; names wrap, never cut)."""
    cols = [first, "cases", "mean", "pass rate", "95% CI", "Wilson 95%", "unscored", "cost $/row", "latency ms"]
    # Which rows the cost and latency means are over is said once, under the table (see render_terminal).
    if repeats:
        cols += ["pass@k", "pass^k"]
    rows = [*groups, total] if total is not None and len(groups) != 1 else groups
    cells: list[list[str]] = []
    for g in rows:
        name = "overall" if g.name == UNCATEGORIZED and len(groups) == 1 else g.name  # no category is everything
        line = [_plain(name), str(g.cases), num(g.mean.estimate), pct(g.pass_rate.estimate),
                _ci(g.pass_rate.lo, g.pass_rate.hi), _ci(g.pass_rate_wilson.lo, g.pass_rate_wilson.hi),
                str(g.unscored + g.errors), num(g.mean_cost, 5), num(g.mean_latency_ms, 0)]
        if repeats:
            line += [pct(g.pass_at_k), pct(g.pass_all_k)]
        cells.append(line)
    return rich_tables(title, cols, [[Text(c) for c in r] for r in cells], width,
                       right=[c != first for c in cols], plain=cells,
                       styles=["bold" if g is total else None for g in rows], **_BOX)


def _rule_text(s: Summary) -> str:
    """What decides a pass, as the header of every report says it."""
    if s.pass_rule == "evaluator":
        return f"pass by the evaluator's own verdict (score >= {s.threshold:g} where a row has none)"
    return f"threshold {s.threshold:g}"


def _cost_rows_text(s: Summary) -> str:
    """Which rows the cost and latency means (and their gates) are over."""
    if s.cost_rows == "all":
        return "cost and latency: means over every row, unscored and error rows included (--cost-latency-rows all)"
    return ("cost and latency: means over scored rows only; --cost-latency-rows all includes unscored and "
            "error rows")


def _case(c: CaseLine, extra: str = "") -> str:
    score = "unscored" if c.score is None else f"{c.score:.3f}"
    rep = ""
    if c.repeats > 1 and c.pass_share is not None:
        rep = f" [{c.repeats} repeats, passes {c.pass_share:.0%}, sd {c.sd or 0:.3f}]"
    why = _safe(" ".join((c.rationale or "(no rationale)").split()))
    if len(why) > 240:
        why = why[:239] + "…"
    cat = "" if c.category == UNCATEGORIZED else f" ({_safe(c.category)})"
    return f"  {_safe(c.id)}{cat} score {score}{extra}{rep}: {why}"


_BOX: dict[str, Any] = {"show_edge": False, "pad_edge": False, "box": box.SIMPLE_HEAD, "collapse_padding": True}
"""Tables with no vertical rules and one space of padding: two more columns fit in 80."""

_SHORT = 3
"""Cases listed per section in the default report; ``verbose`` lists up to 10 (every lowest-scoring case)."""


def render_terminal(s: Summary, gates: list[GateResult], exit_code: int, *,
                    console: Console | None = None, verbose: bool = False) -> None:
    """``referee score``'s terminal report (rich tables on stdout, folded to the terminal's width): rates with
    CIs, groups, worst cases, the baseline comparison, power and the gates. ``verbose`` adds the paired tests'
    table and up to 10 cases per list (3 by default)."""
    con = console or SafeConsole(file=sys.stdout, highlight=False, soft_wrap=False,
                                 width=None if sys.stdout.isatty() and "COLUMNS" not in os.environ
                                 else terminal_width())
    width = con.width
    many = 10 if verbose else _SHORT
    hidden: list[str] = []
    o = s.overall
    repeats = s.repeats is not None and s.repeats.max_repeats > 1
    adv_rows = sum(g.rows for g in s.adversarial)
    con.print(f"[bold]referee score[/bold] {_safe(s.path)}: {count(o.rows, 'row')}, {count(o.cases, 'scored case')}"
              + (f" (+ {adv_rows} adversarial rows, reported apart)" if adv_rows else "")
              + f", {_rule_text(s)}")
    con.print(f"  pass rate [bold]{pct(o.pass_rate.estimate)}[/bold] "
              f"(95% CI {_ci(o.pass_rate.lo, o.pass_rate.hi)}, {o.pass_rate.method}; "
              f"Wilson {_ci(o.pass_rate_wilson.lo, o.pass_rate_wilson.hi)})")
    con.print(f"  mean      [bold]{num(o.mean.estimate)}[/bold] (95% CI {_ci(o.mean.lo, o.mean.hi, False)}"
              + ("" if o.mean.method in ("percentile bootstrap", "") else f", {o.mean.method}") + ")")
    if o.unscored or o.errors:
        con.print(f"  [yellow]{o.unscored} unscored and {o.errors} error rows[/yellow] are left out of the rates "
                  "and means (they are neither passes nor fails)")
    if s.self_grading:
        con.print(f"  [bold yellow]caveat: {_safe(s.self_grading)}[/bold yellow] (flag 'self_grading'; judge with "
                  "a different model)")
    if s.small_sample:
        con.print(f"  [yellow]small sample: {count(o.cases, 'case')}; treat the rates as rough[/yellow]")
    con.print()
    for t in _groups_tables("Per category", "category", s.categories, o, repeats, width):
        con.print(t)
    if o.mean_cost is not None or o.mean_latency_ms is not None:
        con.print(f"  {_cost_rows_text(s)}")
    con.print()
    failing = [c for c in s.lowest if c.passed is False]  # a passing case is no failure behind the numbers
    con.print("[bold]Lowest-scoring cases[/bold] (the failures behind the numbers):")
    for c in failing[:many]:
        con.print(_case(c), overflow="fold")
    if len(failing) > many:
        hidden.append(f"{len(failing) - many} more lowest-scoring cases")
    if not s.lowest:
        con.print("  (no scored cases)")
    elif not failing:
        con.print("  (no case failed)")
    if s.repeats is not None and s.repeats.flaky:
        con.print()
        con.print(f"[bold]Flaky cases[/bold] (some repeats pass, some fail): {s.repeats.flaky_count}"
                  + (f" (the first {many})" if s.repeats.flaky_count > many else ""))
        for c in s.repeats.flaky[:many]:
            con.print(_case(c), overflow="fold")
    if s.repeats is not None and s.repeats.below_min_pass_rate:
        con.print()
        con.print(f"[bold]Cases under the minimum per-case pass rate[/bold]: {s.repeats.below_min_count}")
        for c in s.repeats.below_min_pass_rate[:many]:
            con.print(_case(c), overflow="fold")
    if s.adversarial:
        con.print()
        for t in _groups_tables("Adversarial track, per attack type (kept out of the correctness numbers)",
                                "attack type", s.adversarial, None, repeats, width):
            con.print(t)
        for c in s.adversarial_failures[:5]:
            con.print(_case(c), overflow="fold")
    comp = s.comparison
    if comp is not None:
        _comparison(con, s, width, verbose, hidden)
    if s.power is not None and s.power.min_detectable_drop is not None:
        p = s.power
        need = "n/a" if p.cases_needed is None else str(p.cases_needed)
        if p.detectable:
            found = (f"a drop of {p.min_detectable_drop:.1%} in pass rate is the smallest detected 80% of the "
                     f"time (alpha 0.05; {p.basis})")
        else:  # a pass rate cannot drop by more than 100 points
            found = f"no drop in pass rate is detectable 80% of the time (alpha 0.05; {p.basis})"
        con.print(f"  power: with {count(p.n, 'case')} {found}; detecting a {p.target_drop:.1%} drop needs about "
                  f"{need} cases")
    if gates:
        con.print()
        con.print("[bold]Gates[/bold]")
        for g in gates:
            mark = "[red]FAIL[/red]" if g.failed else ("[green]pass[/green]" if g.evaluated else "[yellow]skip"
                                                                                              "[/yellow]")
            con.print(f"  {mark} {g.flag}: {_safe(g.message)}")
    if hidden:
        con.print(f"[dim]-v for the details: {_safe(', '.join(hidden))}[/dim]")
    con.print(f"exit {exit_code}: " + {0: "passed", 1: "gate failed"}.get(exit_code, "error"))


def _comparison(con: Console, s: Summary, width: int, verbose: bool, hidden: list[str]) -> None:
    comp = s.comparison
    assert comp is not None
    o = s.overall
    many = 10 if verbose else _SHORT
    b = comp.baseline_overall
    con.print()
    con.print(f"[bold]Against baseline[/bold] {_safe(comp.baseline)}: {comp.shared} shared cases")
    if comp.missing or comp.added:
        con.print(f"  [yellow]case sets differ (allowed): {len(comp.missing)} missing, {len(comp.added)} "
                  f"added[/yellow]: missing {_safe(', '.join(comp.missing[:10]))}; added "
                  f"{_safe(', '.join(comp.added[:10]))}")
    con.print(f"  pass rate {pct(b.pass_rate.estimate)} -> {pct(o.pass_rate.estimate)}, "
              f"mean {num(b.mean.estimate)} -> {num(o.mean.estimate)}, "
              f"mean cost {num(b.mean_cost, 5)} -> {num(o.mean_cost, 5)}, "
              f"mean latency {num(b.mean_latency_ms, 0)} -> {num(o.mean_latency_ms, 0)} ms")
    con.print(f"  {comp.regression_count} regressed (passed in the baseline, fail now), {comp.fixed} fixed; "
              f"exact McNemar p = {comp.mcnemar_p:.3g} ({comp.mcnemar_b} vs {comp.mcnemar_c} discordant)")
    for c in comp.regressions[:many]:
        base = "" if c.baseline_score is None else f" (baseline {c.baseline_score:.3f})"
        con.print(_case(c, base), overflow="fold")
    if comp.regression_count > many:
        con.print(f"  ... and {comp.regression_count - many} more (see --json-out / --junit-xml)")
    if comp.regression_min_drop is not None:
        # Both headings always, so a script reading the report finds both kinds.
        con.print(f"  Passed before, failing now: {comp.regression_count}")
        con.print(f"  Still passing, but dropped sharply (by more than {comp.regression_min_drop:g}): "
                  f"{comp.magnitude_drop_count}")
        for c in comp.magnitude_drops[:many]:
            base = "" if c.baseline_score is None else f" (baseline {c.baseline_score:.3f})"
            con.print(_case(c, base), overflow="fold")
        if comp.magnitude_drop_count > many:
            con.print(f"  ... and {comp.magnitude_drop_count - many} more (see --json-out)")
    if comp.lost_scores:
        con.print(f"  [yellow]{len(comp.lost_scores)} case(s) passed in the baseline and are unscored now"
                  f"[/yellow]: {_safe(', '.join(comp.lost_scores[:10]))}")
    if comp.tests and verbose:
        head = ["scope", "metric", "n", "diff", "95% CI", "p", "adj. p", "significant"]
        plain: list[list[str]] = []
        shown: list[list[Any]] = []
        for pt in comp.tests:
            colour = "red" if pt.direction == "drop" else "green"
            sig = pt.direction if pt.significant else "no"
            line = [_plain(pt.scope), pt.metric, str(pt.n), f"{pt.diff:+.3f}", _ci(pt.lo, pt.hi, False),
                    format_p(pt.p_value, s.n_boot),
                    "n/a" if pt.p_adjusted is None else format_p(pt.p_adjusted, s.n_boot), sig]
            plain.append(line)
            shown.append([Text(v) for v in line[:-1]] + [Text(sig, style=colour if pt.significant else "")])
        for t in rich_tables("Paired bootstrap on shared cases (Benjamini-Hochberg per direction)", head, shown,
                             width, keys=2, right=[h not in ("scope", "metric") for h in head], plain=plain,
                             **_BOX):
            con.print(t)
    elif comp.tests:
        drops = sum(1 for pt in comp.tests if pt.significant and pt.direction == "drop")
        con.print(f"  paired bootstrap: {len(comp.tests)} tests, {drops} significant drop(s) after "
                  "Benjamini-Hochberg")
        hidden.append("the paired tests' table")
    approx = sorted({f"{pt.scope} {pt.metric}" for pt in comp.tests if "Cornish-Fisher" in pt.method})
    if approx:
        con.print(f"  bootstrap percentiles and p from the Cornish-Fisher expansion (n large, many distinct "
                  f"differences; within Monte Carlo error of resampling): "
                  f"{_safe(', '.join(approx[:6]))}")
    for sk in comp.skipped:
        con.print(f"  skipped test: {_safe(sk)}")
    if comp.adversarial_regressions:
        con.print(f"  adversarial regressions: {len(comp.adversarial_regressions)}")
        for c in comp.adversarial_regressions[:5]:
            con.print(_case(c), overflow="fold")
    colour = {"REGRESSED": "red", "INCONCLUSIVE": "yellow", "IMPROVED": "green"}.get(comp.verdict, "green")
    con.print(f"  verdict: [bold {colour}]{comp.verdict}[/bold {colour}] ({_safe(comp.verdict_reason)})")
