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


def pct(x: float | None) -> str:
    """A rate as a percentage with one decimal (``n/a`` when undefined)."""
    return "n/a" if x is None else f"{x:.1%}"


def num(x: float | None, digits: int = 3) -> str:
    """A number with ``digits`` decimals (``n/a`` when undefined)."""
    return "n/a" if x is None else f"{x:.{digits}f}"


def ci_range(lo: float | None, hi: float | None, pct_scale: bool, *, one_percent_sign: bool = False) -> str:
    """``lo–hi`` of a confidence interval, as percentages (``one_percent_sign``: ``12.5–30.0%``, the terminal's
    narrower form) or as numbers with three decimals; ``n/a`` without an interval."""
    if lo is None or hi is None:
        return "n/a"
    if not pct_scale:
        return f"{lo:.3f}–{hi:.3f}"
    return f"{lo * 100:.1f}–{pct(hi)}" if one_percent_sign else f"{pct(lo)}–{pct(hi)}"


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.3f}"
