"""JSON on the judging hot path through orjson, with exactly the results of the standard ``json`` module.

A judge run encodes a request and decodes a reply body and a verdict per case; orjson does each 5-20x faster.
It accepts a subset of what ``json`` accepts, with the same values, except integers beyond 64 bits (which it
turns into floats): text holding 19 digits in a row, and anything orjson refuses (NaN, lone-surrogate escapes,
deep nesting), goes to ``json``, so values and error messages are ``json``'s own.
"""

from __future__ import annotations

import json
import re
from typing import Any

try:  # a core dependency (pyproject.toml); json is the fallback, as in the results readers
    import orjson
except ImportError:  # pragma: no cover - exercised only without orjson
    orjson = None  # type: ignore[assignment]

_LONG_DIGITS = re.compile(r"\d{19}")
"""Integers of up to 18 digits fit in 64 bits; longer ones (or long decimals, to keep the test simple) go to json."""


def loads(text: str) -> Any:
    """:func:`json.loads` (same value, same exceptions)."""
    if orjson is not None and not _LONG_DIGITS.search(text):
        try:
            return orjson.loads(text)
        except ValueError:  # orjson.JSONDecodeError is a ValueError: json says what is wrong, in its words
            pass
    return json.loads(text)


def dumps_bytes(value: Any) -> bytes:
    """``json.dumps(value).encode()`` as far as any JSON parser can tell (orjson writes no spaces and keeps
    non-ASCII as UTF-8); json where orjson refuses the value (a lone surrogate, an integer beyond 64 bits)."""
    if orjson is not None:
        try:
            return orjson.dumps(value)
        except TypeError:  # orjson.JSONEncodeError is a TypeError
            pass
    return json.dumps(value).encode("utf-8")
