"""The tables of ``referee metaeval`` and ``referee rank``: figures computed by :mod:`referee.metaeval`, shown
with their intervals."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .._util._fold import rich_tables, terminal_width
from ..metaeval._pairwise import PairwiseMeta
from ..stats._agreement import interval_text
from ..stats._bootstrap import Interval
from ._safe import SafeConsole

if TYPE_CHECKING:
    from ..metaeval._ragchecker import RagCheckerMeta
    from ..metaeval._rank import Ranking
    from ..metaeval._replay import JudgeBenchMeta
    from ..metaeval._results import AbsoluteMeta


def _s(iv: Interval | None, digits: int = 3) -> str:
    return interval_text(iv, digits)


def console() -> Console:
    return SafeConsole(highlight=False, soft_wrap=True, width=terminal_width())  # prose stays one line (grep)


def _table(con: Console, title: str, headers: list[str], cells: list[list[str]], *, keys: int = 1) -> None:
    """A table folded to the console's width (every column kept, the key columns repeated in each part; the key
    columns left-aligned, the figures right-aligned)."""
    right = [i >= keys for i in range(len(headers))]
    for t in rich_tables(title, headers, [[Text(c) for c in r] for r in cells], con.width, keys=keys,
                         plain=cells, right=right):
        con.print(t)


def render_pairwise_meta(results: dict[str, PairwiseMeta], *, gold: bool = True) -> None:
    """The pairwise meta-evaluation table (accuracy per order, agreement, position and length bias) on stdout."""
    con = console()
    cols = ["judge / group", "n"]
    if gold:
        cols += ["acc (A first)", "acc (B first)", "acc mean", "kappa mean"]
    cols += ["agreement", "consistent", "picks 1st shown", "picks 2nd shown", "prefers longer (n)"]
    rows = []
    for name, m in results.items():
        row = [name, str(m.n)]
        if gold:
            row += [_s(m.acc_noswap), _s(m.acc_swap), _s(m.acc_mean),
                    "n/a" if m.kappa_mean is None else f"{m.kappa_mean:.3f}"]
        b = m.bias
        row += [_s(m.agreement), _s(b.consistent), _s(b.first), _s(b.second),
                f"{_s(b.judge_prefers_longer)} ({b.length_pairs})" if b.judge_prefers_longer else "n/a"]
        rows.append(row)
    _table(con, "Pairwise judge vs gold, both orders (95% bootstrap CI)", cols, rows)
    notes = {n for m in results.values() for n in (*m.notes, *m.bias.notes)}
    for n in sorted(notes):
        con.print(f"note: {n}")


def render_judgebench(results: Mapping[str, JudgeBenchMeta]) -> None:
    """JudgeBench's accuracy per category, then one line per judge, on stdout."""
    cats = list(dict.fromkeys(c for r in results.values() for c in r.by_category))
    rows = []
    for name, r in results.items():
        per = r.by_category
        cells = [f"{per[c][1] * 100:.2f} ({per[c][0]})" if c in per else "-" for c in cats]
        rows.append([name, *cells, f"{r.accuracy * 100:.2f} ({r.pairs})"])
    con = console()
    _table(con, "JudgeBench accuracy per category (%, pairs in brackets; a pair is correct when the two orders' "
           "+1/-1/0 sum is > 0)", ["judge", *cats, "overall"], rows)
    for name, r in results.items():
        con.print(f"JudgeBench accuracy (pair correct when the two orders' +1/-1/0 sum is > 0): {name}: "
                  f"{r.accuracy * 100:.2f}%", markup=False)


def render_absolute(m: AbsoluteMeta) -> None:
    """An absolute-score judge against human raters: correlations with the human mean and the human ceiling."""
    con = console()
    con.print(f"{m.n} case(s), {m.raters} rater(s)")
    tiny = "too small a sample"
    con.print(f"Spearman rho vs human mean: {interval_text(m.spearman, zero_width=tiny)}")
    con.print(f"Kendall tau-b vs human mean: {interval_text(m.kendall, zero_width=tiny)}")
    ck = "n/a" if m.ceiling_kendall is None else f"{m.ceiling_kendall:.3f}"
    cs = "n/a" if m.ceiling_spearman is None else f"{m.ceiling_spearman:.3f}"
    con.print(f"human ceiling (each rater vs mean of the others): Kendall {ck}, Spearman {cs}")
    for n in m.notes:
        con.print(f"note: {n}")


def render_hanna(rep: Mapping[str, Any]) -> None:
    """HANNA's story- and system-level Kendall tau-b tables (``rep`` from :func:`referee.metaeval.hanna_meta`)."""
    from ..metaeval._hanna import CRITERIA

    criteria = list(CRITERIA)
    con = console()
    for level, title in (("story_level", f"Story level ({rep['n_stories']} generated stories)"),
                         ("system_level", f"System level ({rep['n_systems']} systems)")):
        rows = []
        if level == "story_level":
            rows.append(["human leave-one-out ceiling", *[f"{rep['human_leave_one_out'][c]:.3f}" for c in criteria]])
        for name, vals in rep[level].items():
            rows.append([name, *[_tau_cell(vals[c]) for c in criteria]])
        _table(con, f"{title}: Kendall tau-b vs the mean of 3 human raters", ["judge", *criteria], rows)


def _tau_cell(v: Any) -> str:
    if isinstance(v, dict):
        cell = f"{v['tau_b']:.3f}" if v["tau_b"] is not None else "n/a"
        if v.get("lo") is not None:
            cell += f" [{v['lo']:.3f}, {v['hi']:.3f}]"
        return cell
    return "n/a" if v != v else f"{v:.3f}"


def _x100(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.2f}"


def render_ragchecker(meta: RagCheckerMeta) -> None:
    """RAGChecker's meta-evaluation on stdout, 80 columns: per aspect, each evaluator's Pearson and Spearman
    (x100) against the human labels, the human-human row, then referee's rows when a results file was given."""
    con = SafeConsole(highlight=False, soft_wrap=False, width=80)
    t = Table(title=f"Correlation with human preferences, x100 ({meta.instances} answer pairs, 2 annotators)",
              title_justify="left")
    for col in ("aspect", "evaluator", "metric", "Pearson", "Spearman", "pairs"):
        t.add_column(col, justify="left" if col in ("aspect", "evaluator", "metric") else "right")
    by_aspect: dict[str, list[Any]] = {}
    for c in (*meta.ragchecker, *meta.referee, *meta.human):
        by_aspect.setdefault(c.aspect, []).append(c)
    for n, (aspect, cells) in enumerate(by_aspect.items()):
        for k, c in enumerate(cells):
            pairs = str(c.pairs) + (f" (-{c.left_out})" if c.left_out else "")
            t.add_row(aspect if k == 0 else "", c.evaluator, c.metric, _x100(c.pearson), _x100(c.spearman),
                      pairs, end_section=k == len(cells) - 1 and n < len(by_aspect) - 1)
    con.print(t)
    if meta.referee:
        left = max(c.left_out for c in meta.referee)
        con.print(f"referee: {meta.unscored_answers} answer(s) unscored; pairs with an unscored or missing "
                  f"side are left out (up to {left} per aspect, shown as -N)", markup=False)
    for note in meta.notes:
        con.print(f"note: {note}", markup=False)


def render_ranking(ranking: Ranking) -> None:
    """``referee rank``'s tables on stdout: head to head, the leaderboard, the judge's bias per file, then each
    pair's win rate under both reconciliation rules."""
    con = console()
    lb, biases = ranking.leaderboard, ranking.bias
    if lb.pairs:
        _table(con, "Head to head (ties count half; 95% bootstrap CI)",
               ["A", "B", "A wins", "B wins", "ties", "win rate of A"],
               [[p.a, p.b, str(p.wins_a), str(p.wins_b), str(p.ties), _s(p.win_rate_a)] for p in lb.pairs], keys=2)
    if any(s.rating.estimate is not None for s in lb.standings):
        _table(con, "Leaderboard (Bradley-Terry, Elo-like scale, mean system = 0; 95% bootstrap CI)",
               ["system", "rank", "rating", "win rate", "comparisons"],
               [[s.system, str(n), _s(s.rating, 0) + (f" ({s.one_sided}: see note)" if s.one_sided else ""),
                 _s(s.win_rate), str(s.comparisons)] for n, s in enumerate(lb.standings, 1)])
    if biases:
        _table(con, "Judge bias over both orders (95% bootstrap CI)",
               ["results", "pairs", "no verdict", "consistent", "picks first shown", "picks second shown",
                "prefers longer (pairs > 30 chars apart)"],
               [[name, str(b.n), str(b.unparsed), _s(b.consistent), _s(b.first), _s(b.second),
                 f"{_s(b.judge_prefers_longer)} (n={b.length_pairs})"] for name, b in biases.items()])
    bias_notes = {f"{name}: {n}" for name, b in biases.items() for n in b.notes}
    for note in [*lb.notes, *sorted(bias_notes)]:
        con.print(f"note: {note}")
    avg = {(p.a, p.b): p for p in ranking.boards["average"].pairs}
    _table(con, "Win rate of A under both reconciliation rules (strict: disagreeing orders are a tie; average: the "
           "mean of both orders)", ["A", "B", "strict", "average"],
           [[p.a, p.b, _s(p.win_rate_a), _s(avg[(p.a, p.b)].win_rate_a) if (p.a, p.b) in avg else "n/a"]
            for p in ranking.boards["strict"].pairs], keys=2)
