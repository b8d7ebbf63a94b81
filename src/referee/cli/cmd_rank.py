"""``referee rank RESULTS...``: win rates, a Bradley-Terry leaderboard and judge bias from pairwise results."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from ..errors import UserError
from ..metaeval.pairwise import BiasReport, bias
from ..metaeval.results import pairwise_from_results
from ..reports.leaderboard import leaderboard_page
from ..results.io import read_results
from ..stats.agreement import interval_text
from ..stats.bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED, Interval
from ..stats.ranking import Comparison, Leaderboard, leaderboard
from ._common import echo_err


def _s(iv: Interval | None, digits: int = 3) -> str:
    return interval_text(iv, digits)


def comparisons_from(path: str) -> tuple[list[Comparison], int]:
    """Scored pairwise rows of one file as (system_a, system_b, score_a); unscored rows are counted."""
    loaded = read_results(path)
    for w in loaded.warnings:
        echo_err(f"warning: {w}")
    stem = Path(path).stem
    comps: list[Comparison] = []
    skipped = 0
    pairwise_rows = [r for r in loaded.rows if r.evaluator == "pairwise" or r.winner is not None]
    if not pairwise_rows:
        raise UserError(f"{path}: no pairwise rows (evaluator 'pairwise' with a winner) in this file")
    for r in pairwise_rows:
        if r.status != "scored" or r.winner is None:
            skipped += 1
            continue
        a = str(r.details.get("system_a") or r.metadata.get("system_a") or f"{stem}:a")
        b = str(r.details.get("system_b") or r.metadata.get("system_b") or f"{stem}:b")
        comps.append((a, b, {"a": 1.0, "b": 0.0, "tie": 0.5}[r.winner]))
    return comps, skipped


def print_leaderboard(lb: Leaderboard, biases: dict[str, BiasReport]) -> None:
    con = Console(highlight=False, soft_wrap=True)
    if lb.pairs:
        t = Table(title="Head to head (ties count half; 95% bootstrap CI)", title_justify="left")
        for c in ("A", "B", "A wins", "B wins", "ties", "win rate of A"):
            t.add_column(c, justify="left" if c in ("A", "B") else "right")
        for p in lb.pairs:
            t.add_row(p.a, p.b, str(p.wins_a), str(p.wins_b), str(p.ties), _s(p.win_rate_a))
        con.print(t)
    if any(s.rating.estimate is not None for s in lb.standings):
        t = Table(title="Leaderboard (Bradley-Terry, Elo-like scale, mean system = 0; 95% bootstrap CI)",
                  title_justify="left")
        for c in ("rank", "system", "rating", "win rate", "comparisons"):
            t.add_column(c, justify="left" if c == "system" else "right")
        for n, s in enumerate(lb.standings, 1):
            rating = _s(s.rating, 0) + (f" ({s.one_sided}: see note)" if s.one_sided else "")
            t.add_row(str(n), s.system, rating, _s(s.win_rate), str(s.comparisons))
        con.print(t)
    if biases:
        t = Table(title="Judge bias over both orders (95% bootstrap CI)", title_justify="left")
        for c in ("results", "pairs", "no verdict", "consistent", "picks first shown", "picks second shown",
                  "prefers longer (pairs > 30 chars apart)"):
            t.add_column(c, justify="left" if c == "results" else "right")
        for name, b in biases.items():
            t.add_row(name, str(b.n), str(b.unparsed), _s(b.consistent), _s(b.first), _s(b.second),
                      f"{_s(b.judge_prefers_longer)} (n={b.length_pairs})")
        con.print(t)
    bias_notes = {f"{name}: {n}" for name, b in biases.items() for n in b.notes}
    for note in [*lb.notes, *sorted(bias_notes)]:
        con.print(f"note: {note}")


@click.command("rank")
@click.argument("results", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--json-out", type=click.Path(dir_okay=False), default=None, help="Write the leaderboard as JSON.")
@click.option("--html", "html_out", type=click.Path(dir_okay=False), default=None,
              help="Write a standalone HTML leaderboard page.")
@click.option("--min-consistency", type=click.FloatRange(0, 1), default=None,
              help="Exit 1 when the judge's order consistency in any file is below this.")
@click.option("--n-boot", type=click.IntRange(100), default=1000, show_default=True)
@click.option("--boot-seed", type=int, default=DEFAULT_SEED, show_default=True)
def command(results: tuple[str, ...], json_out: str | None, html_out: str | None,
            min_consistency: float | None, n_boot: int, boot_seed: int) -> int:
    """Rank systems from pairwise RESULTS files (referee pairwise rows).

    System names come from --name-a/--name-b of `referee pairwise` (or the cases' system_a/system_b);
    unnamed files contribute '<file>:a' and '<file>:b'. With 3+ systems a Bradley-Terry leaderboard is shown.
    """
    comps: list[Comparison] = []
    biases: dict[str, BiasReport] = {}
    for path in results:
        c, skipped = comparisons_from(path)
        if skipped:
            echo_err(f"note: {path}: {skipped} unscored/error row(s) left out (never counted as a win or a loss)")
        comps.extend(c)
        biases[path] = bias(pairwise_from_results(path), n_boot=min(n_boot, DEFAULT_N_BOOT), seed=boot_seed)
    if not comps:
        raise UserError("no scored pairwise comparisons in the given files: nothing to rank")
    lb = leaderboard(comps, n_boot=n_boot, seed=boot_seed)
    print_leaderboard(lb, biases)
    if json_out:
        data = lb.to_dict()
        data["bias"] = {k: v.to_dict() for k, v in biases.items()}
        Path(json_out).write_text(json.dumps(data, indent=2, allow_nan=False), encoding="utf-8")
    if html_out:
        Path(html_out).write_text(leaderboard_page(lb, bias=biases), encoding="utf-8")
        echo_err(f"leaderboard page written to {html_out}")
    if min_consistency is not None:
        low = [(k, b.consistent.estimate) for k, b in biases.items()
               if b.consistent.estimate is None or b.consistent.estimate < min_consistency]
        for k, v in low:
            echo_err(f"gate failed: {k}: order consistency {'undefined' if v is None else f'{v:.3f}'} "
                     f"is below {min_consistency:g}")
        if low:
            return 1
    return 0
