"""``referee calibrate JUDGE HUMAN``: how far the judge's scores are from human labels, with a CI gate."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table

from ..calibrate import Calibration, calibrate, parse_scale, read_labels, update_log
from ..errors import InputError
from ..reports._safe import SafeConsole
from ..stats._agreement import interval_text
from ..stats._bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED, Interval
from ._common import echo_err

_MAX_WARNINGS = 20


def _fmt(iv: Interval | None, digits: int = 3, zero_width: str = "one-sided sample") -> str:
    if iv is None:
        return "not computed"
    if iv.estimate is None:
        return "undefined"
    return interval_text(iv, digits, zero_width=zero_width)


def _print(cal: Calibration, threshold: float, show: int | None) -> None:
    con = SafeConsole(highlight=False, soft_wrap=True)
    con.print(f"Calibration: {cal.n} case(s) in both files "
              f"({cal.judge_only} judge-only, {cal.human_only} human-only ids ignored); labels {cal.scale_note}")
    # Like the seed, every shared case is listed unless --show limits it.
    shown = len(cal.per_case) if show is None else min(show, len(cal.per_case))
    which = f"all {shown}" if shown == len(cal.per_case) else f"top {shown} of {len(cal.per_case)}"
    t = Table(title=f"Per-case deltas, worst first ({which})", title_justify="left")
    for col in ("id", "judge", "human", "delta"):
        t.add_column(col, justify="left" if col == "id" else "right")
    for r in cal.per_case[:shown]:
        t.add_row(str(r["id"]), f"{r['judge']:.3f}", f"{r['human']:.3f}", f"{r['delta']:+.3f}")
    con.print(t)
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
    verdict = "ABOVE THRESHOLD" if _above(cal.mean_abs_delta, threshold) else "OK"
    con.print(f"Mean delta vs human: {cal.mean_abs_delta:.3f} over {cal.n} cases "
              f"(threshold {threshold:g}): {verdict}")


def _above(delta: float, threshold: float) -> bool:
    # Rounded first so that float noise (0.9 - 0.7 = 0.20000000000000007) never fails a 0.2 gate while
    # printing "0.200".
    return round(delta, 9) > threshold


@click.command("calibrate")
@click.argument("judge_file", metavar="JUDGE", type=click.Path(dir_okay=False))
@click.argument("human_file", metavar="HUMAN", type=click.Path(dir_okay=False))
@click.option("--threshold", type=float, default=0.2, show_default=True,
              help="Exit 1 when the mean absolute delta is above this.")
@click.option("--update-log", "log_file", type=click.Path(dir_okay=False), default=None,
              help="Record this check in the judge prompt's calibration table.")
@click.option("--action", default="none", show_default=True, help="'Action taken' text for --update-log.")
@click.option("--min-kappa", type=float, default=None, help="Exit 1 when Cohen's kappa is below this.")
@click.option("--min-agreement", type=float, default=None, help="Exit 1 when exact agreement is below this.")
@click.option("--min-spearman", type=float, default=None, help="Exit 1 when Spearman's rho is below this.")
@click.option("--min-kendall", type=float, default=None, help="Exit 1 when Kendall's tau-b is below this.")
@click.option("--judge-field", default=None, help="Field holding the judge's value (default: score).")
@click.option("--human-field", default=None, help="Field holding the human label (default: score, else label).")
@click.option("--judge-scale", default=None, help="Map judge values from LO-HI onto 0-1 (e.g. 1-5).")
@click.option("--human-scale", default=None, help="Map human labels from LO-HI onto 0-1 (e.g. 1-5).")
@click.option("--show", type=click.IntRange(0), default=None, help="Per-case rows to print (default: all).")
@click.option("--json-out", type=click.Path(dir_okay=False), default=None, help="Write every figure as JSON.")
@click.option("--n-boot", type=click.IntRange(100), default=DEFAULT_N_BOOT, show_default=True)
@click.option("--boot-seed", type=int, default=DEFAULT_SEED, show_default=True)
@click.option("--strict", is_flag=True,
              help="A malformed line is an error (exit 2) instead of a warning naming file and line.")
def command(judge_file: str, human_file: str, threshold: float, log_file: str | None, action: str,
            min_kappa: float | None, min_agreement: float | None, min_spearman: float | None,
            min_kendall: float | None, judge_field: str | None, human_field: str | None,
            judge_scale: str | None, human_scale: str | None, show: int | None, json_out: str | None,
            n_boot: int, boot_seed: int, strict: bool) -> int:
    """Compare JUDGE scores with HUMAN labels on the ids present in both files.

    Exit 1 when the mean absolute delta is above --threshold or a --min-* gate fails; 2 on bad input.
    """
    if log_file and not Path(log_file).is_file():
        # Checked before any work so that a typo does not surface after the whole report.
        raise InputError("calibration log file not found (--update-log)", file=log_file)
    js = parse_scale(judge_scale) if judge_scale else None
    hs = parse_scale(human_scale) if human_scale else None
    judge = read_labels(judge_file, field_name=judge_field, scale=js, strict=strict)
    human = read_labels(human_file, field_name=human_field, scale=hs, strict=strict)
    for w in [*judge.warnings, *human.warnings][:_MAX_WARNINGS]:
        echo_err(f"warning: {w}")
    n_warn = len(judge.warnings) + len(human.warnings)
    if n_warn > _MAX_WARNINGS:
        echo_err(f"warning: ... and {n_warn - _MAX_WARNINGS} more malformed lines skipped")
    cal = calibrate(judge, human, n_boot=n_boot, seed=boot_seed, judge_scaled=js is not None,
                    human_scaled=hs is not None)
    _print(cal, threshold, show)
    failures: list[str] = []
    if _above(cal.mean_abs_delta, threshold):
        failures.append(f"mean delta {cal.mean_abs_delta:.3f} is above the threshold {threshold:g}")
    st = cal.stats
    for name, gate, iv in (("kappa", min_kappa, st.kappa), ("exact agreement", min_agreement, st.exact),
                           ("Spearman rho", min_spearman, st.spearman), ("Kendall tau", min_kendall, st.kendall)):
        if gate is None:
            continue
        if iv is None or iv.estimate is None:
            failures.append(f"{name} is undefined for these labels, so the --min gate cannot pass")
        elif iv.estimate < gate:
            failures.append(f"{name} {iv.estimate:.3f} is below the minimum {gate:g}")
    if json_out:
        data = cal.to_dict()
        data.update(threshold=threshold, gate_failures=failures)
        Path(json_out).write_text(json.dumps(data, indent=2, allow_nan=False), encoding="utf-8")
    if log_file:
        row = update_log(log_file, cases=cal.n, mean_delta=cal.mean_abs_delta, action=action)
        echo_err(f"calibration log updated in {log_file}: {row}")
    for f in failures:
        echo_err(f"gate failed: {f}")
    return 1 if failures else 0
