"""A judge panel's figures in the Markdown summary and the HTML report: the figures ``referee score`` prints
(:func:`referee.calibrate.panel_agreement`), rendered, never recomputed. The Markdown escapes every name (a
judge's model name is text the user or a suite file chose); the HTML is escaped by the template."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..calibrate._panel import PanelAgreement
from ..stats._agreement import interval_text
from ._panel import _diff, _pct


def _cost(r: PanelAgreement) -> str | None:
    return None if r.cost_usd is None else f"${r.cost_usd:.4f}"


def _effective(r: PanelAgreement) -> str:
    e = r.effective
    eff = "n/a" if e.estimate is None else f"{e.estimate:.2f} of {e.k}"
    basis = ("their error correlation on the human labels" if e.basis == "errors"
             else "their agreement; with no labels, a floor")
    return f"{eff} (from {basis})"


def panel_view(r: PanelAgreement, cell: Callable[[object], str] = str) -> dict[str, Any]:
    """One panel's figures as display strings; ``cell`` escapes a name (the Markdown's escaper; the HTML's
    template escapes on its own)."""
    return {
        "label": cell(r.label), "judges": [cell(j) for j in r.judges], "cases": r.cases, "split": r.split,
        "cost": _cost(r), "alpha": interval_text(r.alpha, 3), "effective": _effective(r),
        "kappas": [{"a": cell(k.a), "b": cell(k.b), "n": k.n,
                    "kappa": "n/a" if k.kappa is None else f"{k.kappa:.3f}",
                    "agreement": "n/a" if k.agreement is None else f"{k.agreement:.1%}"} for k in r.kappas],
        "labelled": r.labelled,
        "panel_vs_human": None if r.panel_vs_human is None else _pct(r.panel_vs_human),
        "members_vs_human": [{"judge": cell(m.judge), "agreement": _pct(m.agreement),
                              "panel_minus_judge": _diff(m.panel_minus_judge)} for m in r.members_vs_human],
        "warnings": [cell(w) for w in r.warnings],
    }


def panel_markdown(panels: Sequence[PanelAgreement], cell: Callable[[object], str]) -> list[str]:
    """The Markdown lines of the panels' section (none without a panel). Tables are short enough for 80
    columns unless the judges' names are long."""
    if not panels:
        return []
    out = ["**Judge panels**", ""]
    for r in panels:
        v = panel_view(r, cell)
        head = (f"*{v['label']}*: {len(v['judges'])} judges ({', '.join(v['judges'])}), {v['cases']} cases, "
                f"{v['split']} split" + (f", cost {v['cost']}" if v["cost"] else ""))
        out += [head, "", f"Krippendorff's alpha {v['alpha']}; effective independent votes {v['effective']}.", ""]
        if v["kappas"]:
            out += ["| judges | kappa | agree | cases |", "|---|---|---|---|"]
            out += [f"| {k['a']} vs {k['b']} | {k['kappa']} | {k['agreement']} | {k['n']} |" for k in v["kappas"]]
            out.append("")
        if v["panel_vs_human"] is not None:
            out += [f"| vs human labels ({v['labelled']} cases) | agreement | panel - judge |", "|---|---|---|",
                    f"| panel | {v['panel_vs_human']} | |"]
            out += [f"| {m['judge']} | {m['agreement']} | {m['panel_minus_judge']} |" for m in v["members_vs_human"]]
            out.append("")
        out += [f"> ⚠ {w}" for w in v["warnings"]]
        if v["warnings"]:
            out.append("")
    return out
