"""Limits every reader of users' JSON and YAML applies, so hostile input is a one-line error, not a hang.

- Nesting deeper than :data:`MAX_DEPTH` (JSON nested 100,000 deep overflows the stack).
- Integers longer than Python's 4,300-digit limit (a ``ValueError`` deep inside ``json``).
- Lone surrogates (``"\\ud800"``): valid JSON escapes but not Unicode, so writing them to a results file
  would fail after calls were paid for, and again on every resume.
- YAML whose aliases expand to more than :data:`MAX_YAML_NODES` values (a 500-byte "billion laughs").
- Table cells longer than :data:`MAX_CELL_BYTES`, Parquet files decoding to more than :data:`MAX_TABLE_BYTES`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from ..errors import RefereeError

MAX_DEPTH = 128
MAX_YAML_NODES = 1_000_000
MAX_CELL_BYTES = 32 * 2**20
"""One cell of a table (CSV, Parquet) at most, decoded: a longer value is an error naming its row and column."""
MAX_TABLE_BYTES = 2**30
"""A Parquet file's decoded values at most (a few KB of compressed Parquet can expand to gigabytes)."""


def jsonl_lines(text: str) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of each non-blank line of JSONL ``text``, split on newlines only: ``str.splitlines``
    also splits on U+2028, U+0085, form feed ..., which valid JSON strings may hold unescaped
    (``json.dumps(ensure_ascii=False)`` writes them so)."""
    for n, line in enumerate(text.split("\n"), 1):
        if line.strip():
            yield n, line


class UnsafeData(RefereeError, ValueError):
    """Input that parses but cannot be used safely; the message says why, in one line."""


def check_data(value: Any) -> Any:
    """``value`` unchanged, or :class:`UnsafeData` for nesting beyond :data:`MAX_DEPTH` or a lone surrogate."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, str):
            _check_str(v)
        elif isinstance(v, dict | list):
            if depth > MAX_DEPTH:
                raise UnsafeData(f"nested deeper than {MAX_DEPTH} levels")
            items = v.items() if isinstance(v, dict) else enumerate(v)
            for k, item in items:
                if isinstance(k, str):
                    _check_str(k)
                if isinstance(item, str | dict | list):
                    stack.append((item, depth + 1))
    return value


def _check_str(s: str) -> None:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UnsafeData(f"a string holds a lone surrogate (U+{ord(s[exc.start]):04X}), which is not valid "
                         "Unicode") from None


# A lone surrogate reaches a parsed value only through an escape in the range \uD800-\uDFFF, or a raw
# surrogate: in a str, or in bytes (json decodes bytes with "surrogatepass": UTF-8 ED A0-BF xx).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_B = re.compile(rb"\\u[dD][89a-fA-F]")


def _plainly_safe(text: str | bytes) -> bool:
    """Whether ``text`` cannot hold what :func:`check_data` refuses, judged from the text alone: no more opening
    brackets than :data:`MAX_DEPTH` (nesting needs one per level), no escape in the surrogate range, and (str)
    no raw surrogate. Most lines of a cases file pass, and skip the walk over their parsed values."""
    if isinstance(text, bytes):
        # NUL bytes: UTF-16/32 text, which the patterns below would not see; ED: an encoded surrogate.
        return (text.count(b"[") + text.count(b"{") <= MAX_DEPTH and b"\x00" not in text and b"\xed" not in text
                and not (b"\\u" in text and _SURROGATE_ESCAPE_B.search(text)))
    if text.count("[") + text.count("{") > MAX_DEPTH or ("\\u" in text and _SURROGATE_ESCAPE.search(text)):
        return False
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def loads(text: str | bytes, **kwargs: Any) -> Any:
    """``json.loads`` with the limits above; JSON syntax errors stay ``json.JSONDecodeError``."""
    try:
        value = json.loads(text, **kwargs)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise UnsafeData(f"nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:
        if "digits" in str(exc):
            raise UnsafeData("a number has more than 4,300 digits") from None
        raise
    return value if not kwargs and _plainly_safe(text) else check_data(value)
