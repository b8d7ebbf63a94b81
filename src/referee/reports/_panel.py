"""The tables of ``referee metaeval panel``: judges, the cross-validated choice (the headline), and the
in-sample panels, labelled as chosen on the items they are scored on."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from .._util._fold import rich_tables, terminal_width
from ..calibrate._panel import PanelAgreement
from ..metaeval._panel import PanelFigure, PanelMeta
from ..stats._agreement import interval_text
from ..stats._paired import PairedResult


def _pct(iv: object) -> str:
    from ..stats._bootstrap import Interval

    assert isinstance(iv, Interval)
    return interval_text(iv.as_percent() if iv.estimate is not None else iv, 3)


def _diff(r: PairedResult) -> str:
    if r.n == 0 or r.lo is None or r.hi is None:
        return "n/a"
    return f"{r.diff * 100:+.1f} pts [{r.lo * 100:+.1f}, {r.hi * 100:+.1f}] p={r.p_value:.3f}"


def _alpha(p: PanelFigure) -> str:
    return "n/a" if p.alpha is None else interval_text(p.alpha, 3)


def _eff(p: PanelFigure) -> str:
    e = p.effective
    return "n/a" if e.estimate is None else f"{e.estimate:.2f} of {e.k}"


def _print_table(con: object, title: str, headers: list[str], cells: list[list[str]], *,
                 right: list[bool], keys: int = 1) -> None:
    """A table folded to the console's width (every column kept, the ``keys`` first columns (the judge, or the
    panel and its rule) repeated in each part)."""
    for t in rich_tables(title, headers, [[Text(c) for c in r] for r in cells], con.width,  # type: ignore[attr-defined]
                         plain=cells, right=right, keys=keys):
        con.print(t)  # type: ignore[attr-defined]


def render_panel(m: PanelMeta, *, top: int = 10) -> None:
    """``referee metaeval panel`` on stdout."""
    from ._safe import SafeConsole

    # emoji=False: judge names such as ``reward_model:x`` are text, never an emoji code.
    con = SafeConsole(highlight=False, soft_wrap=True, width=terminal_width(), emoji=False)
    con.print(f"{m.name}: {m.n} pairs, {len(m.judges)} judges; accuracy is JudgeBench's (both orders' +1/-1/0 "
              "sum > 0), 95% bootstrap intervals", markup=False)
    _print_table(con, "Judges", ["judge", "family", "pairs voted", "accuracy"],
                 [[j.name + (" (best)" if j.name == m.best_single else ""), j.family or "?", str(j.voted),
                   _pct(j.accuracy)] for j in m.judges], right=[False, False, True, True])
    cv = m.cv
    con.print(f"Cross-validated ({cv.folds} folds; choices made on the other folds, scored on the held-out one):",
              markup=False)
    con.print(f"  best single judge, chosen per fold: {_pct(cv.single)}", markup=False)
    con.print(f"  best panel and rule, chosen per fold: {_pct(cv.panel)}", markup=False)
    con.print(f"  panel - single (paired, held out): {_diff(cv.panel_vs_single)}", markup=False)
    for ch in cv.choices:
        con.print(f"  fold {ch.fold + 1} ({ch.n} pairs): single {ch.single}; panel {' + '.join(ch.panel)} "
                  f"({ch.rule})", markup=False)
    a = m.all_judges
    con.print(f"All {len(a.judges)} judges by majority: {_pct(a.accuracy)}; vs best single {_diff(a.vs_best)}; "
              f"alpha {_alpha(a)}; effective votes {_eff(a)} (from error correlation); independent judges "
              f"would reach {a.independent * 100:.1f}%", markup=False)
    _print_table(con, f"In-sample panels, top {top} of {len(m.panels)}: ranked on the items they are scored on, "
                      "so the best row is optimistic (the cross-validated figure above is the honest one)",
                 ["panel", "rule", "accuracy", "vs best single", "alpha", "effective votes", "if independent",
                  "shared family"],
                 [[" + ".join(p.judges), p.rule, _pct(p.accuracy), _diff(p.vs_best), _alpha(p), _eff(p),
                   f"{p.independent * 100:.1f}%", ", ".join(p.shared_families) or "-"] for p in m.panels[:top]],
                 right=[False, False, True, True, True, True, True, False], keys=2)  # one panel, three rules
    for n in m.notes:
        con.print(f"note: {n}", markup=False)


def render_panel_agreement(reports: Sequence[PanelAgreement], *, stderr: bool = False) -> None:
    """A run's panel figures (``referee score``, ``referee calibrate``): agreement, kappa per pair, effective
    votes, shared families, and the panel against each judge on the human labels."""
    from ._safe import SafeConsole

    # emoji=False: judge names such as ``fake:b`` or ``x:o`` are text, never an emoji code.
    con = SafeConsole(highlight=False, soft_wrap=True, width=terminal_width(), stderr=stderr, emoji=False)
    for r in reports:
        con.print(f"Panel on {r.label}: {len(r.judges)} judges ({', '.join(r.judges)}), {r.cases} cases, "
                  f"{r.split} split" + (f", cost ${r.cost_usd:.4f}" if r.cost_usd is not None else ""),
                  markup=False)
        e = r.effective
        eff = "n/a" if e.estimate is None else f"{e.estimate:.2f} of {e.k}"
        basis = "their error correlation on the human labels" if e.basis == "errors" else (
            "their agreement (no labels: a floor)")
        con.print(f"  Krippendorff's alpha {interval_text(r.alpha, 3)}; effective independent votes {eff} "
                  f"(from {basis})", markup=False)
        for k in r.kappas:
            kap = "n/a" if k.kappa is None else f"{k.kappa:.3f}"
            agr = "n/a" if k.agreement is None else f"{k.agreement:.1%}"
            con.print(f"  kappa {k.a} vs {k.b}: {kap} (agree on {agr} of {k.n})", markup=False)
        if r.panel_vs_human is not None:
            con.print(f"  vs human labels ({r.labelled} cases): panel {_pct(r.panel_vs_human)}", markup=False)
            for m in r.members_vs_human:
                con.print(f"    {m.judge}: {_pct(m.agreement)}; panel - judge {_diff(m.panel_minus_judge)}",
                          markup=False)
        for w in r.warnings:
            con.print(f"  warning: {w}", markup=False)
