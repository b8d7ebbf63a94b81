"""Numbers users give referee (arguments, settings): a whole number in range, or a UserError naming it."""

from __future__ import annotations

from typing import Any

from ..errors import UserError


def count(n: int, word: str, many: str | None = None) -> str:
    """``1 case``, ``2 cases``: a count with its noun in the right number (``many``: an irregular plural)."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


def whole_number(value: Any, what: str, *, minimum: int = 1) -> int:
    """``value`` when it is a whole number >= ``minimum`` (not a bool, a float or NaN); else UserError naming it."""
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise UserError(f"{what} must be a whole number >= {minimum}, got {value!r}")
    return int(value)
