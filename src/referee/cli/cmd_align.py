"""``referee align RESULTS LABELS``: an aligned judge from human labels, kept only when held-out cases say it
helps (over the raw judge and over a no-judge baseline)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ..alignment import (
    DEFAULT_EXAMPLES,
    DEFAULT_HOLDOUT,
    DEFAULT_TARGET_WIDTH,
    MAX_CANDIDATES,
    MAX_EXAMPLES,
    METHODS,
    METRICS,
    JudgeRunner,
    align,
    estimate_alignment,
    methods_in_order,
    read_human_labels,
)
from ..calibrate import parse_scale, update_log
from ..errors import UserError
from ..stats import DEFAULT_N_BOOT, DEFAULT_SEED
from ..store import StoreError, display_url, normalise_url
from ._common import echo_err


@click.command("align")
@click.argument("results", type=click.Path(dir_okay=False))
@click.argument("labels", type=click.Path(dir_okay=False))
@click.option("--method", "methods", multiple=True, metavar="|".join(METHODS),
              help="How to align (repeatable, or a comma list; composed in this order): examples (labelled cases in "
                   "the judge's prompt), instructions (an optimizer model rewrites the rubric), map (a monotone map "
                   "from the judge's score to the labels' scale, no model call; the default).")
@click.option("--suite", "suite_path", default=None, type=click.Path(dir_okay=False),
              help="The suite RESULTS was run with: its cases and judge are re-run by examples and instructions.")
@click.option("--entry", default=None, help="The suite's LLM judge entry to align (its id; default: its only one).")
@click.option("--optimizer", default=None, metavar="PROVIDER[:MODEL]",
              help="The model that proposes rewrites of the rubric (--method instructions); any configured provider.")
@click.option("--optimizer-base-url", default=None, help="The optimizer's server (an OpenAI-compatible base URL).")
@click.option("--optimizer-prices", default=None, metavar="IN,OUT",
              help="The optimizer's USD per million input and output tokens (for --dry-run and the cost).")
@click.option("--examples", "n_examples", type=click.IntRange(1, MAX_EXAMPLES), default=DEFAULT_EXAMPLES,
              show_default=True, help="Labelled cases shown to the judge (--method examples).")
@click.option("--candidates", type=click.IntRange(1, MAX_CANDIDATES), default=MAX_CANDIDATES, show_default=True,
              help="Rewrites the optimizer proposes, each scored on training labels (--method instructions).")
@click.option("--force", is_flag=True,
              help="Align even when RESULTS was judged by another model or template than the suite's judge (a "
                   "warning instead of a refusal).")
@click.option("-o", "--out", default=None, type=click.Path(dir_okay=False),
              help="Where the aligned judge goes (default: RESULTS' stem + .aligned.json); written only when kept.")
@click.option("--threshold", type=click.FloatRange(0, 1), default=0.7, show_default=True,
              help="The raw judge's pass mark, as referee score --threshold (its verdict for pass/fail labels).")
@click.option("--id-field", default="id", show_default=True, help="The labels' id field or CSV column.")
@click.option("--label-field", default=None, help="The labels' value field or CSV column (default: score, label, "
                                                  "human_score, passed).")
@click.option("--group", "group_field", default=None,
              help="A field (in the labels, or the rows' metadata) whose cases stay on one side of the split: the same "
                   "prompt, the same source.")
@click.option("--reviewer", "reviewers", multiple=True, help="Use only this reviewer's labels (repeatable); several "
                                                           "reviewers: their consensus.")
@click.option("--human-scale", default=None, help="The labels' scale LO-HI (e.g. 1-5), read onto 0-1.")
@click.option("--holdout", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=DEFAULT_HOLDOUT,
              show_default=True, help="Share of the labelled cases held out to decide on.")
@click.option("--split-seed", type=int, default=0, show_default=True, help="The fixed split's seed.")
@click.option("--metric", type=click.Choice(METRICS), default=None,
              help="The decision metric (default: kappa for pass/fail labels, Krippendorff's alpha for scores).")
@click.option("--human-pass", type=float, default=None,
              help="A passing label (0-1 scale) for score labels: the aligned judge's pass mark is where its map "
                   "reaches it.")
@click.option("--target-width", type=click.FloatRange(0, min_open=True), default=None,
              help="Exit 2 when the gain's interval is wider than +-W. The report always says how many more labels "
                   f"would narrow it to +-W (default {DEFAULT_TARGET_WIDTH:g}).")
@click.option("--min-gain", type=float, default=None,
              help="Exit 1 unless an aligned judge is written with a gain whose lower bound over both references is at "
                   "least this.")
@click.option("--update-log", "log_file", type=click.Path(dir_okay=False), default=None,
              help="Record the alignment in the judge prompt's calibration table.")
@click.option("--json-out", type=click.Path(dir_okay=False), default=None, help="Write every figure as JSON.")
@click.option("--store", "store_url", default=None, metavar="URL",
              help="Record the alignment and the labels in this run history (default: REFEREE_STORE, else "
                   ".referee/history.sqlite at the repository's top level).")
@click.option("--no-store", is_flag=True, help="Do not record the alignment in the run history.")
@click.option("--dry-run", is_flag=True, help="Say what alignment would cost, and call nothing.")
@click.option("--n-boot", type=click.IntRange(100), default=DEFAULT_N_BOOT, show_default=True)
@click.option("--boot-seed", type=int, default=DEFAULT_SEED, show_default=True)
def command(results: str, labels: str, methods: tuple[str, ...], suite_path: str | None, entry: str | None,
            optimizer: str | None, optimizer_base_url: str | None, optimizer_prices: str | None, n_examples: int,
            candidates: int, force: bool, out: str | None, threshold: float, id_field: str,
            label_field: str | None, group_field: str | None, reviewers: tuple[str, ...], human_scale: str | None,
            holdout: float, split_seed: int, metric: str | None, human_pass: float | None,
            target_width: float | None,
            min_gain: float | None, log_file: str | None, json_out: str | None, store_url: str | None,
            no_store: bool, dry_run: bool, n_boot: int, boot_seed: int) -> int:
    """Fit an aligned judge on some of LABELS, measure it on the others against RESULTS' raw judge and a no-judge
    baseline, and write it only when its held-out gain over both is above 0.

    Exit 0 (written or not), 1 when --min-gain fails, 2 on bad input or an interval wider than --target-width.
    """
    if no_store and store_url:
        raise UserError("--store and --no-store contradict each other; give one")
    methods = methods_in_order(methods)
    model_methods = [m for m in methods if m in ("examples", "instructions")]
    if model_methods and not suite_path:
        raise UserError(f"--method {'+'.join(model_methods)} re-runs the judge: give the suite RESULTS was run "
                        "with (--suite)")
    if "instructions" in methods and not optimizer:
        raise UserError("--method instructions needs an optimizer model: --optimizer PROVIDER[:MODEL]")
    opt_price = _prices(optimizer_prices) if optimizer_prices else None
    inputs = {Path(results).resolve(), Path(labels).resolve()}
    dest = Path(out) if out else Path(results).with_name(Path(results).name.split(".")[0] + ".aligned.json")
    if dest.resolve() in inputs or (json_out and Path(json_out).resolve() in inputs):
        raise UserError(f"{dest if dest.resolve() in inputs else json_out} is an input: an output never "
                        "overwrites an input")
    suite: Any = None
    judge: Any = None
    if model_methods:
        assert suite_path is not None
        suite, judge = _suite_judge(suite_path)
    if dry_run:
        from ..calibrate import judge_labels

        n = 0
        if model_methods:
            hl = read_human_labels(labels, id_field=id_field, label_field=label_field, group_field=group_field,
                                   scale=parse_scale(human_scale) if human_scale else None,
                                   reviewers=list(reviewers) or None)
            n = len(set(hl.values) & set(judge_labels(Path(results), threshold=threshold).values))
        spec = None
        if suite is not None:
            spec = next((s for s in suite.specs if s.is_llm and (entry is None or s.label == entry)), None)
            if spec is None:
                raise UserError(f"{suite_path}: no LLM judge entry" + (f" {entry!r}" if entry else ""))
        price = None
        if judge is not None and judge.input_price_per_mtok is not None and judge.output_price_per_mtok is not None:
            price = (judge.input_price_per_mtok, judge.output_price_per_mtok)
        est = estimate_alignment(methods, judge=None if spec is None else spec.evaluator,
                                 cases={} if suite is None else {c.id: c for c in suite.cases}, n_labels=n,
                                 holdout=holdout, examples=n_examples, candidates=candidates,
                                 max_tokens=judge.max_tokens if judge is not None else 1024,
                                 judge_price=price, optimizer_price=opt_price)
        for line in est.lines:
            click.echo(line)
        return 0
    runner = None
    opt_client = None
    if suite is not None:
        runner = JudgeRunner.of(suite, judge, entry=entry)
    if "instructions" in methods and optimizer:
        from .. import Judge

        oi, oo = opt_price if opt_price else (None, None)
        opt_client = Judge(optimizer, base_url=optimizer_base_url, input_price_per_mtok=oi,
                           output_price_per_mtok=oo).client()
    al = align(results, labels, method=methods, threshold=threshold, label_field=label_field, id_field=id_field,
               group_field=group_field, reviewers=list(reviewers) or None,
               human_scale=parse_scale(human_scale) if human_scale else None, holdout=holdout, split_seed=split_seed,
               metric=metric, human_pass=human_pass, target_width=target_width or DEFAULT_TARGET_WIDTH, n_boot=n_boot,
               seed=boot_seed, judge=runner, optimizer=opt_client, examples=n_examples, candidates=candidates,
               force=force)
    for line in al.lines():
        click.echo(line)
    if al.aligned is not None:
        al.aligned.save(dest)
        click.echo(f"aligned judge {al.aligned.hash} (refitted on all {al.n_labels} labels) written to {dest}")
    if json_out:
        Path(json_out).write_text(json.dumps(al.to_dict(), indent=2, allow_nan=False), encoding="utf-8")
    if not no_store:
        try:
            if al.record(normalise_url(store_url) if store_url else None):
                echo_err("recorded in the run history" + (f" ({display_url(store_url)})" if store_url else ""))
        except StoreError as exc:  # the aligned judge is already written: the history only misses it
            echo_err(f"warning: not recorded in the run history: {exc}")
    if log_file:
        mae = al.figures.values["aligned" if al.written else "raw"].get("mae")
        delta = mae.estimate if mae is not None and mae.estimate is not None else float("nan")
        action = (f"aligned judge {al.aligned.hash} written ({'+'.join(al.method)})" if al.aligned is not None
                  else "alignment refused: held-out gain not above 0; judge kept")
        row = update_log(log_file, cases=len(al.split.heldout), mean_delta=delta, action=action)
        echo_err(f"calibration log updated in {log_file}: {row}")
    code = 0
    if min_gain is not None and not al.passes_min_gain(min_gain):
        echo_err(f"gate failed: no aligned judge with a held-out gain of at least {min_gain:g} over both references")
        code = 1
    if target_width is not None and al.too_wide:
        hw = "undefined" if al.half_width is None else f"+-{al.half_width:.3f}"
        echo_err(f"the gain's interval is {hw}, wider than --target-width +-{target_width:g}: label more cases")
        code = 2
    return code


def _prices(text: str) -> tuple[float, float]:
    import math

    try:
        a, b = (float(x) for x in text.split(","))
    except ValueError:
        raise UserError(f"--optimizer-prices {text!r}: give IN,OUT (USD per million tokens), e.g. 0.15,0.6") from None
    if not all(math.isfinite(v) and v >= 0 for v in (a, b)):
        raise UserError(f"--optimizer-prices {text!r}: prices are finite numbers >= 0")
    return a, b


def _suite_judge(path: str) -> tuple[Any, Any]:
    """The suite RESULTS was run with, and the judge (provider) it runs with."""
    from .. import Judge
    from ..suites import load_suite

    suite = load_suite(path)
    return suite, Judge.for_suite(suite.judge, concurrency=suite.concurrency)
