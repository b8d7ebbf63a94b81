"""``referee rank RESULTS...``: win rates, a Bradley-Terry leaderboard and judge bias from pairwise results.

One call of :func:`referee.metaeval.rank_results`; the tables are :func:`referee.reports` renderers."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..evaluators import RECONCILE_MODES, Reconcile
from ..metaeval import rank_results
from ..stats import DEFAULT_SEED
from ._common import echo_err


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
    from ..reports import leaderboard_page, render_ranking

    ranking = rank_results(results, reconcile=reconcile, n_boot=n_boot, seed=boot_seed, on_note=echo_err)
    click.echo(f"Reconciliation of the two orders: {reconcile} (--reconcile "
               f"{'average' if reconcile == 'strict' else 'strict'} for the other rule)")
    render_ranking(ranking)
    if json_out:
        Path(json_out).write_text(json.dumps(ranking.to_dict(), indent=2, allow_nan=False), encoding="utf-8")
    if html_out:
        page = leaderboard_page(ranking.leaderboard, bias=ranking.bias,
                                by_reconcile={str(k): v for k, v in ranking.boards.items()}, reconcile=reconcile)
        Path(html_out).write_text(page, encoding="utf-8")
        echo_err(f"leaderboard page written to {html_out}")
    if min_consistency is not None:
        low = ranking.inconsistent(min_consistency)
        for k, v in low:
            echo_err(f"gate failed: {k}: order consistency {'undefined' if v is None else f'{v:.3f}'} "
                     f"is below {min_consistency:g}")
        if low:
            return 1
    return 0
