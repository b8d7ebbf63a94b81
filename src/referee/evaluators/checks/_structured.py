"""Structured-output checks: JSON validity, JSON Schema, numeric tolerance."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from ...cases._case import Case
from .._base import CheckResult, Evaluator, register
from ._common import OptionError, as_text, clip, expected_value

_FENCE_RE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n(.*?)\n?\s*```\s*$", re.DOTALL)


def _parse_json(output: Any, allow_fence: bool) -> tuple[Any, str | None]:
    """(value, None) or (None, why it is not JSON). Non-string outputs are already structured."""
    if not isinstance(output, str):
        return output, None
    text = output
    if allow_fence:
        m = _FENCE_RE.match(text)
        if m:
            text = m.group(1)
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"


@register
@dataclass
class IsJson(Evaluator):
    """The output parses as JSON (one surrounding Markdown code fence is allowed unless disabled)."""

    name: ClassVar[str] = "is_json"
    allow_fence: bool = True

    def evaluate(self, case: Case, output: Any) -> CheckResult:
        _, err = _parse_json(output, self.allow_fence)
        return CheckResult.from_bool(err is None, err or "valid JSON")


@register
@dataclass
class JsonSchema(Evaluator):
    """The output is JSON valid against a JSON Schema (inline ``schema`` or ``schema_file``)."""

    name: ClassVar[str] = "json_schema"
    primary: ClassVar[str] = "schema"
    schema: dict[str, Any] | None = None
    schema_file: str | None = None
    allow_fence: bool = True
    _validator: Any = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        import jsonschema

        if (self.schema is None) == (self.schema_file is None):
            raise OptionError("schema", "give exactly one of 'schema' or 'schema_file'")
        schema: Any = self.schema
        if self.schema_file is not None:
            try:
                schema = json.loads(Path(self.schema_file).read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise OptionError("schema_file", f"cannot read a JSON schema from {self.schema_file}: {exc}") from None
        cls = jsonschema.validators.validator_for(schema)
        try:
            cls.check_schema(schema)
        except jsonschema.SchemaError as exc:
            where = "/".join(str(p) for p in exc.absolute_path)
            raise OptionError("schema_file" if self.schema_file else "schema",
                              f"invalid JSON Schema{' at ' + where if where else ''}: {exc.message}") from None
        self._validator = cls(schema)

    def evaluate(self, case: Case, output: Any) -> CheckResult:
        value, err = _parse_json(output, self.allow_fence)
        if err is not None:
            return CheckResult.from_bool(False, err)
        errors = sorted(self._validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        if not errors:
            return CheckResult.from_bool(True, "valid against the schema")
        msgs = [f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {clip(e.message, 120)}" for e in errors]
        return CheckResult(score=0.0, passed=False, reason=msgs[0] + (f" (+{len(msgs) - 1} more)" if len(msgs) > 1 else ""),
                           evidence=msgs[:5])


# A sign counts only when it does not join two words: "brulee-10-tips" holds 10, not -10; "x = -3" holds -3.
_NUM_RE = re.compile(r"(?:(?<!\w)[-+])?(?:\d[\d,_]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _numbers(text: str) -> list[float]:
    out = []
    for m in _NUM_RE.finditer(text):
        raw = m.group(0).replace(",", "").replace("_", "")
        try:
            out.append(float(raw))
        except ValueError:
            continue
    return out


@register
@dataclass
class Numeric(Evaluator):
    """A number in the output is within ``abs_tol`` or ``rel_tol`` of the expected value."""

    name: ClassVar[str] = "numeric"
    primary: ClassVar[str] = "value"
    value: float | None = None
    from_field: str | None = None
    abs_tol: float = 0.0
    rel_tol: float = 0.0
    pick: Literal["first", "last", "only", "any"] = "first"
    """Which number of the output is compared; ``only`` fails when there are several, ``any`` passes if one fits."""

    def __post_init__(self) -> None:
        if self.abs_tol < 0:
            raise OptionError("abs_tol", "must be >= 0")
        if self.rel_tol < 0:
            raise OptionError("rel_tol", "must be >= 0")

    def evaluate(self, case: Case, output: Any) -> CheckResult:
        exp_raw = expected_value(self.value, self.from_field, case)
        if isinstance(exp_raw, int | float) and not isinstance(exp_raw, bool):
            expected = float(exp_raw)
        else:
            nums = _numbers(as_text(exp_raw)) if exp_raw is not None else []
            if len(nums) != 1:
                return CheckResult.error(f"expected value {clip(as_text(exp_raw))!r} is not a single number")
            expected = nums[0]
        if isinstance(output, int | float) and not isinstance(output, bool):
            got = [float(output)]
        else:
            got = _numbers(as_text(output))
        if not got:
            return CheckResult.from_bool(False, "no number in the output")
        if self.pick == "only" and len(got) > 1:
            return CheckResult.from_bool(False, f"{len(got)} numbers in the output; expected exactly one")

        def close(x: float) -> bool:
            return math.isclose(x, expected, rel_tol=self.rel_tol, abs_tol=self.abs_tol)

        if self.pick == "any":
            hit = next((x for x in got if close(x)), None)
            ok = hit is not None
            return CheckResult.from_bool(ok, f"{hit:g} ~ {expected:g}" if ok else f"no number within tolerance of {expected:g}")
        x = got[-1] if self.pick == "last" else got[0]
        ok = close(x)
        return CheckResult.from_bool(ok, f"{x:g} {'~' if ok else '!='} {expected:g}", value=x, expected=expected)
