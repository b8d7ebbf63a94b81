"""``referee rank RESULTS...``: win rates, a Bradley-Terry leaderboard and judge bias from pairwise results."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table

from ..errors import UserError
from ..evaluators._pairwise import RECONCILE_MODES, SCORES, Reconcile, reconciled_score
from ..metaeval._pairwise import BiasReport, bias
from ..metaeval._results import pairwise_from_results
from ..reports._leaderboard import leaderboard_page
from ..reports._safe import SafeConsole
from ..results._io import read_results
from ..results._schema import ResultRow
from ..stats._agreement import interval_text
from ..stats._bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED, Interval
from ..stats._ranking import Comparison, Leaderboard, leaderboard
from ._common import echo_err


def _s(iv: Interval | None, digits: int = 3) -> str:
    return interval_text(iv, digits)


def _row_score(r: ResultRow, mode: Reconcile) -> float:
    """Score of A under ``mode``: the row's recorded score for that rule, else recomputed from both orders'
    winners, else (rows of older runs or other tools) the row's own winner."""
    scores = r.details.get("scores")
    if isinstance(scores, dict) and isinstance(scores.get(mode), int | float) and not isinstance(
            scores.get(mode), bool):
        return float(scores[mode])
    orders = r.details.get("orders")
    if isinstance(orders, list) and len(orders) == 2 and all(isinstance(o, dict) for o in orders):
        w = [o.get("winner") for o in orders]
        if w[0] in SCORES and w[1] in SCORES:
            return reconciled_score(w[0], w[1], mode)[0]
    assert r.winner is not None
    return SCORES[r.winner]


def comparisons_from(path: str, mode: Reconcile = "strict") -> tuple[list[Comparison], int]:
    """Scored pairwise rows of one file as (system_a, system_b, score_a) under ``mode``; unscored rows are
    counted."""
    return _comparisons(path, [mode])[mode]


def _comparisons(path: str, modes: list[Reconcile]) -> dict[Reconcile, tuple[list[Comparison], int]]:
    loaded = read_results(path)
    for w in loaded.warnings:
        echo_err(f"warning: {w}")
    stem = Path(path).stem
    comps: dict[Reconcile, list[Comparison]] = {m: [] for m in modes}
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
        for m in modes:
            comps[m].append((a, b, _row_score(r, m)))
    return {m: (comps[m], skipped) for m in modes}


def print_leaderboard(lb: Leaderboard, biases: dict[str, BiasReport]) -> None:
    con = SafeConsole(highlight=False, soft_wrap=True)
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


def print_reconcile_table(boards: dict[Reconcile, Leaderboard]) -> None:
    """Each pair's win rate under both rules: where they differ, wins in one order met ties in the other."""
    con = SafeConsole(highlight=False, soft_wrap=True)
    t = Table(title="Win rate of A under both reconciliation rules (strict: disagreeing orders are a tie; "
                    "average: the mean of both orders)", title_justify="left")
    for c in ("A", "B", "strict", "average"):
        t.add_column(c, justify="left" if c in ("A", "B") else "right")
    avg = {(p.a, p.b): p for p in boards["average"].pairs}
    for p in boards["strict"].pairs:
        q = avg.get((p.a, p.b))
        t.add_row(p.a, p.b, _s(p.win_rate_a), _s(q.win_rate_a) if q else "n/a")
    con.print(t)


@click.command("rank")
@click.argument("results", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--json-out", type=click.Path(dir_okay=False), default=None, help="Write the leaderboard as JSON.")
@click.option("--html", "html_out", type=click.Path(dir_okay=False), default=None,
              help="Write a standalone HTML leaderboard page.")
@click.option("--min-consistency", type=click.FloatRange(0, 1), default=None,
              help="Exit 1 when the judge's order consistency in any file is below this.")
@click.option("--n-boot", type=click.IntRange(100), default=1000, show_default=True)
@click.option("--boot-seed", type=int, default=DEFAULT_SEED, show_default=True)
@click.option("--reconcile", type=click.Choice(RECONCILE_MODES), default="strict", show_default=True,
              help="Rule of the leaderboard: strict (orders that disagree are a tie) or average (the mean of "
                   "both orders). The head-to-head win rates are always shown under both.")
def command(results: tuple[str, ...], json_out: str | None, html_out: str | None,
            min_consistency: float | None, n_boot: int, boot_seed: int, reconcile: Reconcile) -> int:
    """Rank systems from pairwise RESULTS files (referee pairwise rows).

    System names come from --name-a/--name-b of `referee pairwise` (or the cases' system_a/system_b);
    unnamed files contribute '<file>:a' and '<file>:b'. With 3+ systems a Bradley-Terry leaderboard is shown.
    """
    by_mode: dict[Reconcile, list[Comparison]] = {m: [] for m in RECONCILE_MODES}
    biases: dict[str, BiasReport] = {}
    for path in results:
        got = _comparisons(path, list(RECONCILE_MODES))
        skipped = got[reconcile][1]
        if skipped:
            echo_err(f"note: {path}: {skipped} unscored/error row(s) left out (never counted as a win or a loss)")
        for m in RECONCILE_MODES:
            by_mode[m].extend(got[m][0])
        biases[path] = bias(pairwise_from_results(path), n_boot=min(n_boot, DEFAULT_N_BOOT), seed=boot_seed)
    comps = by_mode[reconcile]
    if not comps:
        raise UserError("no scored pairwise comparisons in the given files: nothing to rank")
    boards = {m: leaderboard(by_mode[m], n_boot=n_boot, seed=boot_seed) for m in RECONCILE_MODES}
    lb = boards[reconcile]
    click.echo(f"Reconciliation of the two orders: {reconcile} (--reconcile "
               f"{'average' if reconcile == 'strict' else 'strict'} for the other rule)")
    print_leaderboard(lb, biases)
    print_reconcile_table(boards)
    if json_out:
        data = lb.to_dict()
        data["reconcile"] = reconcile
        data["by_reconcile"] = {m: b.to_dict() for m, b in boards.items()}
        data["bias"] = {k: v.to_dict() for k, v in biases.items()}
        Path(json_out).write_text(json.dumps(data, indent=2, allow_nan=False), encoding="utf-8")
    if html_out:
        page = leaderboard_page(lb, bias=biases, by_reconcile={str(k): v for k, v in boards.items()},
                                reconcile=reconcile)
        Path(html_out).write_text(page, encoding="utf-8")
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
