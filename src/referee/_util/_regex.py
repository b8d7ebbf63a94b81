"""Users' regular expressions, run with a time bound.

Python's ``re`` cannot be interrupted: a pattern that backtracks catastrophically, or a plain one over a
50 MB output, holds the run. Every user-supplied pattern (the ``regex`` check, trajectory goals and tool
patterns, red-team refusal patterns) goes through here: the ``regex`` package (an ``re``-compatible engine)
with a timeout, and a :class:`RegexTimeout` the caller turns into an ``error`` row.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import RefereeError

TIMEOUT_S = 1.0
"""Seconds one match may take (a linear pattern scans about 100 MB in that time)."""

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\uff07": "'"})


def fold_apostrophes(text: str) -> str:
    """``text`` with the apostrophes models write (curly, modifier letter, fullwidth) as ``'``, so that a
    built-in pattern spelled with ``'`` ("couldn't", "I can't") matches them all."""
    return text.translate(_APOSTROPHES)


class RegexTimeout(RefereeError):
    """A user's pattern took longer than :data:`TIMEOUT_S`."""

    def __init__(self, pattern: str, chars: int) -> None:
        shown = pattern if len(pattern) <= 60 else pattern[:60] + "..."
        super().__init__(f"regex /{shown}/ took more than {TIMEOUT_S:g} s on {chars:,} characters; stopped")


def _flags(regex: Any, flags: int) -> int:
    out = 0
    for std, ext in ((re.IGNORECASE, regex.IGNORECASE), (re.MULTILINE, regex.MULTILINE),
                     (re.DOTALL, regex.DOTALL), (re.VERBOSE, regex.VERBOSE)):
        if flags & std:
            out |= ext
    return out


def compile(pattern: str, flags: int = 0) -> Any:
    """A compiled pattern; a syntax error raises ``re.error`` as ``re.compile`` would (``re`` checks the
    syntax users write against)."""
    # Imported here (about 15 ms): a suite loads every built-in check, and most runs compile no user pattern.
    import regex

    re.compile(pattern, flags)
    return regex.compile(pattern, _flags(regex, flags) | regex.VERSION0)


def search(pattern: Any, text: str, flags: int = 0, *, full: bool = False) -> Any:
    """``search`` (or ``fullmatch``) bounded by :data:`TIMEOUT_S`; raises :class:`RegexTimeout`."""
    p = pattern if not isinstance(pattern, str) else compile(pattern, flags)
    try:
        return p.fullmatch(text, timeout=TIMEOUT_S) if full else p.search(text, timeout=TIMEOUT_S)
    except TimeoutError:
        raise RegexTimeout(p.pattern, len(text)) from None
