"""The redaction hook: applied to every span before it is stored, so a secret in a span attribute never reaches
the store, a case file, a judge prompt or a log."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from .._util._redact import MASK, may_hold_secrets, redact_text, secret_values
from ..errors import UserError
from ._otlp import SpanRecord

SpanHook = Callable[[dict[str, Any]], dict[str, Any] | None]
"""A user's callable: gets the span as a dict (``name``, ``attributes``, ...) and returns it changed, or None to
drop the span (counted as ``redacted_out``)."""


class Redactor:
    """Regex patterns (each match in a string attribute becomes ``***``), referee's own secret masks (provider
    keys, credentials in URLs) and an optional callable, in that order."""

    def __init__(self, patterns: Sequence[str] = (), hook: SpanHook | None = None) -> None:
        try:
            self.patterns = [re.compile(p) for p in patterns]
        except re.error as exc:
            raise UserError(f"redaction pattern: {exc}") from None
        self.hook = hook
        self._secrets = secret_values()

    def _text(self, s: str) -> str:
        for p in self.patterns:
            s = p.sub(MASK, s)
        return redact_text(s, values=self._secrets)

    def _value(self, v: Any) -> Any:
        if isinstance(v, str):
            return self._text(v)
        if isinstance(v, list):
            return [self._value(x) for x in v]
        if isinstance(v, dict):
            return {k: self._value(x) for k, x in v.items()}
        return v

    def _strings(self, v: Any, out: list[str]) -> None:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, list):
            for x in v:
                self._strings(x, out)
        elif isinstance(v, dict):
            for x in v.values():
                self._strings(x, out)

    def apply(self, span: SpanRecord) -> SpanRecord | None:
        texts = [span.name, span.status_message]
        for value in span.attributes.values():
            if type(value) is str:  # noqa: E721 - most attributes; anything else is walked
                texts.append(value)
            else:
                self._strings(value, texts)
        joined = "\n".join(texts)
        # One look at all the span's text first: most spans hold nothing to mask, and then nothing is rebuilt.
        if any(p.search(joined) for p in self.patterns) or may_hold_secrets(joined, self._secrets):
            span.attributes = {k: self._value(v) for k, v in span.attributes.items()}
            span.name = self._text(span.name)
            span.status_message = self._text(span.status_message)
        if self.hook is None:
            return span
        out = self.hook(span.as_dict())
        return None if out is None else SpanRecord.from_dict(out)
