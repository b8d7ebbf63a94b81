"""Charts as inline SVG: drawn here, in Python, for the HTML report and the viewer alike (no script, no fetch,
nothing from elsewhere: they pass the strict Content-Security-Policy of both).

Every label is escaped (case ids and categories are data); every number placed is finite. A chart with nothing
to draw says so instead of drawing an empty frame.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

from ._safe import display_text

_W, _H = 360, 170
_PAD_L, _PAD_B, _PAD_T = 34, 30, 8
_BLUE, _GREEN, _RED, _GREY = "#3b6fd4", "#2e7d32", "#c62828", "#888"


@dataclass
class Chart:
    id: str
    title: str
    svg: str


def _e(s: object) -> str:
    """Text placed in a chart: bidi controls visible, control characters dropped, escaped (``_safe``'s rules)."""
    return html.escape(display_text(str(s)), quote=True)


def _finite(xs: Sequence[float | None]) -> list[float]:
    return [float(x) for x in xs if x is not None and math.isfinite(float(x))]


def _frame(body: str, w: int = _W, h: int = _H, label: str = "") -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{w}" height="{h}" '
            f'viewBox="0 0 {w} {h}" role="img" aria-label="{_e(label)}">{body}</svg>')


def _empty(label: str, why: str) -> str:
    return _frame(f'<text x="{_W / 2}" y="{_H / 2}" text-anchor="middle" font-size="12" fill="{_GREY}">'
                  f'{_e(why)}</text>', label=label)


def _nice(v: float) -> str:
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 100:
        return f"{v:.0f}"
    if a >= 1:
        return f"{v:.3g}"
    return f"{v:.2g}"


def histogram(values: Sequence[float | None], *, title: str, lo: float | None = None, hi: float | None = None,
              bins: int = 10, unit: str = "", colour: str = _BLUE, chart_id: str = "hist") -> Chart:
    """Counts of ``values`` in ``bins`` equal bins from ``lo`` to ``hi`` (default: the values' range)."""
    xs = _finite(values)
    if not xs:
        return Chart(chart_id, title, _empty(title, "no values"))
    lo = min(xs) if lo is None else lo
    hi = max(xs) if hi is None else hi
    if hi <= lo:
        hi = lo + 1.0
    counts = [0] * bins
    for x in xs:
        counts[min(bins - 1, max(0, int((x - lo) / (hi - lo) * bins)))] += 1
    top = max(counts)
    pw, ph = _W - _PAD_L - 6, _H - _PAD_B - _PAD_T
    bw = pw / bins
    parts = [f'<line x1="{_PAD_L}" y1="{_PAD_T + ph}" x2="{_PAD_L + pw}" y2="{_PAD_T + ph}" stroke="{_GREY}"/>']
    for i, c in enumerate(counts):
        bh = ph * c / top if top else 0
        x = _PAD_L + i * bw
        edge_lo, edge_hi = lo + (hi - lo) * i / bins, lo + (hi - lo) * (i + 1) / bins
        parts.append(f'<rect class="bar" x="{x + 1:.1f}" y="{_PAD_T + ph - bh:.1f}" width="{max(bw - 2, 1):.1f}" '
                     f'height="{bh:.1f}" fill="{colour}" data-count="{c}"><title>{_e(_nice(edge_lo))}-'
                     f'{_e(_nice(edge_hi))}{_e(unit)}: {c}</title></rect>')
    for frac in (0.0, 0.5, 1.0):
        x = _PAD_L + pw * frac
        parts.append(f'<text x="{x:.1f}" y="{_H - 14}" font-size="10" text-anchor="middle">'
                     f'{_e(_nice(lo + (hi - lo) * frac))}{_e(unit)}</text>')
    parts.append(f'<text x="{_PAD_L - 4}" y="{_PAD_T + 8}" font-size="10" text-anchor="end">{top}</text>')
    parts.append(f'<text x="{_PAD_L - 4}" y="{_PAD_T + ph}" font-size="10" text-anchor="end">0</text>')
    parts.append(f'<text x="{_W / 2}" y="{_H - 2}" font-size="10" text-anchor="middle" fill="{_GREY}">'
                 f'{len(xs)} values</text>')
    return Chart(chart_id, title, _frame("".join(parts), label=title))


@dataclass
class Rate:
    name: str
    estimate: float | None
    lo: float | None
    hi: float | None
    n: int


def rate_bars(rates: Sequence[Rate], *, title: str, chart_id: str = "rates") -> Chart:
    """One horizontal bar per group (its pass rate) with its interval as a whisker; a group with no scored case
    is listed as n/a, never drawn as 0."""
    if not rates:
        return Chart(chart_id, title, _empty(title, "no groups"))
    row_h = 22
    label_w = 120
    pw = _W - label_w - 50
    h = _PAD_T + row_h * len(rates) + 22
    parts = []
    for i, r in enumerate(rates):
        y = _PAD_T + i * row_h
        name = r.name if len(r.name) <= 18 else r.name[:17] + "…"
        parts.append(f'<text x="{label_w - 6}" y="{y + 14}" font-size="11" text-anchor="end">'
                     f'<title>{_e(r.name)}</title>{_e(name)}</text>')
        if r.estimate is None or not math.isfinite(r.estimate):
            parts.append(f'<text x="{label_w + 4}" y="{y + 14}" font-size="11" fill="{_GREY}">n/a (nothing '
                         f'scored)</text>')
            continue
        est = min(max(r.estimate, 0.0), 1.0)
        parts.append(f'<rect class="bar" x="{label_w}" y="{y + 4}" width="{pw * est:.1f}" height="{row_h - 8}" '
                     f'fill="{_GREEN if est >= 0.5 else _RED}" opacity="0.75"><title>{_e(r.name)}: '
                     f'{est:.1%} of {r.n}</title></rect>')
        if r.lo is not None and r.hi is not None and math.isfinite(r.lo) and math.isfinite(r.hi):
            x1, x2 = label_w + pw * min(max(r.lo, 0), 1), label_w + pw * min(max(r.hi, 0), 1)
            cy = y + row_h / 2
            parts.append(f'<g class="interval" stroke="#222"><line x1="{x1:.1f}" y1="{cy}" x2="{x2:.1f}" '
                         f'y2="{cy}"/><line x1="{x1:.1f}" y1="{cy - 4}" x2="{x1:.1f}" y2="{cy + 4}"/>'
                         f'<line x1="{x2:.1f}" y1="{cy - 4}" x2="{x2:.1f}" y2="{cy + 4}"/></g>')
        parts.append(f'<text x="{label_w + pw + 4}" y="{y + 14}" font-size="10">{est:.0%}</text>')
    axis_y = _PAD_T + row_h * len(rates) + 2
    for frac in (0.0, 0.5, 1.0):
        parts.append(f'<text x="{label_w + pw * frac:.1f}" y="{axis_y + 12}" font-size="10" '
                     f'text-anchor="middle">{frac:.0%}</text>')
    return Chart(chart_id, title, _frame("".join(parts), h=h, label=title))


@dataclass
class Pair:
    id: str
    baseline: float | None
    candidate: float | None
    change: str
    """regression, improvement, same, lost, gained, added, missing."""


def flips(pairs: Sequence[Pair], *, title: str, threshold: float, chart_id: str = "flips") -> Chart:
    """Baseline score (x) against candidate score (y), one dot per case scored in both: red for a case that
    passed and fails now, green for the reverse; the threshold lines split the four outcomes."""
    both = [p for p in pairs if p.baseline is not None and p.candidate is not None
            and math.isfinite(p.baseline) and math.isfinite(p.candidate)]
    if not both:
        return Chart(chart_id, title, _empty(title, "no case scored in both runs"))
    size = 220
    left, top = 40, 8
    w, h = left + size + 130, top + size + 34
    colour = {"regression": _RED, "improvement": _GREEN}
    parts = [f'<rect x="{left}" y="{top}" width="{size}" height="{size}" fill="none" stroke="{_GREY}"/>']
    tx = left + size * threshold
    ty = top + size * (1 - threshold)
    parts.append(f'<line x1="{tx:.1f}" y1="{top}" x2="{tx:.1f}" y2="{top + size}" stroke="{_GREY}" '
                 'stroke-dasharray="3,3"/>')
    parts.append(f'<line x1="{left}" y1="{ty:.1f}" x2="{left + size}" y2="{ty:.1f}" stroke="{_GREY}" '
                 'stroke-dasharray="3,3"/>')
    # One dot per 4-pixel cell and kind of change: a dot 7 pixels wide hides its neighbours anyway, and 20,000
    # cases drawn one by one made a 2.7 MB chart the browser took seconds to lay out. A merged dot's title says
    # how many cases it stands for and names the first three.
    cells: dict[tuple[int, int, str], list[Pair]] = {}
    for p in both:
        assert p.baseline is not None and p.candidate is not None
        bx = left + size * min(max(p.baseline, 0), 1)
        by = top + size * (1 - min(max(p.candidate, 0), 1))
        cells.setdefault((round(bx / 4), round(by / 4), p.change), []).append(p)
    for (cx, cy, change), ps in cells.items():
        p = ps[0]
        assert p.baseline is not None and p.candidate is not None
        if len(ps) == 1:
            what = f"{_e(p.id)}: {p.baseline:.3f} -> {p.candidate:.3f} ({_e(change)})"
        else:
            names = ", ".join(_e(q.id) for q in ps[:3]) + (", ..." if len(ps) > 3 else "")
            what = f"{len(ps)} cases ({_e(change)}), about {p.baseline:.2f} -> {p.candidate:.2f}: {names}"
        parts.append(f'<circle class="dot {_e(change)}" cx="{cx * 4}" cy="{cy * 4}" r="3.5" '
                     f'fill="{colour.get(change, _BLUE)}" opacity="0.8" data-n="{len(ps)}"><title>{what}</title>'
                     '</circle>')
    parts.append(f'<text x="{left + size / 2}" y="{top + size + 26}" font-size="10" text-anchor="middle">'
                 'baseline score</text>')
    parts.append(f'<text x="12" y="{top + size / 2}" font-size="10" text-anchor="middle" '
                 f'transform="rotate(-90 12 {top + size / 2})">candidate score</text>')
    n_reg = sum(p.change == "regression" for p in both)
    n_imp = sum(p.change == "improvement" for p in both)
    lx = left + size + 10
    parts.append(f'<text x="{lx}" y="{top + 14}" font-size="11" fill="{_RED}">{n_reg} regressed</text>')
    parts.append(f'<text x="{lx}" y="{top + 30}" font-size="11" fill="{_GREEN}">{n_imp} improved</text>')
    parts.append(f'<text x="{lx}" y="{top + 46}" font-size="11" fill="{_BLUE}">{len(both) - n_reg - n_imp} '
                 'unchanged</text>')
    return Chart(chart_id, title, _frame("".join(parts), w=w, h=h, label=title))


def agreement(pairs: Sequence[tuple[bool, bool]], *, title: str, chart_id: str = "agreement") -> Chart:
    """Judge verdict against the human label on pass/fail: the four cells of the 2 x 2 table as bars."""
    if not pairs:
        return Chart(chart_id, title, _empty(title, "no pass/fail labels yet"))
    cells = [("both pass", True, True, _GREEN), ("both fail", False, False, _GREEN),
             ("judge pass, human fail", True, False, _RED), ("judge fail, human pass", False, True, _RED)]
    counts = [sum(1 for j, hm in pairs if j is a and hm is b) for _, a, b, _ in cells]
    top = max(counts) or 1
    row_h, label_w = 24, 150
    pw = _W - label_w - 40
    parts = []
    for i, ((name, _, _, col), c) in enumerate(zip(cells, counts, strict=True)):
        y = _PAD_T + i * row_h
        parts.append(f'<text x="{label_w - 6}" y="{y + 15}" font-size="11" text-anchor="end">{_e(name)}</text>')
        parts.append(f'<rect class="bar" x="{label_w}" y="{y + 4}" width="{pw * c / top:.1f}" '
                     f'height="{row_h - 8}" fill="{col}" opacity="0.75" data-count="{c}"/>')
        parts.append(f'<text x="{label_w + pw * c / top + 4:.1f}" y="{y + 15}" font-size="10">{c}</text>')
    agree = counts[0] + counts[1]
    y = _PAD_T + 4 * row_h + 14
    parts.append(f'<text x="{label_w}" y="{y}" font-size="11">agree on {agree} of {len(pairs)} '
                 f'({agree / len(pairs):.0%})</text>')
    return Chart(chart_id, title, _frame("".join(parts), h=y + 8, label=title))


@dataclass
class TrendPoint:
    label: str
    """Shown on hover: the commit (or run) and when it ran."""
    value: float | None
    lo: float | None
    hi: float | None
    href: str | None = None
    """Where the point leads (the viewer's page of its run); escaped here, so any text is safe."""
    regression: bool = False


def trend(points: Sequence[TrendPoint], *, title: str, gate: float | None = None, percent: bool = True,
          chart_id: str = "trend", gate_label: str = "gate") -> Chart:
    """A metric across runs (oldest left): its line, the interval as a band, the gate's threshold as a dashed
    line, and regressions as red points. A point with no value (nothing scored) is left out, never drawn as 0."""
    drawn = [(i, p) for i, p in enumerate(points) if p.value is not None and math.isfinite(p.value)]
    if not drawn:
        return Chart(chart_id, title, _empty(title, "no run with a scored case"))
    w, h = 560, 200
    plot_w, plot_h = w - _PAD_L - 12, h - _PAD_T - _PAD_B
    ys = _finite([v for _, p in drawn for v in (p.value, p.lo, p.hi)] + ([gate] if gate is not None else []))
    lo_y, hi_y = (0.0, 1.0) if min(ys) >= 0 and max(ys) <= 1 else (min(ys), max(ys))
    if hi_y - lo_y < 1e-12:
        lo_y, hi_y = lo_y - 0.5, hi_y + 0.5
    n = len(points)

    def x(i: int) -> float:
        return _PAD_L + (plot_w * (i + 0.5) / n)

    def y(v: float) -> float:
        return _PAD_T + plot_h * (1 - (min(max(v, lo_y), hi_y) - lo_y) / (hi_y - lo_y))

    def fmt(v: float) -> str:
        return f"{v:.1%}" if percent else _nice(v)

    parts = []
    for frac in (0.0, 0.5, 1.0):
        v = lo_y + (hi_y - lo_y) * frac
        parts.append(f'<line x1="{_PAD_L}" y1="{y(v):.1f}" x2="{w - 12}" y2="{y(v):.1f}" stroke="#ddd"/>'
                     f'<text x="{_PAD_L - 4}" y="{y(v) + 4:.1f}" font-size="10" text-anchor="end">'
                     f'{_e(f"{v:.0%}" if percent else _nice(v))}</text>')
    band = [(i, p) for i, p in drawn if p.lo is not None and p.hi is not None and math.isfinite(p.lo)
            and math.isfinite(p.hi)]
    if band:
        upper = " ".join(f"{x(i):.1f},{y(float(p.hi)):.1f}" for i, p in band)  # type: ignore[arg-type]
        lower = " ".join(f"{x(i):.1f},{y(float(p.lo)):.1f}" for i, p in reversed(band))  # type: ignore[arg-type]
        parts.append(f'<polygon class="band" points="{upper} {lower}" fill="{_BLUE}" opacity="0.15"/>')
    if gate is not None and math.isfinite(gate):
        parts.append(f'<line class="gate" x1="{_PAD_L}" y1="{y(gate):.1f}" x2="{w - 12}" y2="{y(gate):.1f}" '
                     f'stroke="{_RED}" stroke-dasharray="5,4"><title>{_e(gate_label)}: {_e(fmt(gate))}</title></line>'
                     f'<text x="{w - 14}" y="{y(gate) - 3:.1f}" font-size="10" text-anchor="end" '
                     f'fill="{_RED}">{_e(gate_label)} {_e(fmt(gate))}</text>')
    line = " ".join(f"{x(i):.1f},{y(float(p.value)):.1f}" for i, p in drawn)  # type: ignore[arg-type]
    parts.append(f'<polyline points="{line}" fill="none" stroke="{_BLUE}" stroke-width="1.5"/>')
    for i, p in drawn:
        v = float(p.value)  # type: ignore[arg-type]
        interval = (f" [{fmt(float(p.lo))}, {fmt(float(p.hi))}]"
                    if p.lo is not None and p.hi is not None and math.isfinite(p.lo) and math.isfinite(p.hi)
                    else "")
        tip = f"{p.label}: {fmt(v)}{interval}" + (" (regression)" if p.regression else "")
        dot = (f'<circle class="point{" regression" if p.regression else ""}" cx="{x(i):.1f}" cy="{y(v):.1f}" '
               f'r="{5 if p.regression else 3.5}" fill="{_RED if p.regression else _BLUE}">'
               f'<title>{_e(tip)}</title></circle>')
        parts.append(f'<a href="{_e(p.href)}">{dot}</a>' if p.href else dot)
    parts.append(f'<text x="{_PAD_L}" y="{h - 8}" font-size="10">oldest</text>'
                 f'<text x="{w - 12}" y="{h - 8}" font-size="10" text-anchor="end">newest</text>')
    return Chart(chart_id, title, _frame("".join(parts), w=w, h=h, label=title))
