"""The recorder's SQLite path: the standard library's ``sqlite3``, no SQLAlchemy.

Importing SQLAlchemy costs a run about a third of a CPU-second, more than recording a thousand rows, and a run that
records into a local file needs none of it. This writer does exactly the writes ``Store`` does (``begin_run``,
``add_rows``, ``finish_run``), with the same statements, bound parameters only, under the same connection settings
(busy timeout, every write transaction ``BEGIN IMMEDIATE``). It opens only a store already at this referee's head
revision: a new, older or newer file goes through ``Store``, which migrates it or refuses it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._codec import ROW_COLUMNS, ROW_UPDATE_COLUMNS, digest, encode_row, max_row_bytes, pack_many
from ._revision import HEAD
from ._settings import StoreError, deleted_while_running, sqlite_path

if TYPE_CHECKING:
    from ..results._schema import ResultRow

RUN_COLUMNS = (
    "id", "kind", "suite", "identity", "judge_key", "judge", "status", "started_at", "finished_at", "git_commit",
    "git_branch", "git_dirty", "git_remote", "ci_provider", "ci_commit", "ci_ref", "ci_run_id", "results_path",
    "manifest", "n_rows", "n_scored", "n_unscored", "n_error", "cost_usd", "input_tokens", "output_tokens", "wall_s",
    "pass_rate", "pass_rate_lo", "pass_rate_hi", "mean", "mean_lo", "mean_hi", "summary")
"""The ``runs`` table's columns (a test holds them equal to ``_schema.runs``): statements name only these."""
_RUN_DEFAULTS = {"n_rows": 0, "n_scored": 0, "n_unscored": 0, "n_error": 0}
_KEEP_ON_RESUME = {"id", "started_at"}

_TEXTS_SQL = "INSERT INTO texts (hash, packed, data) VALUES (?, ?, ?) ON CONFLICT (hash) DO NOTHING"
_TAGS_SQL = "INSERT INTO run_tags (run_id, tag) VALUES (?, ?) ON CONFLICT (run_id, tag) DO NOTHING"
_ROWS_SQL = (f"INSERT INTO rows ({', '.join(ROW_COLUMNS)}) VALUES ({', '.join('?' * len(ROW_COLUMNS))}) "
             f"ON CONFLICT (run_id, case_id, rep, turn) DO UPDATE SET "
             + ", ".join(f"{c} = excluded.{c}" for c in ROW_UPDATE_COLUMNS))
_PACK_BESIDE_MIN = 64
"""From this many new texts in one write, they are compressed on a second thread while the rows are inserted (both
release the GIL): ~1.2x the rows a second on 2 cores, for no more CPU. Fewer are not worth the hand-over."""


class NotAtHead(StoreError):
    """The file is not a store at this referee's head revision (or not a plain file URL): use ``Store``."""


class SqliteWriter:
    """Writes one store file at the head revision, as ``Store`` would (see the module's note)."""

    dialect = "sqlite"

    def __init__(self, path: Path, *, timeout_s: float) -> None:
        if not path.is_file():
            raise NotAtHead(f"{path} does not exist yet")
        self.conn = sqlite3.connect(path, timeout=timeout_s, isolation_level=None, check_same_thread=False)
        self._packer: ThreadPoolExecutor | None = None
        try:
            try:
                self.conn.execute(f"PRAGMA busy_timeout={int(timeout_s * 1000)}")
                self.conn.execute("PRAGMA synchronous=NORMAL")
                row = self.conn.execute("SELECT version_num FROM alembic_version").fetchone()
            except sqlite3.DatabaseError as exc:  # not a database, no schema yet, locked past the timeout
                raise NotAtHead(str(exc)) from None
            if row is None or row[0] != HEAD:
                raise NotAtHead(f"schema {row[0] if row else None}, not {HEAD}")
        except BaseException:
            self.conn.close()
            raise

    def close(self) -> None:
        if self._packer is not None:
            self._packer.shutdown()
        self.conn.close()

    def _write(self, statements: Iterable[tuple[str, Any, bool]]) -> None:
        """One ``BEGIN IMMEDIATE`` transaction: each (sql, params, many)."""
        cur = self.conn.cursor()
        cur.execute("BEGIN IMMEDIATE")
        try:
            for sql, params, many in statements:
                if many:
                    cur.executemany(sql, params)
                else:
                    cur.execute(sql, params)
            cur.execute("COMMIT")
        except BaseException:
            if self.conn.in_transaction:
                self.conn.rollback()
            raise
        finally:
            cur.close()

    @staticmethod
    def _texts(texts: dict[bytes, bytes], packed: list[tuple[int, bytes]] | None = None) -> tuple[str, Any, bool]:
        """The insert of ``texts`` (hash -> bytes), as ``packed`` (packed here when not given)."""
        packed = pack_many(list(texts.values())) if packed is None else packed
        return _TEXTS_SQL, [(h, *p) for h, p in zip(texts, packed, strict=True)], True

    def begin_run(self, run: dict[str, Any], *, tags: Sequence[str] = (), manifest_json: bytes | None = None) -> None:
        values = dict(run)
        statements = []
        if manifest_json is not None:
            values["manifest"] = h = digest(manifest_json)
            statements.append(self._texts({h: manifest_json}))
        unknown = set(values) - set(RUN_COLUMNS)
        if unknown:
            raise ValueError(f"not columns of runs: {sorted(unknown)}")
        cols = [*values, *(k for k in _RUN_DEFAULTS if k not in values)]
        params = [values[k] if k in values else _RUN_DEFAULTS[k] for k in cols]
        updates = ", ".join(f"{k} = excluded.{k}" for k in values if k not in _KEEP_ON_RESUME)
        statements.append((f"INSERT INTO runs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))}) "
                           f"ON CONFLICT (id) DO UPDATE SET {updates}", params, False))
        tag_rows = [(values["id"], t) for t in dict.fromkeys(tags)]
        if tag_rows:
            statements.append((_TAGS_SQL, tag_rows, True))
        self._write(statements)

    def add_rows(self, run_id: str, rows: Sequence[ResultRow], *, first_seq: int = 0,
                 results_path: str | None = None) -> int:
        if not rows:
            return 0
        limit = max_row_bytes()
        params: list[tuple[Any, ...]] = []
        texts: dict[bytes, bytes] = {}
        stubs = 0
        for i, r in enumerate(rows):
            v, h, data, stub = encode_row(run_id, r, first_seq + i, results_path=results_path, limit=limit)
            params.append(v)
            texts[h] = data
            stubs += stub
        if len(texts) < _PACK_BESIDE_MIN:
            self._write([self._texts(texts), (_ROWS_SQL, params, True)])
            return stubs
        if self._packer is None:
            self._packer = ThreadPoolExecutor(1, thread_name_prefix="referee-store-pack")
        packing = self._packer.submit(pack_many, list(texts.values()))

        def statements() -> Iterator[tuple[str, Any, bool]]:
            yield _ROWS_SQL, params, True  # while the texts are compressed
            yield self._texts(texts, packing.result())

        try:
            self._write(statements())
        finally:
            packing.cancel()  # a write that failed before its texts: nothing left to compress for
        return stubs

    def finish_run(self, run_id: str, values: dict[str, Any], *, manifest_json: bytes | None = None,
                   summary_json: bytes | None = None) -> None:
        values = dict(values)
        texts: dict[bytes, bytes] = {}
        for key, data in (("manifest", manifest_json), ("summary", summary_json)):
            if data is not None:
                values[key] = h = digest(data)
                texts[h] = data
        unknown = set(values) - set(RUN_COLUMNS)
        if unknown:
            raise ValueError(f"not columns of runs: {sorted(unknown)}")
        sets = ", ".join(f"{k} = ?" for k in values)
        statements = [self._texts(texts)] if texts else []
        statements.append((f"UPDATE runs SET {sets} WHERE id = ?", [*values.values(), run_id], False))
        # A run deleted while it was recording: the rows it wrote since go with it (Store.finish_run's rule).
        gone = "NOT EXISTS (SELECT 1 FROM runs WHERE id = ?)"
        statements.append((f"DELETE FROM rows WHERE run_id = ? AND {gone}", [run_id, run_id], False))
        statements.append((f"DELETE FROM run_tags WHERE run_id = ? AND {gone}", [run_id, run_id], False))
        self._write(statements)
        if self.conn.execute("SELECT 1 FROM runs WHERE id = ?", [run_id]).fetchone() is None:
            raise StoreError(deleted_while_running(run_id))


def open_writer(url: str, *, timeout_s: float) -> SqliteWriter | None:
    """The stdlib writer for a plain SQLite file already at the head, else None (use ``Store``)."""
    path = sqlite_path(url)
    if path is None:
        return None
    try:
        return SqliteWriter(path, timeout_s=timeout_s)
    except NotAtHead:
        return None
