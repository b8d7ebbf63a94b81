"""Displays for notebooks and terminals: ``_repr_html_`` and rich's ``__rich__`` built from one description.

An object describes itself as a headline (the verdict line, shown first) and blocks (a line of text or a table
of strings); :func:`to_html` renders them as small self-contained HTML (inline styles, no external resource,
every string escaped: case ids and categories are data) and :func:`to_rich` as rich renderables.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

MAX_CELL = 300
"""Longer cells (rationales, outputs) are cut in displays: the full text is in the rows."""


@dataclass
class Table:
    title: str
    headers: list[str]
    rows: list[list[str]]


Block = str | Table


def cell(text: object) -> str:
    s = "" if text is None else str(text)
    return s if len(s) <= MAX_CELL else s[:MAX_CELL - 1] + "…"


_CSS_TABLE = "border-collapse:collapse;margin:0.3em 0;font-size:0.9em"
_CSS_CELL = "border:1px solid #ccc;padding:0.15em 0.5em;text-align:left;vertical-align:top"


def _html_table(t: Table) -> str:
    e = html.escape
    head = "".join(f'<th style="{_CSS_CELL}">{e(h)}</th>' for h in t.headers)
    body = "".join("<tr>" + "".join(f'<td style="{_CSS_CELL}">{e(cell(c))}</td>' for c in row) + "</tr>"
                   for row in t.rows)
    cap = f'<caption style="text-align:left;font-weight:bold">{e(t.title)}</caption>' if t.title else ""
    return f'<table style="{_CSS_TABLE}">{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def to_html(headline: str, blocks: Sequence[Block], *, ok: bool | None = None) -> str:
    """``ok``: colour the headline green (True) or red (False); None leaves it plain."""
    colour = "" if ok is None else f"color:{'#1a7f37' if ok else '#cf222e'};"
    parts = [f'<div style="{colour}font-weight:bold">{html.escape(headline)}</div>']
    for b in blocks:
        parts.append(_html_table(b) if isinstance(b, Table) else f"<div>{html.escape(b)}</div>")
    return '<div class="referee">' + "".join(parts) + "</div>"


def to_rich(headline: str, blocks: Sequence[Block], *, ok: bool | None = None) -> Any:
    """A rich renderable (a ``Group``); rich is imported only when a terminal asks for it."""
    from rich.console import Group
    from rich.text import Text

    style = "bold" if ok is None else ("bold green" if ok else "bold red")
    items: list[Any] = [Text(headline, style=style)]
    for b in blocks:
        items.append(_Folded(b) if isinstance(b, Table) else Text(b))
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
        yield from rich_tables(b.title or None, b.headers, [[Text(c) for c in r] for r in cells], options.max_width,
                               plain=cells)
