"""The coverage report of ``referee synth --html``: one self-contained page (no script, nothing fetched) with the
kept cases per document, per kind (kept share against target share) and per persona, and the rejections per gate,
as inline SVG bars. It computes nothing: it draws the summary :meth:`referee.synth.SynthResult.to_dict` gives."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from ._charts import _e, _frame

_BLUE, _GREY, _RED = "#3b6fd4", "#bbb", "#c62828"


def count_bars(rows: Sequence[tuple[str, float, float | None]], *, title: str, percent: bool,
               colour: str = _BLUE) -> str:
    """Horizontal bars, one per (name, value, target): the value as a bar, the target (when given) as a tick."""
    if not rows:
        return _frame(f'<text x="180" y="40" text-anchor="middle" font-size="12" fill="#888">{_e("nothing")}'
                      "</text>", h=60, label=title)
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


def render_synth_html(summary: Mapping[str, Any]) -> str:
    """The page for one generation run's summary (``SynthResult.to_dict()``)."""
    cov = summary.get("coverage", {})
    docs = sorted(cov.get("document", {}).items(), key=lambda kv: (-kv[1], kv[0]))
    kinds = summary.get("kinds", {})
    personas = sorted(cov.get("persona", {}).items(), key=lambda kv: (-kv[1], kv[0]))
    sections = [
        ("Cases per document", count_bars([(d, n, None) for d, n in docs], title="per document", percent=False)),
        ("Kinds: kept share (bar) against target share (tick)",
         count_bars([(k, v.get("kept", 0.0), v.get("target")) for k, v in kinds.items()], title="per kind",
                    percent=True)),
        ("Cases per persona", count_bars([(p, n, None) for p, n in personas], title="per persona", percent=False)),
        ("Candidates rejected, per gate (in the gates' order)",
         count_bars([(g, n, None) for g, n in summary.get("rejections", {}).items()], title="rejections",
                    percent=False, colour=_RED)),
    ]
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
