"""``referee metaeval ...``: replay recorded judge verdicts against gold or human labels (no model is called)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from ..metaeval import (
    HANNA_JUDGES,
    absolute_meta,
    hanna_meta,
    judge_scores,
    judgebench_meta,
    judgebench_panel_data,
    llmbar_meta,
    llmbar_panel_data,
    metric_map,
    panel_meta,
    ragchecker_meta,
    read_human_ratings,
    read_ragchecker,
    replay_completions,
    results_meta,
    verdicts_meta,
    write_ragchecker_cases,
)
from ..metaeval import check_published as _check_published
from ..reports import render_absolute, render_hanna, render_judgebench, render_panel, render_ragchecker
from ..reports import render_pairwise_meta as _print_pairwise
from ..stats import DEFAULT_SEED
from ._common import echo_err


def _write_json(path: str | None, data: Any) -> None:
    if path:
        Path(path).write_text(json.dumps(data, indent=2, allow_nan=False), encoding="utf-8")
        echo_err(f"wrote {path}")


_json_opt = click.option("--json-out", type=click.Path(dir_okay=False), default=None, help="Write figures as JSON.")
_boot_opts = [click.option("--n-boot", type=click.IntRange(100), default=1000, show_default=True),
              click.option("--boot-seed", type=int, default=DEFAULT_SEED, show_default=True)]


def _boot(f: Any) -> Any:
    for o in reversed(_boot_opts):
        f = o(f)
    return f


@click.group("metaeval")
def command() -> None:
    """Meta-evaluate judges from recorded verdicts: accuracy, agreement, kappa, bias; no model is called."""


@command.command("llmbar")
@click.argument("root", type=click.Path(file_okay=False, exists=True))
@click.option("--subset", multiple=True, help="Only these subsets (e.g. Processed/MT-Bench); repeatable.")
@click.option("--evaluator", "evaluators", multiple=True, help="Only these judges (e.g. GPT-4); repeatable.")
@click.option("--strategy", multiple=True, default=("Vanilla_NoRules",), show_default=True,
              help="Only these prompting strategies; repeatable.")
@click.option("--check-published", is_flag=True,
              help="Recompute every cell of statistics_published.csv and exit 1 on any mismatch.")
@_json_opt
@_boot
def llmbar_cmd(root: str, subset: tuple[str, ...], evaluators: tuple[str, ...], strategy: tuple[str, ...],
               check_published: bool, json_out: str | None, n_boot: int, boot_seed: int) -> int:
    """LLMBar (ROOT = the folder holding verdicts.csv): accuracy per order, agreement, kappa, bias."""
    if check_published:
        check = _check_published(root)
        for m in check.mismatches:
            echo_err(f"mismatch: {m}")
        click.echo(f"{check.cells} published cells over {check.groups} (subset, judge, strategy) groups recomputed "
                   f"from verdicts.csv: {check.identical} identical, {len(check.mismatches)} different")
        return 1 if check.mismatches else 0
    out = llmbar_meta(root, subsets=subset, evaluators=evaluators, strategies=strategy, n_boot=n_boot,
                      seed=boot_seed)
    _print_pairwise(out)
    _write_json(json_out, {k: v.to_dict() for k, v in out.items()})
    return 0


@command.command("verdicts")
@click.argument("table", type=click.Path(dir_okay=False))
@_json_opt
@_boot
def verdicts_cmd(table: str, json_out: str | None, n_boot: int, boot_seed: int) -> int:
    """A verdict table (CSV: idx|id, label, winner_noswap, winner_swap [, subset, evaluator, strategy])."""
    out = verdicts_meta(table, n_boot=n_boot, seed=boot_seed)
    _print_pairwise(out)
    _write_json(json_out, {k: v.to_dict() for k, v in out.items()})
    return 0


@command.command("judgebench")
@click.argument("outputs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@_json_opt
@_boot
def judgebench_cmd(outputs: tuple[str, ...], json_out: str | None, n_boot: int, boot_seed: int) -> int:
    """JudgeBench judge outputs (outputs/<model>__<judge>__<judge_model>.jsonl), with JudgeBench's accuracy."""
    out = judgebench_meta(outputs, n_boot=n_boot, seed=boot_seed)
    _print_pairwise({k: v.meta for k, v in out.items()})
    render_judgebench(out)
    _write_json(json_out, {k: v.to_dict() for k, v in out.items()})
    return 0


@command.command("pairwise")
@click.argument("results", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--gold", type=click.Path(dir_okay=False), default=None,
              help="Gold labels JSONL {id, label: a|b|tie}. Without it only agreement and bias are shown.")
@_json_opt
@_boot
def pairwise_cmd(results: tuple[str, ...], gold: str | None, json_out: str | None, n_boot: int,
                 boot_seed: int) -> int:
    """referee pairwise results files: accuracy per order against gold, agreement, kappa, bias."""
    out = results_meta(results, gold=gold, n_boot=n_boot, seed=boot_seed)
    _print_pairwise(out, gold=gold is not None)
    _write_json(json_out, {k: v.to_dict() for k, v in out.items()})
    return 0


@command.command("absolute")
@click.argument("results", type=click.Path(dir_okay=False))
@click.option("--human", required=True, type=click.Path(dir_okay=False),
              help="Human ratings JSONL, one row per rater and case: {id, rater, score}.")
@_json_opt
@_boot
def absolute_cmd(results: str, human: str, json_out: str | None, n_boot: int, boot_seed: int) -> int:
    """Absolute judge scores vs several human raters: correlation with the human mean, leave-one-out ceiling."""
    m = absolute_meta(judge_scores(results), read_human_ratings(human), n_boot=n_boot, seed=boot_seed)
    render_absolute(m)
    _write_json(json_out, m.to_dict())
    return 0


@command.command("hanna")
@click.argument("csv_path", metavar="CSV", type=click.Path(dir_okay=False))
@click.option("--judge", "judges", multiple=True, type=click.Choice(list(HANNA_JUDGES)),
              help="Judges to report (default: all four); repeatable.")
@click.option("--prompt", "prompts", multiple=True, type=click.IntRange(1, 4), default=(1,), show_default=True,
              help="Prompt variants 1-4; repeatable.")
@click.option("--ci", is_flag=True, help="Bootstrap CIs for the story-level tau (slower).")
@_json_opt
@_boot
def hanna_cmd(csv_path: str, judges: tuple[str, ...], prompts: tuple[int, ...], ci: bool, json_out: str | None,
              n_boot: int, boot_seed: int) -> int:
    """HANNA story ratings (hanna_metric_scores_llm.csv): Kendall tau-b of each LLM judge vs the human mean."""
    rep = hanna_meta(csv_path, judges=judges or HANNA_JUDGES, prompts=prompts, ci=ci, n_boot=n_boot,
                     seed=boot_seed)
    render_hanna(rep)
    _write_json(json_out, rep)
    return 0


@command.command("ragchecker")
@click.argument("root", type=click.Path(file_okay=False))
@click.option("--results", type=click.Path(dir_okay=False), default=None,
              help="A referee results file over the cases --write-cases writes: its rows beside RAGChecker's.")
@click.option("--metric", "metric_pairs", multiple=True, metavar="ASPECT=NAME",
              help="Evaluator or criterion read for an aspect (default correctness=claim_precision, "
                   "completeness=claim_recall, overall=claim_f1); repeatable.")
@click.option("--write-cases", type=click.Path(dir_okay=False), default=None,
              help="Write the 560 answers as a JSONL cases file (ids <instance_id>:model1|model2) and stop.")
@_json_opt
def ragchecker_cmd(root: str, results: str | None, metric_pairs: tuple[str, ...], write_cases: str | None,
                   json_out: str | None) -> int:
    """RAGChecker's human preferences (ROOT = the folder with human_labeled_data.json and
    baseline_ragchecker.json): the paper's Table 2 from the recorded scores, and referee's own rows."""
    metrics = metric_map(metric_pairs)
    if write_cases:
        n = write_ragchecker_cases(read_ragchecker(root), write_cases)
        echo_err(f"wrote {n} cases to {write_cases}")
        return 0
    meta = ragchecker_meta(root, results=results, metrics=metrics)
    render_ragchecker(meta)
    _write_json(json_out, meta.to_dict())
    return 0


@command.command("panel")
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--subset", multiple=True, help="LLMBar: only these subsets (default: Natural and the four "
              "Adversarial ones); repeatable.")
@click.option("--evaluator", "evaluators", multiple=True, help="LLMBar: only these judges; repeatable.")
@click.option("--strategy", multiple=True, default=("Vanilla_NoRules",), show_default=True,
              help="LLMBar: prompting strategies; with several, each (judge, strategy) is a panel member.")
@click.option("--max-size", type=click.IntRange(2, 12), default=5, show_default=True,
              help="Largest panel scored.")
@click.option("--folds", type=click.IntRange(2, 50), default=5, show_default=True,
              help="Cross-validation folds for choosing a panel on held-out pairs.")
@click.option("--top", type=click.IntRange(1), default=10, show_default=True,
              help="In-sample panels shown (and given an alpha interval).")
@_json_opt
@_boot
def panel_cmd(sources: tuple[str, ...], subset: tuple[str, ...], evaluators: tuple[str, ...],
              strategy: tuple[str, ...], max_size: int, folds: int, top: int, json_out: str | None, n_boot: int,
              boot_seed: int) -> int:
    """Panels of recorded judges on the same pairs: each judge's accuracy, every panel under each rule
    (majority, mean, median, unanimous; weighted in the cross-validation) against the best single judge,
    alpha, effective votes, and a panel chosen by cross-validation.

    SOURCES: JudgeBench output files of one response model (one judge each), or one LLMBar folder (the one
    holding verdicts.csv)."""
    paths = [Path(s) for s in sources]
    if len(paths) == 1 and paths[0].is_dir():
        data = llmbar_panel_data(paths[0], subsets=subset, evaluators=evaluators, strategies=strategy)
    elif any(p.is_dir() for p in paths):
        raise click.UsageError("give one LLMBar folder, or JudgeBench output files")
    else:
        data = judgebench_panel_data(paths)
    meta = panel_meta(data, max_size=max_size, folds=folds, top=top, n_boot=n_boot, seed=boot_seed)
    render_panel(meta, top=top)
    _write_json(json_out, meta.to_dict())
    return 0


@command.command("parse")
@click.argument("raw_files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--show", type=click.IntRange(0), default=10, show_default=True, help="Disagreements to list.")
def parse_cmd(raw_files: Sequence[str], show: int) -> int:
    """Replay recorded judge completions (LLMBar raw_results/*.jsonl) through referee's pairwise reply parser.

    Reports the share that parses to the recorded verdict; unparseable replies come out unscored.
    """
    rep = replay_completions(raw_files, show=show)
    click.echo(f"{rep.total} recorded completions: {rep.parsed} parse to a winner; {rep.agree} "
               f"({rep.agree / rep.total:.2%}) give the recorded verdict; {rep.unparsed_ok} of the "
               f"{rep.recorded_unparsed} recorded as unparsed come out unscored")
    for b in rep.differences:
        click.echo(f"differs: {b}")
    return 0
