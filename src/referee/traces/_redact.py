"""The redaction hook: applied to every span before it is stored, so a secret in a span attribute never reaches
the store, a case file, a judge prompt or a log."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from .._util import _regex
from .._util._redact import MASK, may_hold_secrets, redact_text, secret_values
from ..errors import RefereeError, UserError
from ._otlp import SpanRecord

SpanHook = Callable[[dict[str, Any]], dict[str, Any] | None]
"""A user's callable: gets the span as a dict (``name``, ``attributes``, ...) and returns it changed, or None to
drop the span (counted as ``redacted_out``)."""


class RedactionTimeout(RefereeError):  # noqa: N818 - reads as the condition it names
    """A redaction pattern took longer than ``_util/_regex.TIMEOUT_S`` on a span: the span is not stored."""


class RedactionHookError(RefereeError):
    """The redaction hook raised, or returned something that is not a span: the span is not stored."""


def _shown(pattern: str) -> str:
    return pattern if len(pattern) <= 60 else pattern[:60] + "..."


class Redactor:
    """Regex patterns (each match in a string attribute becomes ``***``), referee's own secret masks (provider
    keys, credentials in URLs) and an optional callable, in that order."""

    def __init__(self, patterns: Sequence[str] = (), hook: SpanHook | None = None) -> None:
        # The patterns are the operator's, the text the application's users': each match is bounded in time
        # (users' patterns all go through _util/_regex), so a pattern that backtracks cannot hold the receiver.
        self.patterns: list[Any] = []
        for p in patterns:
            try:
                self.patterns.append(_regex.compile(p))
            except re.error as exc:
                raise UserError(f"redaction pattern {_shown(p)!r}: {exc}") from None
        self.hook = hook
        self._secrets = secret_values()

    def _text(self, s: str) -> str:
        for p in self.patterns:
            s = p.sub(MASK, s, timeout=_regex.TIMEOUT_S)
        return redact_text(s, values=self._secrets)

    def _value(self, v: Any) -> Any:
        if isinstance(v, str):
            return self._text(v)
        if isinstance(v, list):
            return [self._value(x) for x in v]
        if isinstance(v, dict):
            return {self._text(k): self._value(x) for k, x in v.items()}
        return v

    def _strings(self, v: Any, out: list[str]) -> None:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, list):
            for x in v:
                self._strings(x, out)
        elif isinstance(v, dict):
            for k, x in v.items():
                out.append(k)
                self._strings(x, out)

    def apply(self, span: SpanRecord) -> SpanRecord | None:
        # Names are text too: an attribute's key (or a nested map's) and the service's name can hold what a
        # pattern masks (an e-mail address as a map's key), and the store keeps them as they are.
        texts = [span.name, span.status_message, span.service or "", *span.attributes]
        for value in span.attributes.values():
            if type(value) is str:  # noqa: E721 - most attributes; anything else is walked
                texts.append(value)
            else:
                self._strings(value, texts)
        joined = "\n".join(texts)
        # One look at all the span's text first: most spans hold nothing to mask, and then nothing is rebuilt.
        try:
            if any(p.search(joined, timeout=_regex.TIMEOUT_S) for p in self.patterns) \
                    or may_hold_secrets(joined, self._secrets):
                # Two keys that read the same once masked keep the later value: a key is never kept unmasked.
                span.attributes = {self._text(k): self._value(v) for k, v in span.attributes.items()}
                span.name = self._text(span.name)
                span.status_message = self._text(span.status_message)
                span.service = self._text(span.service) if span.service else span.service
        except TimeoutError:  # never stored unredacted: the span is dropped, and counted
            raise RedactionTimeout from None
        if self.hook is None:
            return span
        # The hook is the operator's code: when it fails on a span, that span is dropped (never stored unredacted),
        # not the request refused as if the store were down, which had the exporter resend it without end.
        try:
            out = self.hook(span.as_dict())
            return None if out is None else SpanRecord.from_dict(out)
        except Exception as exc:  # noqa: BLE001 - any failure of user code on one span
            raise RedactionHookError(type(exc).__name__) from None
