"""The coverage of generated cases as charts: cases per document, per kind (kept share against target share) and
per persona, as inline SVG bars. The same three charts are drawn for ``referee synth --html`` (one self-contained
page, with the rejections per gate), for the section of ``referee report`` and for the viewer's coverage panel. It
computes nothing: it draws the figures :func:`referee.synth.coverage_of` gives (the terminal table's own)."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from ._charts import Chart, _e, _frame

_BLUE, _GREY, _RED = "#3b6fd4", "#bbb", "#c62828"
MAX_BARS = 30
"""Bars drawn per chart; the other names are summed into one last bar that says how many they are."""


def _capped(rows: Sequence[tuple[str, float, float | None]]) -> list[tuple[str, float, float | None]]:
    if len(rows) <= MAX_BARS:
        return list(rows)
    rest = rows[MAX_BARS - 1:]
    total = sum(v for _, v, _ in rest)
    return [*rows[:MAX_BARS - 1], (f"({len(rest)} more)", total, None)]


def count_bars(rows: Sequence[tuple[str, float, float | None]], *, title: str, percent: bool,
               colour: str = _BLUE) -> str:
    """Horizontal bars, one per (name, value, target): the value as a bar, the target (when given) as a tick."""
    if not rows:
        return _frame(f'<text x="180" y="40" text-anchor="middle" font-size="12" fill="#888">{_e("nothing")}'
                      "</text>", h=60, label=title)
    rows = _capped(rows)
    row_h, label_w, width = 22, 170, 460
    pw = width - label_w - 60
    top = max([v for _, v, _ in rows] + [t for _, _, t in rows if t is not None] + [1e-9])
    scale = 1.0 if percent else top
    parts = []
    for i, (name, value, target) in enumerate(rows):
        y = 6 + i * row_h
        short = name if len(name) <= 26 else "…" + name[-25:]
        parts.append(f'<text x="{label_w - 6}" y="{y + 14}" font-size="11" text-anchor="end"><title>{_e(name)}'
                     f"</title>{_e(short)}</text>")
        w = pw * min(max(value / scale, 0.0), 1.0)
        shown = f"{value:.0%}" if percent else f"{value:g}"
        parts.append(f'<rect class="bar" x="{label_w}" y="{y + 4}" width="{w:.1f}" height="{row_h - 8}" '
                     f'fill="{colour}" opacity="0.8"><title>{_e(name)}: {shown}</title></rect>')
        if target is not None:
            tx = label_w + pw * min(max(target / scale, 0.0), 1.0)
            parts.append(f'<line class="target" x1="{tx:.1f}" y1="{y + 2}" x2="{tx:.1f}" y2="{y + row_h - 2}" '
                         f'stroke="#222" stroke-width="2"><title>target {target:.0%}</title></line>')
        parts.append(f'<text x="{label_w + pw + 6}" y="{y + 14}" font-size="10">{_e(shown)}'
                     + (f" / {target:.0%}" if target is not None else "") + "</text>")
    return _frame("".join(parts), w=width, h=12 + row_h * len(rows), label=title)


def coverage_charts(cov: Mapping[str, Any]) -> list[Chart]:
    """Cases per document, each kind's kept share (bar) against its target share (tick), cases per persona: the
    figures of a :func:`referee.synth.coverage_of` result, in its order."""
    total = cov.get("cases") or 1
    targets = cov.get("targets") or {}
    docs = [(str(d), float(n), None) for d, n in (cov.get("document") or {}).items()]
    kinds = [(str(k), n / total, targets.get(k)) for k, n in (cov.get("kind") or {}).items()]
    personas = [(str(p), float(n), None) for p, n in (cov.get("persona") or {}).items()]
    kind_title = ("Kinds: kept share (bar) against target share (tick)" if targets else "Kinds: share of the cases")
    return [Chart("coverage-documents", "Cases per document", count_bars(docs, title="per document", percent=False)),
            Chart("coverage-kinds", kind_title, count_bars(kinds, title="per kind", percent=True)),
            Chart("coverage-personas", "Cases per persona",
                  count_bars(personas, title="per persona", percent=False))]


def coverage_fragment(cov: Mapping[str, Any], *, title: str = "Generated cases: coverage") -> str:
    """A ``<section>`` for the HTML report (already escaped: mark it safe there)."""
    charts = "".join(f'<div class="chartbox" id="chart-{html.escape(c.id)}"><div>{html.escape(c.title)}</div>'
                     f"{c.svg}</div>" for c in coverage_charts(cov))
    n = int(cov.get("cases") or 0)
    return (f'<section id="synth-coverage"><h2>{html.escape(title)}</h2>'
            f"<p>{n} generated case{'s' if n != 1 else ''} (referee synth), counted once each"
            " (a two-chunk case counts for each of its documents).</p>"
            f'<div class="charts">{charts}</div></section>')


def render_synth_html(summary: Mapping[str, Any]) -> str:
    """The page for one generation run's summary (``SynthResult.to_dict()``)."""
    sections = [(c.title, c.svg) for c in coverage_charts(summary.get("coverage", {}))]
    sections.append(("Candidates rejected, per gate (in the gates' order)",
                     count_bars([(g, n, None) for g, n in summary.get("rejections", {}).items()], title="rejections",
                                percent=False, colour=_RED)))
    head = (f"{summary.get('kept', 0)} of {summary.get('requested', 0)} cases kept from "
            f"{summary.get('candidates', 0)} candidates in {summary.get('rounds', 0)} round(s)")
    shortfall = summary.get("shortfall")
    body = "".join(f"<h2>{html.escape(t)}</h2>{svg}" for t, svg in sections)
    note = f'<p class="shortfall">Shortfall: {html.escape(str(shortfall))}</p>' if shortfall else ""
    return ("<!doctype html><html><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
            "<title>referee synth: coverage</title><style>body{font-family:sans-serif;margin:2em;max-width:50em}"
            "h2{font-size:1.05em;margin-top:1.6em}</style></head><body>"
            f"<h1>Generated cases: coverage</h1><p>{html.escape(head)}</p>{note}{body}</body></html>")
