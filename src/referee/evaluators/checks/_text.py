"""String checks: equals, contains, not_contains, regex, starts_with, ends_with, length."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from ..._util import _regex
from ...cases._case import Case
from .._base import CheckResult, Evaluator, register
from ._common import OptionError, as_text, candidates, clip, expected_value, normalise

UnicodeForm = Literal["NFC", "NFKC", "NFD", "NFKD"]


@register
@dataclass
class Equals(Evaluator):
    """The output equals the expected value (or any of a list) after the chosen normalisation."""

    name: ClassVar[str] = "equals"
    primary: ClassVar[str] = "value"
    value: Any = None
    """Expected value; default: the case's ``from_field`` (``reference``)."""
    from_field: str | None = None
    ignore_case: bool = False
    ignore_whitespace: bool = False
    """Collapse runs of whitespace to one space (leading/trailing whitespace is always stripped)."""
    ignore_punctuation: bool = False
    unicode_form: UnicodeForm | None = "NFKC"

    def _norm(self, text: str) -> str:
        return normalise(text, ignore_case=self.ignore_case, ignore_whitespace=self.ignore_whitespace,
                         ignore_punctuation=self.ignore_punctuation, unicode_form=self.unicode_form)

    def evaluate(self, case: Case, output: Any) -> CheckResult:
        expected = expected_value(self.value, self.from_field, case)
        if expected is None:
            return CheckResult.error(f"no expected value: set 'value' or give cases a '{self.from_field or 'reference'}'")
        got = self._norm(as_text(output))
        for cand in candidates(expected):
            if self._norm(cand) == got:
                return CheckResult.from_bool(True, "equal")
        return CheckResult.from_bool(False, f"expected {clip(as_text(expected))!r}, got {clip(got)!r}")


def _as_list(value: str | list[str], option: str) -> list[str]:
    items = [value] if isinstance(value, str) else list(value)
    if not items:
        raise OptionError(option, "needs at least one string")
    return [str(v) for v in items]


@register
@dataclass
class Contains(Evaluator):
    """The output contains the given string(s): ``mode: any`` (default) or ``all``."""

    name: ClassVar[str] = "contains"
    primary: ClassVar[str] = "value"
    value: str | list[str] = field(default_factory=list)
    mode: Literal["any", "all"] = "any"
    ignore_case: bool = True
    _needles: list[str] = field(init=False, repr=False, default_factory=list)

    def __post_init__(self) -> None:
        items = _as_list(self.value, "value")
        self._needles = [s.casefold() for s in items] if self.ignore_case else items

    def _found(self, output: Any) -> list[bool]:
        text = as_text(output)
        if self.ignore_case:
            text = text.casefold()
        return [n in text for n in self._needles]

    def evaluate(self, case: Case, output: Any) -> CheckResult:
        found = self._found(output)
        items = _as_list(self.value, "value")
        missing = [s for s, f in zip(items, found, strict=True) if not f]
        hits = [s for s, f in zip(items, found, strict=True) if f]
        if self.mode == "all":
            score = sum(found) / len(found)
            ok = not missing
            reason = "all present" if ok else f"missing: {', '.join(repr(m) for m in missing)}"
        else:
            ok = bool(hits)
            score = 1.0 if ok else 0.0
            reason = f"found {hits[0]!r}" if ok else f"none of {', '.join(repr(m) for m in items)} found"
        return CheckResult(score=score, passed=ok, reason=reason, evidence=hits)


@register
@dataclass
class NotContains(Contains):
    """The output contains none of the given strings (forbidden phrases, promises, leaked secrets)."""

    name: ClassVar[str] = "not_contains"
    mode: Literal["any", "all"] = "any"
    """``any`` (default): fails if any string is present; ``all``: fails only if all are."""

    def evaluate(self, case: Case, output: Any) -> CheckResult:
        found = self._found(output)
        items = _as_list(self.value, "value")
        hits = [s for s, f in zip(items, found, strict=True) if f]
        bad = all(found) if self.mode == "all" else bool(hits)
        reason = f"forbidden text present: {', '.join(repr(h) for h in hits)}" if bad else "none present"
        return CheckResult(score=0.0 if bad else 1.0, passed=not bad, reason=reason, evidence=hits)


@register
@dataclass
class Regex(Evaluator):
    """The output matches a regular expression (``search`` by default; ``full_match`` for the whole text)."""

    name: ClassVar[str] = "regex"
    primary: ClassVar[str] = "pattern"
    pattern: str = ""
    ignore_case: bool = False
    multiline: bool = False
    dotall: bool = False
    full_match: bool = False
    negate: bool = False
    """Pass when the pattern does NOT match (forbidden patterns)."""
    _re: Any = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        if not self.pattern:
            raise OptionError("pattern", "is required")
        flags = ((re.IGNORECASE if self.ignore_case else 0) | (re.MULTILINE if self.multiline else 0)
                 | (re.DOTALL if self.dotall else 0))
        try:
            self._re = _regex.compile(self.pattern, flags)
        except re.error as exc:
            raise OptionError("pattern", f"invalid regex {self.pattern!r}: {exc}") from None

    def evaluate(self, case: Case, output: Any) -> CheckResult:
        assert self._re is not None
        text = as_text(output)
        try:  # bounded in time: a 50 MB output or a backtracking pattern is an error row, not a hung run
            m = _regex.search(self._re, text, full=self.full_match)
        except _regex.RegexTimeout as exc:
            return CheckResult.error(str(exc))
        if self.negate:
            if m:
                return CheckResult(score=0.0, passed=False, reason=f"forbidden pattern matched {clip(m.group(0))!r}",
                                   evidence=[m.group(0)])
            return CheckResult.from_bool(True, "pattern absent")
        if m:
            return CheckResult(score=1.0, passed=True, reason=f"matched {clip(m.group(0))!r}", evidence=[m.group(0)])
        return CheckResult.from_bool(False, f"no match for /{clip(self.pattern)}/")


@dataclass
class _Affix(Evaluator):
    primary: ClassVar[str] = "value"
    value: str | list[str] = field(default_factory=list)
    ignore_case: bool = False
    strip: bool = True
    _items: tuple[str, ...] = field(init=False, repr=False, default=())

    def __post_init__(self) -> None:
        items = _as_list(self.value, "value")
        self._items = tuple(s.casefold() for s in items) if self.ignore_case else tuple(items)

    def _text(self, output: Any) -> str:
        text = as_text(output)
        if self.strip:
            text = text.strip()
        return text.casefold() if self.ignore_case else text


@register
@dataclass
class StartsWith(_Affix):
    """The output starts with the value (or one of a list)."""

    name: ClassVar[str] = "starts_with"

    def evaluate(self, case: Case, output: Any) -> CheckResult:
        ok = self._text(output).startswith(self._items)
        return CheckResult.from_bool(ok, "starts as expected" if ok else
                                     f"does not start with {' or '.join(repr(s) for s in self._items)}")


@register
@dataclass
class EndsWith(_Affix):
    """The output ends with the value (or one of a list)."""

    name: ClassVar[str] = "ends_with"

    def evaluate(self, case: Case, output: Any) -> CheckResult:
        ok = self._text(output).endswith(self._items)
        return CheckResult.from_bool(ok, "ends as expected" if ok else
                                     f"does not end with {' or '.join(repr(s) for s in self._items)}")


@register
@dataclass
class Length(Evaluator):
    """The output's length lies within bounds, in characters (default) or words."""

    name: ClassVar[str] = "length"
    min: int | None = None
    max: int | None = None
    unit: Literal["chars", "words"] = "chars"

    def __post_init__(self) -> None:
        if self.min is None and self.max is None:
            raise OptionError("min", "give 'min', 'max' or both")
        if self.min is not None and self.min < 0:
            raise OptionError("min", "must be >= 0")
        if self.min is not None and self.max is not None and self.max < self.min:
            raise OptionError("max", f"{self.max} is below min {self.min}")

    def evaluate(self, case: Case, output: Any) -> CheckResult:
        text = as_text(output)
        n = len(text.split()) if self.unit == "words" else len(text)
        if self.min is not None and n < self.min:
            return CheckResult.from_bool(False, f"{n} {self.unit} < min {self.min}", length=n)
        if self.max is not None and n > self.max:
            return CheckResult.from_bool(False, f"{n} {self.unit} > max {self.max}", length=n)
        return CheckResult.from_bool(True, f"{n} {self.unit}", length=n)
