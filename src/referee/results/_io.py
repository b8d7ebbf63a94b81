"""Reading result rows (JSONL, one row per line; seed rows load unchanged). Appending them: ``_writer.py``."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .._util import _data
from ..errors import InputError
from ._schema import ResultRow
from ._writer import ResultWriter as ResultWriter  # its home before the writer had a module of its own

# Keys of the seed's rows that map onto ResultRow fields directly.
_LEGACY_FIELDS = {
    "id", "score", "category", "rationale", "cost_usd", "latency_ms",
    "winner", "position_bias_detected", "repeat", "turn", "status", "passed", "evaluator",
}


@dataclass
class LoadedResults:
    """Rows of one results file and the problems met while reading it."""

    path: str
    rows: list[ResultRow] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _describe(err: ValidationError) -> tuple[str | None, str]:
    first = err.errors()[0]
    loc = ".".join(str(x) for x in first.get("loc", ()) if x != "__root__") or None
    return loc, first.get("msg", str(err))


def row_from_dict(data: dict[str, Any]) -> ResultRow:
    """Validate one decoded JSON object as a row (referee's own, or a seed row)."""
    if "schema_version" in data:
        return ResultRow.model_validate(data)
    # A seed row: coerce what the seed allowed (booleans as scores, numeric ids) and keep unknown keys.
    known: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for k, v in data.items():
        (known if k in _LEGACY_FIELDS else extra)[k] = v
    if "id" in known and isinstance(known["id"], int | float) and not isinstance(known["id"], bool):
        known["id"] = str(known["id"])
    score = known.get("score")
    if isinstance(score, bool):
        known["score"] = 1.0 if score else 0.0
    if "score" not in known or known.get("score") is None:
        known.setdefault("status", "unscored")
        known.pop("score", None)
    if extra:
        known["metadata"] = extra
    return ResultRow.model_validate(known)


def read_results(path: str | Path, *, strict: bool = False) -> LoadedResults:
    """Read a results file. A malformed line is skipped with a warning naming file and line (as the seed
    does); with ``strict`` it raises :class:`InputError` instead."""
    p = Path(path)
    if not p.exists():
        raise InputError("file not found", file=str(p))
    out = LoadedResults(path=str(p))
    with open(p, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]  # a BOM from a Windows editor is not part of row 1 (`referee score` reads it so)
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                _problem(out, strict, p, lineno, None, f"not UTF-8 ({exc.reason} at byte {exc.start})")
                continue
            try:
                data = _data.loads(text, parse_constant=_reject_constant)
            except ValueError as exc:  # malformed, or refused (deep nesting, huge numbers, lone surrogates)
                _problem(out, strict, p, lineno, None, f"malformed JSON ({exc})")
                continue
            if not isinstance(data, dict):
                _problem(out, strict, p, lineno, None, "expected a JSON object")
                continue
            try:
                out.rows.append(row_from_dict(data))
            except ValidationError as exc:
                fld, msg = _describe(exc)
                _problem(out, strict, p, lineno, fld, msg)
    return out


def _reject_constant(name: str) -> float:
    # json accepts NaN/Infinity by default; a NaN score must be reported, not averaged.
    if name == "NaN":
        return math.nan
    raise ValueError(f"{name} is not a valid number")


def _problem(out: LoadedResults, strict: bool, path: Path, line: int, fld: str | None, msg: str) -> None:
    err = InputError(msg, file=str(path), line=line, field=fld)
    if strict:
        raise err
    out.warnings.append(f"skipped {err}")


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, Any]]:
    """Yield (line number, decoded value) for each non-empty line; raises InputError on bad JSON."""
    for lineno, value in iter_jsonl_lenient(path):
        if isinstance(value, InputError):
            raise value
        yield lineno, value


def iter_jsonl_lenient(path: str | Path) -> Iterator[tuple[int, Any]]:
    """:func:`iter_jsonl` for readers that skip bad lines with a warning (as the seed's scripts do): a line that
    cannot be decoded yields its :class:`InputError` (file and line) instead of raising it."""
    p = Path(path)
    with open(p, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]  # a BOM from a Windows editor is not part of row 1
            if not raw.strip():
                continue
            try:
                yield lineno, _data.loads(raw.decode("utf-8"))
            except _data.UnsafeData as exc:
                yield lineno, InputError(f"refused JSON: {exc}", file=str(p), line=lineno)
            except UnicodeDecodeError as exc:
                yield lineno, InputError(f"not UTF-8 ({exc.reason} at byte {exc.start})", file=str(p), line=lineno)
            except json.JSONDecodeError as exc:
                yield lineno, InputError(f"malformed JSON ({exc.msg} at column {exc.colno})", file=str(p),
                                         line=lineno)


def iter_jsonl_objects(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """:func:`iter_jsonl` for files of JSON objects (labels, ratings, benchmark dumps): a missing file or a
    line that is not an object raises InputError naming the file (and line). Checks the file at once."""
    p = Path(path)
    if not p.is_file():
        raise InputError("file not found", file=str(p))
    return _objects(p)


def _objects(p: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for lineno, value in iter_jsonl(p):
        if not isinstance(value, dict):
            raise InputError("expected a JSON object", file=str(p), line=lineno)
        yield lineno, value
