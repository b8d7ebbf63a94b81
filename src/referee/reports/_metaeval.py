"""The tables of ``referee metaeval`` and ``referee rank``: figures computed by :mod:`referee.metaeval`, shown
with their intervals."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

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


def render_judgebench(results: Mapping[str, JudgeBenchMeta]) -> None:
    """JudgeBench's accuracy per category, then one line per judge, on stdout."""
    cats = list(dict.fromkeys(c for r in results.values() for c in r.by_category))
    t = Table(title="JudgeBench accuracy per category (%, pairs in brackets; a pair is correct when the two "
                    "orders' +1/-1/0 sum is > 0)", title_justify="left")
    for c in ("judge", *cats, "overall"):
        t.add_column(c, justify="left" if c == "judge" else "right")
    for name, r in results.items():
        per = r.by_category
        cells = [f"{per[c][1] * 100:.2f} ({per[c][0]})" if c in per else "-" for c in cats]
        t.add_row(name, *cells, f"{r.accuracy * 100:.2f} ({r.pairs})")
    con = console()
    con.print(t)
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
        t = Table(title=f"{title}: Kendall tau-b vs the mean of 3 human raters", title_justify="left")
        t.add_column("judge")
        for c in criteria:
            t.add_column(c, justify="right")
        if level == "story_level":
            t.add_row("human leave-one-out ceiling", *[f"{rep['human_leave_one_out'][c]:.3f}" for c in criteria])
        for name, vals in rep[level].items():
            t.add_row(name, *[_tau_cell(vals[c]) for c in criteria])
        con.print(t)


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
    con = SafeConsole(highlight=False, soft_wrap=True)
    lb, biases = ranking.leaderboard, ranking.bias
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
    t = Table(title="Win rate of A under both reconciliation rules (strict: disagreeing orders are a tie; "
                    "average: the mean of both orders)", title_justify="left")
    for c in ("A", "B", "strict", "average"):
        t.add_column(c, justify="left" if c in ("A", "B") else "right")
    avg = {(p.a, p.b): p for p in ranking.boards["average"].pairs}
    for p in ranking.boards["strict"].pairs:
        q = avg.get((p.a, p.b))
        t.add_row(p.a, p.b, _s(p.win_rate_a), _s(q.win_rate_a) if q else "n/a")
    con.print(t)
