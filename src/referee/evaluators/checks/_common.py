"""Helpers shared by the built-in checks: option errors that name their field, text coercion."""

from __future__ import annotations

import re
import string
import unicodedata
from typing import Any

from ...cases._case import Case
from ...errors import OptionError as OptionError  # the checks raise it from here
from .._output_text import as_text as as_text  # the checks' view of an output


def candidates(value: Any) -> list[str]:
    """A reference may be one value or a list of acceptable ones: each as text."""
    if isinstance(value, list | tuple):
        return [as_text(v) for v in value]
    return [as_text(value)]


def expected_value(value: Any, from_field: str | None, case: Case) -> Any:
    """The value a check compares against: its ``value`` option, else a case field (``reference`` default)."""
    if value is not None:
        return value
    return case.get(from_field or "reference")


_WS_RE = re.compile(r"\s+")
_PUNCT_TABLE = {ord(c): None for c in string.punctuation}


def _is_punct(ch: str) -> bool:
    return unicodedata.category(ch).startswith("P")


def normalise(text: str, *, ignore_case: bool = False, ignore_whitespace: bool = False,
              ignore_punctuation: bool = False, unicode_form: str | None = "NFKC", strip: bool = True) -> str:
    if unicode_form:
        text = unicodedata.normalize(unicode_form, text)  # type: ignore[arg-type]
    if ignore_punctuation:
        text = text.translate(_PUNCT_TABLE)
        if not text.isascii():
            text = "".join(ch for ch in text if not _is_punct(ch))
    if ignore_whitespace:
        text = _WS_RE.sub(" ", text)
    if strip or ignore_whitespace:
        text = text.strip()
    if ignore_case:
        text = text.casefold()
    return text


_TOKEN_RE = re.compile(r"\w+", re.UNICODE)


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens (the SQuAD-style normalisation, without article removal)."""
    return _TOKEN_RE.findall(text.casefold())


def clip(text: str, n: int = 80) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"
