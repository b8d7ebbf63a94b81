"""``referee calibrate JUDGE HUMAN``: how far the judge's scores are from human labels, with a CI gate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ..aggregate import PASS_RULES
from ..calibrate import calibrate, judge_labels, parse_scale, read_labels, update_log
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
@click.option("--pass-threshold", type=click.FloatRange(0, 1), default=None,
              help="Give the judge's rows pass/fail verdicts, so pass/fail labels meet verdicts rather than scores: a "
                   "row without its own 'passed' passes when score >= this (as referee score --threshold; the "
                   "viewer's agreement uses its --threshold). Default: scores, as calibrate_judge.py.")
@click.option("--pass-rule", type=click.Choice(PASS_RULES), default="threshold", show_default=True,
              help="As referee score --pass-rule, for the judge's verdicts.")
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
@click.option("--target-agreement", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=None,
              help="Escalation: choose the confidence threshold whose kept verdicts agree with the humans at least "
                   "this often (with --guarantee confidence); exit 1 when no threshold can.")
@click.option("--guarantee", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.9,
              show_default=True, help="Confidence that the kept verdicts meet --target-agreement.")
@click.option("--holdout", type=click.FloatRange(0, 1, max_open=True), default=0.5, show_default=True,
              help="Share of the labelled cases held out to check the threshold on (the rest choose it).")
@click.option("--confidence-from", "basis", type=click.Choice(["agreement", "margin"]), default=None,
              help="A case's confidence: its panel's agreement (default with a panel) or the judge's score "
                   "margin from --pass-mark (default without).")
@click.option("--pass-mark", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.7,
              show_default=True, help="The pass mark the margin confidence is measured from.")
@click.option("--escalated-out", type=click.Path(dir_okay=False), default=None,
              help="Write the ids of the cases below the threshold (for a stronger judge or a human) as JSONL.")
def command(judge_file: str, human_file: str, threshold: float, pass_threshold: float | None, pass_rule: str,
            log_file: str | None, action: str | None,
            min_kappa: float | None, min_agreement: float | None, min_spearman: float | None,
            min_kendall: float | None, judge_field: str | None, human_field: str | None,
            judge_scale: str | None, human_scale: str | None, show: int | None, json_out: str | None,
            n_boot: int, boot_seed: int, strict: bool, target_agreement: float | None, guarantee: float,
            holdout: float, basis: str | None, pass_mark: float, escalated_out: str | None) -> int:
    """Compare JUDGE scores with HUMAN labels on the ids present in both files.

    Exit 1 when the mean absolute delta is above --threshold or a --min-* gate fails; 2 on bad input.
    """
    if log_file and not Path(log_file).is_file():
        # Checked before any work so that a typo does not surface after the whole report.
        raise InputError("calibration log file not found (--update-log)", file=log_file)
    js = parse_scale(judge_scale) if judge_scale else None
    hs = parse_scale(human_scale) if human_scale else None
    judge = judge_labels(judge_file, threshold=pass_threshold, pass_rule=pass_rule, field_name=judge_field, scale=js,
                         strict=strict)
    human = read_labels(human_file, field_name=human_field, scale=hs, strict=strict)
    for w in [*judge.warnings, *human.warnings][:_MAX_WARNINGS]:
        echo_err(f"warning: {w}")
    n_warn = len(judge.warnings) + len(human.warnings)
    if n_warn > _MAX_WARNINGS:
        echo_err(f"warning: ... and {n_warn - _MAX_WARNINGS} more malformed lines skipped")
    repeated = human.repeat_warning("human label")  # two labellers, or one file appended twice: said, not hidden
    if repeated:
        echo_err(f"warning: {repeated}")
    cal = calibrate(judge, human, n_boot=n_boot, seed=boot_seed, judge_scaled=js is not None,
                    human_scaled=hs is not None)
    # The seed's report on stdout (scripts parse it: the per-case deltas and the verdict), and on stderr only what
    # it lacks (the agreement statistics, the confusion matrix, the notes), so nothing is printed twice.
    seed_lines, seed_action = seed_calibration_lines(cal, threshold, show)
    render_calibration(cal, threshold, show, stderr=True, seed_report=True)
    for line in seed_lines:
        click.echo(display_text(line))
    failures = cal.gate_failures(threshold, min_kappa=min_kappa, min_agreement=min_agreement,
                                 min_spearman=min_spearman, min_kendall=min_kendall)
    panels = _panels(judge_file, human_file, human_field, n_boot, boot_seed)
    esc = None
    if target_agreement is not None:
        esc = _escalation(judge_file, human, target=target_agreement, guarantee=guarantee, holdout=holdout,
                          basis=basis or ("agreement" if panels else "margin"), pass_mark=pass_mark, seed=boot_seed,
                          escalated_out=escalated_out)
        if not esc.choice.met:
            failures.append(f"no confidence threshold meets {target_agreement:.0%} agreement with "
                            f"{guarantee:.0%} confidence on the calibration split")
    if json_out:
        data = cal.to_dict()
        data.update(threshold=threshold, gate_failures=failures)
        if panels:
            data["panels"] = [p.to_dict() for p in panels]
        if esc is not None:
            data["escalation"] = esc.to_dict()
        Path(json_out).write_text(json.dumps(data, indent=2, allow_nan=False), encoding="utf-8")
    if log_file:
        row = update_log(log_file, cases=cal.n, mean_delta=cal.mean_abs_delta,
                         action=seed_action if action is None else action)
        echo_err(f"calibration log updated in {log_file}: {row}")
        click.echo(display_text(f"\nLogged to {log_file}"))
    for f in failures:
        echo_err(f"gate failed: {f}")
    return 1 if failures else 0


def _panels(judge_file: str, human_file: str, human_field: str | None, n_boot: int, seed: int) -> list[Any]:
    """A judge panel's figures (agreement, effective votes, panel vs each judge on the labels), printed on
    stderr, when JUDGE is a results file of a panel run; else nothing."""
    from ..calibrate import panel_agreement
    from ..reports import render_panel_agreement
    from ..results import panel_of, read_results

    try:
        rows = read_results(judge_file).rows
    except InputError:
        return []
    if not any(panel_of(r) is not None for r in rows):
        return []
    labels = {k: v for k, v in read_labels(human_file, field_name=human_field).values.items()}
    reps = panel_agreement(rows, labels, n_boot=n_boot, seed=seed)
    render_panel_agreement(reps, stderr=True)
    return reps


def _escalation(judge_file: str, human: Any, *, target: float, guarantee: float, holdout: float, basis: str,
                pass_mark: float, seed: int, escalated_out: str | None) -> Any:
    """The escalation threshold from the labels (printed on stderr), and the escalated ids written."""
    from ..calibrate import escalation_report, min_kept
    from ..results import read_results

    rows = read_results(judge_file).rows
    rep = escalation_report(rows, human.values, target=target, confidence=guarantee, holdout=holdout,
                            basis=basis, pass_mark=pass_mark, seed=seed)  # type: ignore[arg-type]
    ch = rep.choice
    echo_err(f"escalation ({basis} confidence): {ch.n} labelled cases choose the threshold, {rep.held_out} are "
             "held out to check it")
    if not ch.met:
        echo_err(f"  no threshold meets {target:.0%} agreement with {guarantee:.0%} confidence on the calibration "
                 "split: nothing is kept automatically; every case needs a stronger judge or a human (showing it "
                 f"takes at least {min_kept(target, guarantee)} kept verdicts that all agree; the split has {ch.n})")
    else:
        lb = f"{ch.lower_bound:.1%}" if ch.lower_bound is not None else "n/a"
        echo_err(f"  threshold {ch.threshold:.3f}: keeps {ch.kept} of {ch.n} calibration verdicts, {ch.agree} agree "
                 f"(lower bound {lb} >= {target:.0%} at {guarantee:.0%} confidence)")
        ha = rep.held_out_agreement
        held = "no held-out verdict kept" if ha is None else (
            f"{ha[0]:.1%} [{ha[1]:.1%}, {ha[2]:.1%}] over {rep.held_out_kept} kept")
        echo_err(f"  held out: agreement of the kept verdicts {held}")
        echo_err(f"  coverage: {rep.coverage:.1%} of the run's {rep.cases} cases kept; {len(rep.escalated)} escalated")
        if rep.cost_per_kept is not None:
            echo_err(f"  cost per kept verdict ${rep.cost_per_kept:.5f} (the run's ${rep.cost_usd:.4f} over the kept)")
        if basis == "agreement":
            echo_err(f"  to apply it: panel: {{escalate_below: {ch.threshold:.3f}}} in the suite (with escalate_to: "
                     "a stronger judge, or none: those cases are left for a human)")
    if escalated_out:
        ids = rep.escalated if ch.met else sorted({r.id for r in rows})
        Path(escalated_out).write_text("".join(json.dumps({"id": i, "needs": "escalation"}) + "\n" for i in ids),
                                       encoding="utf-8")
        echo_err(f"wrote {len(ids)} escalated case id(s) to {escalated_out}")
    return rep
