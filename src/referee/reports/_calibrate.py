"""The tables of ``referee calibrate``: a :class:`~referee.metaeval.Calibration` on stdout."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

from .._util._fold import rich_tables
from ..aggregate._summary import printable
from ..stats._agreement import interval_text
from ..stats._bootstrap import Interval
from ._safe import SafeConsole

if TYPE_CHECKING:
    from ..calibrate._calibrate import Calibration


def _fmt(iv: Interval | None, digits: int = 3, zero_width: str = "one-sided sample") -> str:
    if iv is None:
        return "not computed"
    if iv.estimate is None:
        return "undefined"
    return interval_text(iv, digits, zero_width=zero_width)


def seed_calibration_lines(cal: Calibration, threshold: float, show: int | None = None) -> tuple[list[str], str]:
    """The seed's ``calibrate_judge.py`` report, line for line (its stdout, which scripts parse), and its
    default "Action taken" text for the calibration log. ``show`` lists only the worst cases (the seed lists
    every one, as the default does)."""
    lines = [f"Calibration: {cal.n} case(s) checked, mean delta {cal.mean_abs_delta:.3f} (threshold {threshold})",
             "", "Per-case (worst agreement first):"]
    shown = cal.per_case if show is None else cal.per_case[:show]
    for r in shown:
        lines.append(f"  {r['id']}: judge={r['judge']:.2f} human={r['human']:.2f} delta={abs(r['delta']):.2f}")
    if len(shown) < len(cal.per_case):
        lines.append(f"  ... {len(cal.per_case) - len(shown)} more (--show limits the list)")
    lines.append("")
    if cal.above(threshold):
        action = (f"ACTION NEEDED: mean delta {cal.mean_abs_delta:.3f} exceeds {threshold} — revise the judge "
                  "prompt")
        lines.append(f"⚠ {action}")
    else:
        action = f"none needed (mean delta {cal.mean_abs_delta:.3f} within {threshold})"
        lines.append(f"OK: {action}")
    return lines, action


def render_calibration(cal: Calibration, threshold: float, show: int | None = None, *,
                       stderr: bool = False, seed_report: bool = False) -> None:
    """The per-case deltas (worst first; ``show`` limits them), the agreement statistics, the confusion matrix,
    the notes and the verdict against ``threshold`` (on stdout, or ``stderr``). ``seed_report``: the seed's
    report (:func:`seed_calibration_lines`) is printed beside this one, so the per-case deltas and the verdict
    line it already holds are left out here."""
    con = SafeConsole(highlight=False, soft_wrap=True, stderr=stderr)
    con.print(f"Agreement: {cal.n} case(s) in both files "
              f"({cal.judge_only} judge-only, {cal.human_only} human-only ids ignored); labels {cal.scale_note}")
    if not seed_report:
        _per_case(cal, show, con)
    _statistics(cal, con)
    if seed_report:
        return
    verdict = "ABOVE THRESHOLD" if cal.above(threshold) else "OK"
    con.print(f"Mean delta vs human: {cal.mean_abs_delta:.3f} over {cal.n} cases "
              f"(threshold {threshold:g}): {verdict}")


def _per_case(cal: Calibration, show: int | None, con: SafeConsole) -> None:
    # Like the seed, every shared case is listed unless --show limits it.
    shown = len(cal.per_case) if show is None else min(show, len(cal.per_case))
    which = f"all {shown}" if shown == len(cal.per_case) else f"top {shown} of {len(cal.per_case)}"
    cells = [[printable(str(r["id"])), f"{r['judge']:.3f}", f"{r['human']:.3f}", f"{r['delta']:+.3f}"]
             for r in cal.per_case[:shown]]
    for t in rich_tables(f"Per-case deltas, worst first ({which})", ["id", "judge", "human", "delta"],
                         [[Text(c) for c in r] for r in cells], con.width, plain=cells,
                         right=[False, True, True, True]):
        con.print(t)


def _statistics(cal: Calibration, con: SafeConsole) -> None:
    st = cal.stats
    s = Table(title="Agreement with human labels (95% bootstrap CI)", title_justify="left")
    s.add_column("statistic")
    s.add_column("value", justify="right")
    s.add_row("mean absolute delta", _fmt(st.mean_abs_diff))
    s.add_row("mean signed delta (judge - human)", _fmt(st.mean_signed_diff))
    s.add_row("exact agreement", _fmt(st.exact))
    kname = f"Cohen's kappa ({st.kappa_weights or 'unweighted'})"
    tiny = "too small a sample"
    s.add_row(kname, _fmt(st.kappa, zero_width=tiny))
    s.add_row("Spearman rho", _fmt(st.spearman, zero_width=tiny))
    s.add_row("Kendall tau-b", _fmt(st.kendall, zero_width=tiny))
    con.print(s)
    if st.confusion is not None:
        c = Table(title="Confusion matrix (rows: judge, columns: human)", title_justify="left")
        c.add_column("judge \\ human")
        for lab in st.labels:
            c.add_column(f"{lab:g}", justify="right")
        for lab, row in zip(st.labels, st.confusion, strict=True):
            c.add_row(f"{lab:g}", *[str(v) for v in row])
        con.print(c)
    for note in cal.notes:
        con.print(f"note: {note}")
