"""``referee runs list`` on a local file: the standard library's ``sqlite3``, no SQLAlchemy (its import and the
schema check were four-fifths of the command's time). It reads only a store already at this referee's head
revision; any other file (missing, older, newer, not a store, locked) goes through ``Store``, which migrates it,
refuses it or says what is wrong."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from ._records import _RUN_COLS, RunRecord, record_of, row_limit, time_bound
from ._revision import HEAD

QUICK_FILTERS = frozenset({"suite", "branch", "tag", "status", "since", "until", "limit"})
"""The filters this reader answers; any other goes to ``Store.list_runs``."""


def list_runs_sqlite(path: Path, *, timeout_s: float, suite: str | None = None, branch: str | None = None,
                     tag: str | None = None, status: str | None = None, since: str | None = None,
                     until: str | None = None, limit: int | None = None) -> list[RunRecord] | None:
    """The runs ``Store.list_runs`` returns for these filters, newest first; None when the file is not a store
    at the head revision (the caller opens it with ``Store``)."""
    if not path.is_file():
        return None
    conn = sqlite3.connect(path, timeout=timeout_s)
    try:
        try:
            version = conn.execute("SELECT version_num FROM alembic_version").fetchone()
        except sqlite3.DatabaseError:  # not a database, no schema yet, locked past the timeout
            return None
        if version is None or version[0] != HEAD:
            return None
        try:
            recs = read_runs(conn.execute, "?", suite=suite, branch=branch, tag=tag, status=status, since=since,
                             until=until, limit=limit)
            for rec in recs:  # SQLite keeps a boolean as 0 or 1
                rec.git_dirty = None if rec.git_dirty is None else bool(rec.git_dirty)
        except sqlite3.DatabaseError:  # locked past the timeout, a damaged file: Store says what is wrong
            return None
        return recs
    finally:
        conn.close()


def read_runs(execute: Callable[[str, list[object]], Iterable[Sequence[Any]]], mark: str, *,
              suite: str | None = None, branch: str | None = None, tag: str | None = None,
              status: str | None = None, since: str | None = None, until: str | None = None,
              limit: int | None = None) -> list[RunRecord]:
    """``Store.list_runs``'s query and its tags, through a DB-API ``execute`` whose placeholder is ``mark``
    (bound parameters only)."""
    where: list[str] = []
    params: list[object] = []
    since = None if since is None else time_bound(since, name="since")
    until = None if until is None else time_bound(until, name="until", end=True)
    for column, op, value in (("suite", "=", suite), ("git_branch", "=", branch), ("status", "=", status),
                              ("started_at", ">=", since), ("started_at", "<=", until)):
        if value is not None:
            where.append(f"{column} {op} {mark}")
            params.append(value)
    if tag is not None:
        where.append(f"id IN (SELECT run_id FROM run_tags WHERE tag = {mark})")
        params.append(tag)
    sql = (f"SELECT {', '.join(_RUN_COLS)} FROM runs" + (f" WHERE {' AND '.join(where)}" if where else "")
           + " ORDER BY started_at DESC, id DESC")
    limit = row_limit(limit)
    if limit is not None:
        sql += f" LIMIT {mark}"
        params.append(limit)
    recs = [record_of(row) for row in execute(sql, params)]
    by_id = {r.id: r for r in recs}
    ids = list(by_id)
    for i in range(0, len(ids), 500):
        part: list[object] = list(ids[i:i + 500])
        for run_id, name in execute(
                f"SELECT run_id, tag FROM run_tags WHERE run_id IN ({', '.join([mark] * len(part))}) ORDER BY tag",
                part):
            by_id[run_id].tags.append(name)
    return recs
