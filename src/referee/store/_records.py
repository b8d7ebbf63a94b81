"""A stored run as the history lists it: plain data, importable without SQLAlchemy (``referee runs list`` on a
local file reads it with the standard library's ``sqlite3``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from typing import Any

from ..errors import UserError


@dataclass
class RunRecord:
    """One stored run, as ``referee runs list`` shows it."""

    id: str
    kind: str
    suite: str | None
    identity: str
    judge: str | None
    status: str
    started_at: str
    finished_at: str | None
    git_commit: str | None
    git_branch: str | None
    git_dirty: bool | None
    git_remote: str | None
    ci_provider: str | None
    ci_commit: str | None
    ci_ref: str | None
    ci_run_id: str | None
    results_path: str | None
    n_rows: int
    n_scored: int
    n_unscored: int
    n_error: int
    cost_usd: float | None
    input_tokens: int | None
    output_tokens: int | None
    wall_s: float | None
    pass_rate: float | None
    pass_rate_lo: float | None
    pass_rate_hi: float | None
    mean: float | None
    mean_lo: float | None
    mean_hi: float | None
    judge_key: str | None = None
    tags: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """What was wrong with the stored values (each then read as missing): empty unless the store is damaged."""

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    def place(self) -> str:
        """Where it ran, for people: ``branch @ commit`` (the CI's commit when git gave none), or "no git commit
        recorded"; printable, since another store's runs may be imported."""
        from ..aggregate import printable

        commit = self.git_commit or self.ci_commit
        if not self.git_branch and not commit:
            return "no git commit recorded"
        return printable(f"{self.git_branch or '?'} @ {(commit or '?')[:12]}")


_RUN_COLS = [c for c in RunRecord.__dataclass_fields__ if c not in ("tags", "problems")]
"""The ``runs`` columns a record holds, in its field order."""
_COUNTS = frozenset({"n_rows", "n_scored", "n_unscored", "n_error", "input_tokens", "output_tokens"})
_NUMBERS = frozenset({"cost_usd", "wall_s", "pass_rate", "pass_rate_lo", "pass_rate_hi", "mean", "mean_lo",
                      "mean_hi"})
_REQUIRED_COUNTS = frozenset({"n_rows", "n_scored", "n_unscored", "n_error"})


def record_of(values: Sequence[Any]) -> RunRecord:
    """A ``runs`` row (the columns of ``_RUN_COLS``, in order) as a record. SQLite keeps whatever a damaged or
    hostile file holds in a column, so each value is held to its column's type: one that is not is read as
    missing (0 for a count) and named in ``problems``, and the history stays readable."""
    data = dict(zip(_RUN_COLS, values, strict=True))
    problems: list[str] = []
    for name, v in data.items():
        if v is None:
            continue
        if name in _COUNTS:
            ok = isinstance(v, int) and not isinstance(v, bool) and v >= 0
        elif name in _NUMBERS:
            ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
        elif name == "git_dirty":
            ok = v in (0, 1)  # a boolean, or SQLite's 0 and 1
        else:
            ok = isinstance(v, str)
        if not ok:
            problems.append(f"{name} holds {str(v)[:40]!r}, not {_kind(name)}")
            data[name] = 0 if name in _REQUIRED_COUNTS else "" if name in ("id", "kind", "identity", "status",
                                                                             "started_at") else None
    return RunRecord(**data, problems=problems)


def _kind(name: str) -> str:
    if name in _COUNTS:
        return "a count"
    if name in _NUMBERS:
        return "a finite number"
    return "a flag" if name == "git_dirty" else "text"


MAX_LIMIT = 2**63 - 1
"""The largest row count SQLite and PostgreSQL take as a LIMIT: a larger one asks for every run, as this does."""


def row_limit(limit: object) -> int | None:
    """A listing's ``limit`` as a database takes it: None for no limit, else a whole number >= 0 (a larger one than
    any store holds means every row, never an overflow inside the driver)."""
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise UserError(f"limit must be a whole number, not {type(limit).__name__}")
    if limit < 0:
        raise UserError(f"limit must be 0 or more, not {limit}")
    return min(limit, MAX_LIMIT)


def time_bound(value: str, *, name: str, end: bool = False) -> str:
    """A ``since``/``until`` filter as the stored start times compare (UTC, ISO 8601). A date alone is its day's
    first moment, or as an ``end`` its last, so ``until=2026-12-07`` takes that whole day; a time without an offset
    is UTC. Anything else is a ``UserError`` naming the filter (a string compared as it is matched nothing)."""
    try:
        return utc_time(value, end=end)
    except ValueError:
        raise UserError(f"{name} {value!r}: expected a date (2026-12-07) or an ISO 8601 time "
                        "(2026-12-07T14:30, UTC unless it gives an offset such as +01:00)") from None


def utc_time(value: str, *, end: bool = False) -> str:
    """``value`` (a date, or an ISO 8601 time, UTC unless it gives an offset) as the store writes times: UTC,
    ISO 8601. A date alone is its day's first moment, or as an ``end`` its last. Raises ``ValueError``."""
    text = value.strip()
    if len(text) == 10:
        at = datetime.combine(date.fromisoformat(text), time.max if end else time.min, UTC)
    else:
        at = datetime.fromisoformat(text)
        at = at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)
    return at.isoformat()
