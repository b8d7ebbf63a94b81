"""The text a check looks at, one definition for every check that matches text (the built-in checks, the
trajectory checks, the red-team expectation): strings as they are, None as empty, anything else as compact
JSON with keys sorted and non-ASCII kept (an escaped ``"caf\\u00e9"`` would hide ``café`` from ``contains``)."""

from __future__ import annotations

import json
from typing import Any


def as_text(value: Any) -> str:
    """``value`` as the text a check matches against (see the module docstring)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(value)
