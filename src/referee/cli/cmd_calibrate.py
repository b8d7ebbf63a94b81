"""``referee calibrate JUDGE HUMAN``: how far the judge's scores are from human labels, with a CI gate."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..calibrate import calibrate, parse_scale, read_labels, update_log
from ..errors import InputError
from ..reports import display_text, render_calibration, seed_calibration_lines
from ..stats import DEFAULT_N_BOOT, DEFAULT_SEED
from ._common import echo_err

_MAX_WARNINGS = 20


@click.command("calibrate")
@click.argument("judge_file", metavar="JUDGE", type=click.Path(dir_okay=False))
@click.argument("human_file", metavar="HUMAN", type=click.Path(dir_okay=False))
@click.option("--threshold", type=float, default=0.2, show_default=True,
              help="Exit 1 when the mean absolute delta is above this.")
@click.option("--update-log", "log_file", type=click.Path(dir_okay=False), default=None,
              help="Record this check in the judge prompt's calibration table.")
@click.option("--action", default=None,
              help="'Action taken' text for --update-log (default: calibrate_judge.py's, 'ACTION NEEDED: mean delta ... "
                   "exceeds ... — revise the judge prompt' or 'none needed (...)').")
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
def command(judge_file: str, human_file: str, threshold: float, log_file: str | None, action: str | None,
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
    # The seed's report on stdout (scripts parse it), referee's tables and statistics on stderr.
    seed_lines, seed_action = seed_calibration_lines(cal, threshold)
    render_calibration(cal, threshold, show, stderr=True)
    for line in seed_lines:
        click.echo(display_text(line))
    failures = cal.gate_failures(threshold, min_kappa=min_kappa, min_agreement=min_agreement,
                                 min_spearman=min_spearman, min_kendall=min_kendall)
    if json_out:
        data = cal.to_dict()
        data.update(threshold=threshold, gate_failures=failures)
        Path(json_out).write_text(json.dumps(data, indent=2, allow_nan=False), encoding="utf-8")
    if log_file:
        row = update_log(log_file, cases=cal.n, mean_delta=cal.mean_abs_delta,
                         action=seed_action if action is None else action)
        echo_err(f"calibration log updated in {log_file}: {row}")
        click.echo(display_text(f"\nLogged to {log_file}"))
    for f in failures:
        echo_err(f"gate failed: {f}")
    return 1 if failures else 0
