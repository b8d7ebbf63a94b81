"""The tables of ``referee metaeval``: figures computed by :mod:`referee.metaeval`, shown with their intervals."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from ..metaeval._pairwise import PairwiseMeta
from ..stats._agreement import interval_text
from ..stats._bootstrap import Interval
from ._safe import SafeConsole


def _s(iv: Interval | None, digits: int = 3) -> str:
    return interval_text(iv, digits)


def console() -> Console:
    return SafeConsole(highlight=False, soft_wrap=True, width=200)


def render_pairwise_meta(results: dict[str, PairwiseMeta], *, gold: bool = True) -> None:
    """The pairwise meta-evaluation table (accuracy per order, agreement, position and length bias) on stdout."""
    con = console()
    t = Table(title="Pairwise judge vs gold, both orders (95% bootstrap CI)", title_justify="left")
    cols = ["judge / group", "n"]
    if gold:
        cols += ["acc (A first)", "acc (B first)", "acc mean", "kappa mean"]
    cols += ["agreement", "consistent", "picks 1st shown", "picks 2nd shown", "prefers longer (n)"]
    for c in cols:
        t.add_column(c, justify="left" if c == "judge / group" else "right")
    for name, m in results.items():
        row = [name, str(m.n)]
        if gold:
            row += [_s(m.acc_noswap), _s(m.acc_swap), _s(m.acc_mean),
                    "n/a" if m.kappa_mean is None else f"{m.kappa_mean:.3f}"]
        b = m.bias
        row += [_s(m.agreement), _s(b.consistent), _s(b.first), _s(b.second),
                f"{_s(b.judge_prefers_longer)} ({b.length_pairs})" if b.judge_prefers_longer else "n/a"]
        t.add_row(*row)
    con.print(t)
    notes = {n for m in results.values() for n in (*m.notes, *m.bias.notes)}
    for n in sorted(notes):
        con.print(f"note: {n}")
