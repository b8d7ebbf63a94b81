"""JSON on the hot paths through orjson (and msgspec for large documents), with exactly the results of the
standard ``json`` module.

A judge run encodes a request and decodes a reply body and a verdict per case; orjson does each 5-20x faster.
It accepts a subset of what ``json`` accepts, with the same values, except integers beyond 64 bits (which it
turns into floats): text holding 19 digits in a row, and anything orjson refuses (NaN, lone-surrogate escapes,
deep nesting), goes to ``json``, so values and error messages are ``json``'s own.
"""

from __future__ import annotations

import json
import math
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


def loads_document(body: bytes) -> Any:
    """:func:`json.loads` of a large document (same value, same exceptions), through msgspec: it reads integers of
    any size exactly, so unlike :func:`loads` no scan for long digit runs is needed (a recorded OTLP/JSON file has
    a 19-digit timestamp in every span). What msgspec refuses (NaN, a number past a double, lone surrogates, a
    byte-order mark, deep nesting) goes to ``json``."""
    import msgspec

    try:
        return msgspec.json.decode(body)
    except (msgspec.DecodeError, RecursionError):
        return json.loads(body)


def dumps_bytes(value: Any) -> bytes:
    """``json.dumps(value).encode()`` as far as any JSON parser can tell (orjson writes no spaces and keeps
    non-ASCII as UTF-8); json where orjson refuses the value (a lone surrogate, an integer beyond 64 bits) or
    would write ``null`` for a float json writes as ``NaN``/``Infinity`` (``--temperature nan`` must reach the
    server as what it is, not as "no temperature")."""
    if orjson is not None:
        try:
            body = orjson.dumps(value)
        except TypeError:  # orjson.JSONEncodeError is a TypeError
            pass
        else:
            # orjson writes NaN and infinities as null: no "null" in the body (the usual request) means none was
            # there; otherwise look for one.
            if b"null" not in body or _finite(value):
                return body
    return json.dumps(value).encode("utf-8")


def _finite(value: Any) -> bool:
    """Whether no float inside ``value`` is NaN or infinite."""
    todo = [value]
    while todo:
        v = todo.pop()
        if isinstance(v, dict):
            todo.extend(v.values())
        elif isinstance(v, list | tuple):
            todo.extend(v)
        elif isinstance(v, float) and not math.isfinite(v):
            return False
    return True
