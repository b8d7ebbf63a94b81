"""A stored run as the history lists it: plain data, importable without SQLAlchemy (``referee runs list`` on a
local file reads it with the standard library's ``sqlite3``)."""

from __future__ import annotations

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

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


_RUN_COLS = [c for c in RunRecord.__dataclass_fields__ if c != "tags"]
"""The ``runs`` columns a record holds, in its field order."""


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
