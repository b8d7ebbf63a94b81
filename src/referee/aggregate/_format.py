"""Text helpers of the aggregate's reports: printable case text, p-values, numbers."""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """Case text (ids, categories) bound for a terminal: control characters such as ANSI escapes become
    a replacement character, so a results file cannot rewrite the user's terminal or CI log."""
    return _CONTROL.sub("\ufffd", text)


def format_p(p: float | None, n_boot: int) -> str:
    """A bootstrap p of 0 means no resample crossed zero: it is below 1/n_boot, not zero."""
    if p is None:
        return "n/a"
    return f"<{1 / n_boot:.2g}" if p == 0 else f"{p:.3g}"


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.3f}"
