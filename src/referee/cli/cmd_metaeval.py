"""``referee metaeval ...``: replay recorded judge verdicts against gold or human labels (no model is called)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from ..errors import InputError, UserError
from ..metaeval import _hanna
from ..metaeval._judgebench import judgebench_accuracy, judgebench_by_category, read_outputs
from ..metaeval._llmbar import (
    dataset_path,
    parse_raw,
    read_lengths,
    read_published,
    read_raw_results,
    read_verdicts,
    with_lengths,
)
from ..metaeval._pairwise import PairVerdict, PairwiseMeta, llmbar_statistics, pairwise_meta
from ..metaeval._results import (
    absolute_meta,
    judge_scores,
    pairwise_from_results,
    read_gold,
    read_human_ratings,
)
from ..reports._metaeval import console as _console
from ..reports._metaeval import render_pairwise_meta as _print_pairwise
from ..stats._agreement import interval_text
from ..stats._bootstrap import DEFAULT_SEED
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
    groups = read_verdicts(Path(root) / "verdicts.csv")
    if check_published:
        return _check_published(root, groups)
    sel = {k: v for k, v in groups.items()
           if (not subset or k[0] in subset) and (not evaluators or k[1] in evaluators)
           and (not strategy or k[2] in strategy)}
    if not sel:
        raise UserError("no verdicts match the --subset/--evaluator/--strategy filters")
    lengths: dict[str, list[tuple[int, int]]] = {}
    out: dict[str, PairwiseMeta] = {}
    for key, items in sorted(sel.items()):
        ds = dataset_path(root, key[0])
        if ds.exists():
            lengths.setdefault(key[0], read_lengths(ds))
            items = with_lengths(items, lengths[key[0]])
        out[" ".join(key)] = pairwise_meta(items, n_boot=n_boot, seed=boot_seed)
    _print_pairwise(out)
    _write_json(json_out, {k: v.to_dict() for k, v in out.items()})
    return 0


def _check_published(root: str, groups: dict[tuple[str, ...], list[PairVerdict]]) -> int:
    pub_path = Path(root) / "statistics_published.csv"
    if not pub_path.exists():
        raise InputError("file not found", file=str(pub_path))
    published = read_published(pub_path)
    mismatches = 0
    cells = 0
    for key, row in published.items():
        if key not in groups:
            echo_err(f"mismatch: {'/'.join(key)} has published statistics but no verdicts")
            mismatches += 1
            continue
        mine = llmbar_statistics(groups[key])
        for col, val in mine.items():
            cells += 1
            if not _same_cell(row[col], val):
                mismatches += 1
                echo_err(f"mismatch: {' '.join(key)} {col}: published {row[col]}, recomputed {val}")
    click.echo(f"{cells} published cells over {len(published)} (subset, judge, strategy) groups recomputed "
               f"from verdicts.csv: {cells - mismatches} identical, {mismatches} different")
    return 1 if mismatches else 0


def _same_cell(published: str, value: str | float) -> bool:
    if isinstance(value, str):
        return published == value
    if published.lower() == "nan":
        return value != value
    # Compare at the precision the CSV was written with (repr of a float: exact round trip).
    return float(published) == value or abs(float(published) - value) <= 1e-15


@command.command("verdicts")
@click.argument("table", type=click.Path(dir_okay=False))
@_json_opt
@_boot
def verdicts_cmd(table: str, json_out: str | None, n_boot: int, boot_seed: int) -> int:
    """A verdict table (CSV: idx|id, label, winner_noswap, winner_swap [, subset, evaluator, strategy])."""
    groups = read_verdicts(table)
    out = {(" ".join(k) or Path(table).name): pairwise_meta(v, n_boot=n_boot, seed=boot_seed)
           for k, v in sorted(groups.items())}
    _print_pairwise(out)
    _write_json(json_out, {k: v.to_dict() for k, v in out.items()})
    return 0


@command.command("judgebench")
@click.argument("outputs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@_json_opt
@_boot
def judgebench_cmd(outputs: tuple[str, ...], json_out: str | None, n_boot: int, boot_seed: int) -> int:
    """JudgeBench judge outputs (outputs/<model>__<judge>__<judge_model>.jsonl), with JudgeBench's accuracy."""
    out: dict[str, PairwiseMeta] = {}
    acc: dict[str, float] = {}
    by_cat: dict[str, dict[str, tuple[int, float]]] = {}
    for path in outputs:
        items = read_outputs(path)
        name = Path(path).stem
        out[name] = pairwise_meta(items, n_boot=n_boot, seed=boot_seed)
        acc[name] = judgebench_accuracy(items)
        by_cat[name] = judgebench_by_category(items)
    _print_pairwise(out)
    cats = list(dict.fromkeys(c for per in by_cat.values() for c in per))
    t = Table(title="JudgeBench accuracy per category (%, pairs in brackets; a pair is correct when the two "
                    "orders' +1/-1/0 sum is > 0)", title_justify="left")
    for c in ("judge", *cats, "overall"):
        t.add_column(c, justify="left" if c == "judge" else "right")
    for name, per in by_cat.items():
        cells = [f"{per[c][1] * 100:.2f} ({per[c][0]})" if c in per else "-" for c in cats]
        t.add_row(name, *cells, f"{acc[name] * 100:.2f} ({sum(n for n, _ in per.values())})")
    _console().print(t)
    for name, a in acc.items():
        click.echo(f"JudgeBench accuracy (pair correct when the two orders' +1/-1/0 sum is > 0): {name}: "
                   f"{a * 100:.2f}%")
    _write_json(json_out, {k: {**v.to_dict(), "judgebench_accuracy": acc[k],
                               "judgebench_by_category": {c: {"pairs": n, "accuracy": a}
                                                          for c, (n, a) in by_cat[k].items()}}
                           for k, v in out.items()})
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
    labels = read_gold(gold) if gold else None
    out: dict[str, PairwiseMeta] = {}
    for path in results:
        items = pairwise_from_results(path, labels)
        if labels is not None and not any(v.label is not None for v in items):
            raise UserError(f"no ids in common between {path} and {gold}")
        out[path] = pairwise_meta(items, n_boot=n_boot, seed=boot_seed)
    _print_pairwise(out, gold=labels is not None)
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
    con = _console()
    con.print(f"{m.n} case(s), {m.raters} rater(s)")
    tiny = "too small a sample"
    con.print(f"Spearman rho vs human mean: {interval_text(m.spearman, zero_width=tiny)}")
    con.print(f"Kendall tau-b vs human mean: {interval_text(m.kendall, zero_width=tiny)}")
    ck = "n/a" if m.ceiling_kendall is None else f"{m.ceiling_kendall:.3f}"
    cs = "n/a" if m.ceiling_spearman is None else f"{m.ceiling_spearman:.3f}"
    con.print(f"human ceiling (each rater vs mean of the others): Kendall {ck}, Spearman {cs}")
    for n in m.notes:
        con.print(f"note: {n}")
    _write_json(json_out, m.to_dict())
    return 0


@command.command("hanna")
@click.argument("csv_path", metavar="CSV", type=click.Path(dir_okay=False))
@click.option("--judge", "judges", multiple=True, type=click.Choice(list(_hanna.JUDGES)),
              help="Judges to report (default: all four); repeatable.")
@click.option("--prompt", "prompts", multiple=True, type=click.IntRange(1, 4), default=(1,), show_default=True,
              help="Prompt variants 1-4; repeatable.")
@click.option("--ci", is_flag=True, help="Bootstrap CIs for the story-level tau (slower).")
@_json_opt
@_boot
def hanna_cmd(csv_path: str, judges: tuple[str, ...], prompts: tuple[int, ...], ci: bool, json_out: str | None,
              n_boot: int, boot_seed: int) -> int:
    """HANNA story ratings (hanna_metric_scores_llm.csv): Kendall tau-b of each LLM judge vs the human mean."""
    js = judges or _hanna.JUDGES
    table = _hanna.read_hanna(csv_path, columns=_hanna.needed_columns(js, prompts))
    rep = _hanna.report(table, judges=js, prompts=prompts, ci=ci, n_boot=n_boot, seed=boot_seed)
    con = _console()
    codes = list(_hanna.CRITERIA)
    for level, title in (("story_level", f"Story level ({rep['n_stories']} generated stories)"),
                         ("system_level", f"System level ({rep['n_systems']} systems)")):
        t = Table(title=f"{title}: Kendall tau-b vs the mean of 3 human raters", title_justify="left")
        t.add_column("judge")
        for c in codes:
            t.add_column(c, justify="right")
        if level == "story_level":
            t.add_row("human leave-one-out ceiling", *[f"{rep['human_leave_one_out'][c]:.3f}" for c in codes])
        for name, vals in rep[level].items():
            cells = []
            for c in codes:
                v = vals[c]
                if isinstance(v, dict):
                    cell = f"{v['tau_b']:.3f}" if v["tau_b"] is not None else "n/a"
                    if v.get("lo") is not None:
                        cell += f" [{v['lo']:.3f}, {v['hi']:.3f}]"
                else:
                    cell = "n/a" if v != v else f"{v:.3f}"
                cells.append(cell)
            t.add_row(name, *cells)
        con.print(t)
    _write_json(json_out, rep)
    return 0


@command.command("parse")
@click.argument("raw_files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--show", type=click.IntRange(0), default=10, show_default=True, help="Disagreements to list.")
def parse_cmd(raw_files: Sequence[str], show: int) -> int:
    """Replay recorded judge completions (LLMBar raw_results/*.jsonl) through referee's pairwise reply parser.

    Reports the share that parses to the recorded verdict; unparseable replies come out unscored.
    """
    total = agree = parsed = rec_unparsed = unparsed_ok = 0
    bad: list[str] = []
    for path in raw_files:
        for rv in read_raw_results(path):
            total += 1
            got = parse_raw(rv)
            parsed += got is not None
            if rv.recorded is None:
                rec_unparsed += 1
                unparsed_ok += got is None
            if got == rv.recorded:
                agree += 1
            elif len(bad) < show:
                bad.append(f"{rv.file} ({'swapped' if rv.swap else 'original'} order): recorded "
                           f"{rv.recorded}, parsed {got}: ...{rv.completion[-160:]!r}")
    if total == 0:
        raise UserError("no comparison completions in the given files (rating strategies keep scores only)")
    click.echo(f"{total} recorded completions: {parsed} parse to a winner; {agree} ({agree / total:.2%}) give "
               f"the recorded verdict; {unparsed_ok} of the {rec_unparsed} recorded as unparsed come out "
               "unscored")
    for b in bad:
        click.echo(f"differs: {b}")
    return 0
