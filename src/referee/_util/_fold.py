"""Tables that fit the terminal: never a dropped column, never a cut name.

A table wider than the terminal is folded: its columns are split into groups that each fit, and every group
repeats the key column (the name of the row) so each printed part reads on its own. A key wider than its share
wraps onto more lines instead of being cut. Numbers are never wrapped: their column is as wide as its longest
cell (or the longest word of its header).
"""

from __future__ import annotations

import os
import sys
import unicodedata
from collections.abc import Sequence
from typing import Any

DEFAULT_LOG_WIDTH = 120
"""The width when stdout is not a terminal and ``COLUMNS`` is not set (CI logs are wide)."""

_MIN_WIDTH, _MAX_WIDTH = 40, 1000


def char_columns(ch: str) -> int:
    """Terminal columns of one character: two for East Asian wide and full-width ones, none for combining marks."""
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def columns(text: str) -> int:
    """Terminal columns ``text`` takes (a format's ``:<12`` counts characters: a CJK name takes two a character)."""
    return sum(map(char_columns, text)) if not text.isascii() else len(text)


def fit_columns(text: str, width: int) -> str:
    """``text`` cut to ``width`` terminal columns, ending in ``~`` when cut."""
    if columns(text) <= width:
        return text
    out, used = [], 0
    for ch in text:
        if used + char_columns(ch) > width - 1:
            break
        out.append(ch)
        used += char_columns(ch)
    return "".join(out) + "~"


def pad_columns(text: str, width: int) -> str:
    """:func:`fit_columns`, then spaces to exactly ``width`` terminal columns."""
    text = fit_columns(text, width)
    return text + " " * (width - columns(text))


def terminal_width(stream: Any = None) -> int:
    """``COLUMNS`` when it is set to a whole number, else the terminal's width, else :data:`DEFAULT_LOG_WIDTH`
    (clamped to 40-1000)."""
    raw = os.environ.get("COLUMNS", "").strip()
    width: int | None = int(raw) if raw.isdigit() else None
    if width is None:
        stream = stream or sys.stdout
        try:
            width = os.get_terminal_size(stream.fileno()).columns if stream.isatty() else None
        except (OSError, ValueError, AttributeError):
            width = None
    return min(max(width or DEFAULT_LOG_WIDTH, _MIN_WIDTH), _MAX_WIDTH)


def natural_width(header: str, cells: Sequence[str]) -> int:
    """A column's width (in terminal columns) with its header wrapped on spaces and no cell cut."""
    words = max((columns(w) for w in header.split()), default=0)
    return (max(words, *(max((columns(line) for line in c.splitlines()), default=0) for c in cells)) if cells
            else words)


def fold(widths: Sequence[int], width: int, *, keys: int = 1, sep: int = 2) -> tuple[list[list[int]], int]:
    """(column groups, key width): each group is the key columns followed by columns that fit in ``width`` with
    ``sep`` characters between columns. The key columns together get at most a third of the width (they wrap);
    a column wider than what is left gets a group of its own (and wraps there)."""
    n = len(widths)
    keys = min(keys, n)
    key_cols = list(range(keys))
    key_w = sum(widths[:keys]) + sep * max(keys - 1, 0)
    rest = list(range(keys, n))
    if not rest:
        return [key_cols], min(key_w, width)
    total = key_w + sum(sep + widths[i] for i in rest)
    if total <= width:
        return [key_cols + rest], key_w
    # The first key column (a name) is the one that wraps; the other keys (a metric's name) keep their width.
    others = sum(widths[1:keys]) + sep * (keys - 1)
    key_w = min(key_w, max(width // 3, others + 8))
    groups: list[list[int]] = []
    used = key_w
    current: list[int] = []
    for i in rest:
        if current and used + sep + widths[i] > width:
            groups.append(key_cols + current)
            current, used = [], key_w
        current.append(i)
        used += sep + widths[i]
    groups.append(key_cols + current)
    return groups, key_w


def wrap_cell(text: str, width: int) -> list[str]:
    """``text`` on lines of at most ``width``: broken at spaces, ``/``, ``-``, ``_`` or ``.`` where it can, else
    mid-word; nothing is left out."""
    width = max(width, 1)
    lines: list[str] = []
    for para in text.splitlines() or [""]:
        while columns(para) > width:
            fits = _fitting(para, width)  # characters that fit in the width (fewer than it for wide ones)
            # After a separator (kept at the end of the line) or at a space (dropped), else mid-word.
            cut = max(para.rfind(" ", 0, fits + 1), *(para.rfind(ch, 0, fits) + 1 for ch in "/-_."))
            if cut <= 0:
                cut = max(fits, 1)
            lines.append(para[:cut].rstrip())
            para = para[cut:].lstrip(" ")
        lines.append(para)
    return lines


def _fitting(text: str, width: int) -> int:
    """How many leading characters of ``text`` fit in ``width`` terminal columns."""
    if text.isascii():
        return min(len(text), width)
    used = 0
    for i, ch in enumerate(text):
        used += char_columns(ch)
        if used > width:
            return i
    return len(text)


def _ljust(text: str, width: int) -> str:
    return text + " " * max(width - columns(text), 0)


def _rjust(text: str, width: int) -> str:
    return " " * max(width - columns(text), 0) + text


def _widths(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int, keys: int,
            sep: int) -> tuple[list[int], list[list[int]], int]:
    """Column widths (whole headers when the table fits in one part, else headers wrapped on spaces), the
    groups and the key width."""
    full = [max(columns(h), natural_width(h, [r[i] for r in rows])) for i, h in enumerate(headers)]
    groups, key_w = fold(full, width, keys=keys, sep=sep)
    if len(groups) == 1:
        return full, groups, key_w
    cols = [natural_width(h, [r[i] for r in rows]) for i, h in enumerate(headers)]
    groups, key_w = fold(cols, width, keys=keys, sep=sep)
    return cols, groups, key_w


def text_table(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int, *, keys: int = 1,
               right: Sequence[bool] | None = None) -> list[str]:
    """A plain-text table that fits in ``width``: folded into parts (a blank line between them), each repeating
    the key columns; ``right[i]`` right-aligns column ``i``."""
    cols, groups, key_w = _widths(headers, rows, width, keys, 2)
    right = list(right) if right is not None else [False] * len(headers)
    out: list[str] = []
    for gi, group in enumerate(groups):
        if gi:
            out.append("")
        ws = [cols[i] for i in group]
        if keys == 1 and group and group[0] == 0:
            ws[0] = min(ws[0], key_w)
        for cells in [list(headers), *(list(r) for r in rows)]:
            wrapped = [wrap_cell(cells[i], w) for i, w in zip(group, ws, strict=True)]
            height = max(len(w) for w in wrapped)
            for k in range(height):
                parts = []
                for (i, w), lines in zip(zip(group, ws, strict=True), wrapped, strict=True):
                    v = lines[k] if k < len(lines) else ""
                    parts.append(_rjust(v, w) if right[i] else _ljust(v, w))
                out.append("  ".join(parts).rstrip())
    return out


def rich_tables(title: str | None, headers: Sequence[str], rows: Sequence[Sequence[Any]], width: int, *,
                keys: int = 1, right: Sequence[bool] | None = None, styles: Sequence[str | None] | None = None,
                plain: Sequence[Sequence[str]] | None = None, **table_kw: Any) -> list[Any]:
    """rich Tables that fit in ``width`` (folded, each part repeating the key columns and the title on the
    first; every column's width
    fixed here, so rich neither cuts nor squeezes one). ``rows`` hold what is printed (markup or ``Text``);
    ``plain`` the same cells as plain text, to measure (default: ``rows``)."""
    from rich.table import Table
    from rich.text import Text

    measure = plain if plain is not None else [[str(c) for c in r] for r in rows]
    # Between two columns: their padding and the box's divider (collapsed padding: one space and the divider).
    sep = 2 if table_kw.get("collapse_padding") or table_kw.get("box", True) is None else 3
    edge = 0 if table_kw.get("show_edge", True) is False and table_kw.get("pad_edge", True) is False else 4
    cols, groups, key_w = _widths(headers, measure, width - edge, keys, sep)
    right = list(right) if right is not None else [False] * len(headers)
    out = []
    for gi, group in enumerate(groups):
        part = title if gi == 0 else None  # the parts follow each other; the key column ties them
        t = Table(title=part, title_justify="left", **table_kw)
        others = sum(cols[1:keys]) + sep * (keys - 1)
        for i in group:
            w = min(cols[0], max(key_w - others, 1)) if i == 0 else cols[i]
            t.add_column(headers[i], justify="right" if right[i] else "left", overflow="fold", width=w)
        widths = {i: w for i, w in zip(group, [c.width for c in t.columns], strict=True)}
        for ri, r in enumerate(rows):
            cells = []
            for i in group:
                text = measure[ri][i]
                if i < keys and columns(text) > (widths[i] or 0):  # a long name wraps at its separators
                    cells.append(Text("\n".join(wrap_cell(text, widths[i] or 1)),
                                      style=r[i].style if isinstance(r[i], Text) else ""))
                else:
                    cells.append(r[i])
            t.add_row(*cells, style=styles[ri] if styles else None)
        out.append(t)
    return out
