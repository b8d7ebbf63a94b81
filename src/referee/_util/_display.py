"""Displays for notebooks and terminals: ``_repr_html_`` and rich's ``__rich__`` built from one description.

An object describes itself as a headline (the verdict line, shown first) and blocks (a line of text or a table
of strings); :func:`to_html` renders them as small self-contained HTML (inline styles, no external resource,
every string escaped: case ids and categories are data) and :func:`to_rich` as rich renderables.

Case text shown to people follows one set of rules here, for every renderer (these displays, and the HTML, JUnit
XML, Markdown and terminal reports through ``reports/_safe``):

- Bidirectional controls (U+202A-U+202E, U+2066-U+2069, U+200E/U+200F, U+061C) can make displayed text read
  differently from what it is ("Trojan Source"): they are shown as visible ``<U+202E>`` marks.
- Control characters (C0 except tab and newline, DEL, C1) are dropped: XML 1.0 forbids most of them, and in a
  terminal they are escape sequences (a case id could clear the screen or retitle the window).
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

MAX_CELL = 300
"""Longer cells (rationales, outputs) are cut in displays: the full text is in the rows."""

_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def _mark(m: re.Match[str]) -> str:
    return f"<U+{ord(m.group(0)):04X}>"


def neutralise_bidi(text: str) -> str:
    return _BIDI.sub(_mark, text)


def display_text(text: str) -> str:
    """Case text for people: bidi controls visible, control characters dropped."""
    return _CONTROL.sub("", neutralise_bidi(text))


@dataclass
class Table:
    title: str
    headers: list[str]
    rows: list[list[str]]


Block = str | Table


def cell(text: object) -> str:
    s = display_text("" if text is None else str(text))
    return s if len(s) <= MAX_CELL else s[:MAX_CELL - 1] + "…"


_CSS_TABLE = "border-collapse:collapse;margin:0.3em 0;font-size:0.9em"
_CSS_CELL = "border:1px solid #ccc;padding:0.15em 0.5em;text-align:left;vertical-align:top"


def _html_table(t: Table) -> str:
    def e(text: str) -> str:
        return html.escape(display_text(text))

    head = "".join(f'<th style="{_CSS_CELL}">{e(h)}</th>' for h in t.headers)
    body = "".join("<tr>" + "".join(f'<td style="{_CSS_CELL}">{e(cell(c))}</td>' for c in row) + "</tr>"
                   for row in t.rows)
    cap = f'<caption style="text-align:left;font-weight:bold">{e(t.title)}</caption>' if t.title else ""
    return f'<table style="{_CSS_TABLE}">{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def to_html(headline: str, blocks: Sequence[Block], *, ok: bool | None = None) -> str:
    """``ok``: colour the headline green (True) or red (False); None leaves it plain."""
    colour = "" if ok is None else f"color:{'#1a7f37' if ok else '#cf222e'};"
    parts = [f'<div style="{colour}font-weight:bold">{html.escape(display_text(headline))}</div>']
    for b in blocks:
        parts.append(_html_table(b) if isinstance(b, Table) else f"<div>{html.escape(display_text(b))}</div>")
    return '<div class="referee">' + "".join(parts) + "</div>"


def to_rich(headline: str, blocks: Sequence[Block], *, ok: bool | None = None) -> Any:
    """A rich renderable (a ``Group``); rich is imported only when a terminal asks for it."""
    from rich.console import Group
    from rich.text import Text

    style = "bold" if ok is None else ("bold green" if ok else "bold red")
    items: list[Any] = [Text(display_text(headline), style=style)]
    for b in blocks:
        items.append(_Folded(b) if isinstance(b, Table) else Text(display_text(b)))
    return Group(*items)


class _Folded:
    """A table laid out when rich knows the width (``_fold.rich_tables``: folded, every column kept)."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.text import Text

        from ._fold import rich_tables

        b = self.table
        cells = [[cell(c) for c in row] for row in b.rows]
        # Text: no rich markup read from case data
        yield from rich_tables(display_text(b.title) or None, [display_text(h) for h in b.headers],
                               [[Text(c) for c in r] for r in cells], options.max_width, plain=cells)
