"""The ``Store``: one face over a SQLite file or a PostgreSQL database (open by URL, record a run, finish it,
query, resolve a baseline). Every statement is SQLAlchemy Core with bound parameters."""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, case, delete, func, or_, select, update
from sqlalchemy.engine import Connection, Engine

from . import _schema as s
from ._codec import (  # noqa: F401 - digest, _unpack: read from here too
    _VOLATILE_SET,
    DEFAULT_MAX_ROW_BYTES,
    ROW_COLUMNS,
    ROW_UPDATE_COLUMNS,
    VOLATILE,
    _dumps,
    _key_part,
    _unpack,
    digest,
    encode_row,
    max_row_bytes,
    pack_many,
)
from ._engine import ensure_schema, make_engine
from ._records import _RUN_COLS, RunRecord, record_of, row_limit, time_bound
from ._settings import AmbiguousRun, StoreError, deleted_while_running, display_url, scrub

if TYPE_CHECKING:
    from ..results._manifest import RunManifest
    from ..results._schema import ResultRow


_INSERT_HEAD = re.compile(r"(INSERT INTO \S+) \(([^)]*)\) VALUES \((?:[^()]|\([^()]*\))*\)")
_DO_UPDATE = re.compile(r"ON CONFLICT \(([^)]*)\) DO UPDATE")
_PG_CHUNK = 5000
"""Rows per statement on PostgreSQL (a statement's arrays are held by the server at once)."""


class Store:
    """The run history at ``url`` (``sqlite:///file`` or ``postgresql://user:pass@host:port/db``).

    Opening prepares the schema (see ``_engine.ensure_schema``); a store written by a newer referee raises
    :class:`StoreError`."""

    def __init__(self, url: str, *, engine: Engine | None = None, prepare: bool = True) -> None:
        self.url = url
        self.engine = engine if engine is not None else make_engine(url)
        if prepare:
            try:
                ensure_schema(self.engine, url)
            except BaseException:
                self.engine.dispose()  # no connection outlives a store that could not be opened
                raise
        self._insert: Any = None
        self._compiled: dict[str, tuple[str, tuple[str, ...] | None]] = {}
        self._compiled_pg: dict[str, tuple[str, tuple[str, ...], tuple[str, ...] | None]] = {}

    def __repr__(self) -> str:
        return f"<Store {self.display_url}>"

    @property
    def display_url(self) -> str:
        return display_url(self.url)

    @property
    def dialect(self) -> str:
        return str(self.engine.dialect.name)

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def error(self, exc: BaseException) -> StoreError:
        return StoreError(f"{self.display_url}: {scrub(f'{type(exc).__name__}: {exc}', self.url)}")

    # -- writing -------------------------------------------------------------------------------------------
    def _ins(self) -> Any:
        if self._insert is None:
            # Only the dialect in use: PostgreSQL's module alone is a tenth of a CPU-second to import.
            if self.dialect == "postgresql":
                from sqlalchemy.dialects import postgresql

                self._insert = postgresql.insert
            else:
                from sqlalchemy.dialects import sqlite

                self._insert = sqlite.insert
        return self._insert

    def put_texts(self, conn: Connection, texts: dict[bytes, bytes]) -> None:
        """Each text once, by its SHA-256 (``texts`` maps hash -> UTF-8 bytes): a text already stored is left
        as it is (the insert does nothing on its key)."""
        if not texts:
            return
        new = [{"hash": h, "packed": packed, "data": stored}
               for h, (packed, stored) in zip(texts, pack_many(list(texts.values())), strict=True)]
        self._many(conn, "texts", lambda ins: ins(s.texts).on_conflict_do_nothing(index_elements=["hash"]), new)

    def _many(self, conn: Connection, name: str, build: Any, values: list[dict[str, Any]]) -> None:
        """One statement for many rows, built once with SQLAlchemy Core (bound parameters only) and handed to
        the driver's own executemany: SQLAlchemy's per-value processing cost more than the database did."""
        if not values:
            return
        if self.dialect == "postgresql" and len(values) > 1:
            self._many_pg(conn, name, build, values)
            return
        cached = self._compiled.get(name)
        if cached is None:
            compiled = build(self._ins()).compile(dialect=self.engine.dialect)
            cached = (str(compiled), tuple(compiled.positiontup) if compiled.positional else None)
            self._compiled[name] = cached
        sql, order = cached
        if order is None:
            params: Any = values
        elif len(order) > 1:
            row = operator.itemgetter(*order)  # one C call per row, not a generator: spans arrive by the 100,000
            params = [row(v) for v in values]
        else:
            params = [(v[order[0]],) for v in values]
        conn.exec_driver_sql(sql, params)

    def _many_pg(self, conn: Connection, name: str, build: Any, values: list[dict[str, Any]]) -> None:
        """PostgreSQL: the rows as one array per column, unnested by one statement. The server then plans and
        runs one insert per batch instead of one per row (a pipelined executemany): 3x the rows per second."""
        cached = self._compiled_pg.get(name)
        if cached is None:
            stmt = build(self._ins())
            sql = str(stmt.compile(dialect=self.engine.dialect))
            head = _INSERT_HEAD.match(sql)
            if head is None:
                raise AssertionError(f"not a plain insert: {sql[:80]}")
            cols = tuple(c.strip() for c in head.group(2).split(","))
            table = stmt.table
            casts = ", ".join(f"%({c})b::{table.c[c].type.compile(dialect=self.engine.dialect)}[]" for c in cols)
            sql = f"{head.group(1)} ({', '.join(cols)}) SELECT * FROM unnest({casts}){sql[head.end():]}"
            conflict = _DO_UPDATE.search(sql)
            # Two rows with one key in one statement would be "affected twice": the later one wins, as it would
            # have one statement after the other.
            key = tuple(c.strip() for c in conflict.group(1).split(",")) if conflict else None
            cached = self._compiled_pg[name] = (sql, cols, key)
        sql, cols, key = cached
        if key is not None:
            values = list({tuple(v[k] for k in key): v for v in values}.values())
        # Binary parameters (``%(name)b``), passed to the driver as written: as text, every element is escaped and
        # quoted. Through the connection, so its events (statement counts, logging) still see the statement.
        for i in range(0, len(values), _PG_CHUNK):
            part = values[i:i + _PG_CHUNK]
            conn.exec_driver_sql(sql, {c: [v.get(c) for v in part] for c in cols})

    def put_text(self, conn: Connection, data: bytes) -> bytes:
        h = digest(data)
        self.put_texts(conn, {h: data})
        return h

    def get_text(self, conn: Connection, h: bytes | None) -> bytes | None:
        if h is None:
            return None
        row = conn.execute(select(s.texts.c.packed, s.texts.c.data).where(s.texts.c.hash == h)).first()
        return None if row is None else self.text_of(row[0], row[1], f"the text {h.hex()[:12]}")

    def text_of(self, packed: int, data: bytes, what: str) -> bytes:
        """A stored text's bytes; a damaged or hostile one is a StoreError naming this store and ``what`` it is."""
        try:
            return _unpack(packed, data)
        except StoreError as exc:
            raise StoreError(f"{self.display_url}: {what}: {exc}; `referee store check` says what else is wrong"
                             ) from None

    def begin_run(self, run: dict[str, Any], *, tags: Sequence[str] = (), manifest_json: bytes | None = None) -> None:
        """Record a run as started (or, for a resumed run id, as running again, keeping its start)."""
        values = dict(run)
        with self.engine.begin() as conn:
            if manifest_json is not None:
                values["manifest"] = self.put_text(conn, manifest_json)
            stmt = self._ins()(s.runs).values(**values)
            keep = {"id", "started_at"}
            stmt = stmt.on_conflict_do_update(
                index_elements=["id"], set_={k: stmt.excluded[k] for k in values if k not in keep})
            conn.execute(stmt)
            self._tag(conn, values["id"], tags)

    def _tag(self, conn: Connection, run_id: str, tags: Iterable[str]) -> None:
        rows = [{"run_id": run_id, "tag": t} for t in dict.fromkeys(tags)]
        if rows:
            conn.execute(self._ins()(s.run_tags).on_conflict_do_nothing(index_elements=["run_id", "tag"]), rows)

    def row_values(self, run_id: str, row: ResultRow, seq: int, *, results_path: str | None,
                   limit: int) -> tuple[dict[str, Any], bytes, bytes, bool]:
        """(the row's columns, its body's hash, the body, whether it was cut to a stub)."""
        v, h, data, stub = encode_row(run_id, row, seq, results_path=results_path, limit=limit)
        return dict(zip(ROW_COLUMNS, v, strict=True)), h, data, stub

    def add_rows(self, run_id: str, rows: Sequence[ResultRow], *, first_seq: int = 0,
                 results_path: str | None = None) -> int:
        """Store ``rows`` (a row already stored under the same key is replaced: a retried error row). Returns how
        many were cut to stubs."""
        if not rows:
            return 0
        limit = max_row_bytes()
        values: list[dict[str, Any]] = []
        texts: dict[bytes, bytes] = {}
        stubs = 0
        for i, r in enumerate(rows):
            v, h, data, stub = self.row_values(run_id, r, first_seq + i, results_path=results_path, limit=limit)
            values.append(v)
            texts[h] = data
            stubs += stub
        with self.engine.begin() as conn:
            self.put_texts(conn, texts)

            def upsert(ins: Any) -> Any:
                stmt = ins(s.rows)
                return stmt.on_conflict_do_update(
                    index_elements=["run_id", "case_id", "rep", "turn"],
                    set_={k: stmt.excluded[k] for k in ROW_UPDATE_COLUMNS})

            self._many(conn, "rows", upsert, values)
        return stubs

    def finish_run(self, run_id: str, values: dict[str, Any], *, manifest_json: bytes | None = None,
                   summary_json: bytes | None = None) -> None:
        """Write the run's end. Raises ``StoreError`` when the run is no longer stored (deleted while it ran); the
        rows it had recorded are removed with it, so none is left belonging to no run."""
        values = dict(values)
        with self.engine.begin() as conn:
            if manifest_json is not None:
                values["manifest"] = self.put_text(conn, manifest_json)
            if summary_json is not None:
                values["summary"] = self.put_text(conn, summary_json)
            gone = conn.execute(update(s.runs).where(s.runs.c.id == run_id).values(**values)).rowcount == 0
            if gone:
                conn.execute(delete(s.rows).where(s.rows.c.run_id == run_id))
                conn.execute(delete(s.run_tags).where(s.run_tags.c.run_id == run_id))
        if gone:
            raise StoreError(deleted_while_running(run_id))

    # -- generated cases (``referee synth``) -------------------------------------------------------------
    def add_generated_cases(self, batch_id: str, records: Sequence[Mapping[str, Any]], *,
                            created_at: str | None = None) -> None:
        """Record one generation run's candidates: per case its ``case_id``, the text of its source chunks
        (``source``), the case as written (``body``, JSON text) and ``gate`` (``kept``, or the gate that rejected
        it). A case recorded again under the same ``batch_id`` is replaced."""
        if not records:
            return
        when = created_at or datetime.now(UTC).isoformat()
        texts: dict[bytes, bytes] = {}
        values = []
        for r in records:
            body = str(r["body"]).encode("utf-8", "surrogatepass")
            source = r.get("source")
            hb = digest(body)
            texts[hb] = body
            hs = None
            if source:
                data = str(source).encode("utf-8", "surrogatepass")
                hs = digest(data)
                texts[hs] = data
            values.append({"batch_id": batch_id, "case_id": str(r["case_id"]), "created_at": when, "source": hs,
                           "body": hb, "gate": str(r["gate"])[:16]})
        with self.engine.begin() as conn:
            self.put_texts(conn, texts)
            stmt = self._ins()(s.generated_cases)
            stmt = stmt.on_conflict_do_update(index_elements=["batch_id", "case_id"],
                                              set_={k: stmt.excluded[k] for k in ("created_at", "source", "body",
                                                                                   "gate")})
            conn.execute(stmt, values)

    def generated_cases(self, batch_id: str | None = None) -> list[dict[str, Any]]:
        """The generated cases recorded (of one generation run), oldest first: ``batch_id``, ``case_id``,
        ``created_at``, ``gate``, ``source`` and ``body`` (texts)."""
        t = s.generated_cases
        q = select(t.c.batch_id, t.c.case_id, t.c.created_at, t.c.gate, t.c.source, t.c.body)
        if batch_id is not None:
            q = q.where(t.c.batch_id == batch_id)
        out = []
        with self.engine.connect() as conn:
            for row in conn.execute(q.order_by(t.c.created_at, t.c.batch_id, t.c.case_id)):
                src, body = self.get_text(conn, row.source), self.get_text(conn, row.body)
                out.append({"batch_id": row.batch_id, "case_id": row.case_id, "created_at": row.created_at,
                            "gate": row.gate, "source": None if src is None else src.decode("utf-8", "replace"),
                            "body": "" if body is None else body.decode("utf-8", "replace")})
        return out

    def tag(self, run_id: str, add: Sequence[str] = (), remove: Sequence[str] = ()) -> None:
        with self.engine.begin() as conn:
            self._tag(conn, run_id, add)
            if remove:
                conn.execute(delete(s.run_tags).where(and_(s.run_tags.c.run_id == run_id,
                                                           s.run_tags.c.tag.in_(list(remove)))))

    # -- reading -------------------------------------------------------------------------------------------
    def _records(self, conn: Connection, where: Any = None, *, limit: int | None = None,
                 newest_first: bool = True, clean_first: bool = False) -> list[RunRecord]:
        q = select(*[s.runs.c[c] for c in _RUN_COLS])
        if where is not None:
            q = q.where(where)
        if clean_first:
            q = q.order_by(case((s.runs.c.git_dirty.is_(True), 1), else_=0))
        q = q.order_by(s.runs.c.started_at.desc() if newest_first else s.runs.c.started_at,
                       s.runs.c.id.desc() if newest_first else s.runs.c.id)
        limit = row_limit(limit)
        if limit is not None:
            q = q.limit(limit)
        recs = [record_of(r) for r in conn.execute(q)]
        if recs:
            by_id = {r.id: r for r in recs}
            ids = list(by_id)
            for i in range(0, len(ids), 500):
                tq = select(s.run_tags.c.run_id, s.run_tags.c.tag).where(s.run_tags.c.run_id.in_(ids[i:i + 500]))
                for rid, tag in conn.execute(tq.order_by(s.run_tags.c.tag)):
                    by_id[rid].tags.append(tag)
        return recs

    def list_runs(self, *, suite: str | None = None, branch: str | None = None, tag: str | None = None,
                  status: str | None = None, since: str | None = None, until: str | None = None,
                  identity: str | None = None, commit: str | None = None, commits: Sequence[str] | None = None,
                  limit: int | None = None, newest_first: bool = True,
                  exclude: str | Collection[str] | None = None, clean_first: bool = False) -> list[RunRecord]:
        """Runs matching every filter given, newest first. ``commit``: a full or abbreviated hash; ``exclude``:
        run ids left out; ``clean_first``: runs from a dirty tree after all the others."""
        conds: list[Any] = []
        if suite is not None:
            conds.append(s.runs.c.suite == suite)
        if branch is not None:
            conds.append(s.runs.c.git_branch == branch)
        if status is not None:
            conds.append(s.runs.c.status == status)
        if since is not None:
            conds.append(s.runs.c.started_at >= time_bound(since, name="since"))
        if until is not None:
            conds.append(s.runs.c.started_at <= time_bound(until, name="until", end=True))
        if identity is not None:
            conds.append(s.runs.c.identity == identity)
        if commit is not None:
            conds.append(or_(s.runs.c.git_commit.startswith(commit, autoescape=True),
                             s.runs.c.ci_commit.startswith(commit, autoescape=True)))
        if exclude:
            conds.append(s.runs.c.id.not_in([exclude] if isinstance(exclude, str) else list(exclude)))
        if commits is not None:
            full = list(commits)
            conds.append(or_(s.runs.c.git_commit.in_(full), s.runs.c.ci_commit.in_(full)))
        if tag is not None:
            conds.append(s.runs.c.id.in_(select(s.run_tags.c.run_id).where(s.run_tags.c.tag == tag)))
        with self.engine.connect() as conn:
            return self._records(conn, and_(*conds) if conds else None, limit=limit, newest_first=newest_first,
                                 clean_first=clean_first)

    def get_run(self, ref: str) -> RunRecord:
        """A run by its id or an unambiguous prefix of it (at least 4 characters)."""
        with self.engine.connect() as conn:
            recs = self._records(conn, s.runs.c.id == ref)
            if not recs and len(ref) >= 4:
                recs = self._records(conn, s.runs.c.id.startswith(ref, autoescape=True), limit=3)
        if not recs:
            raise KeyError(f"no run {ref!r} in {self.display_url}")
        if len(recs) > 1:
            raise AmbiguousRun(f"run id {ref!r} is ambiguous in {self.display_url}: "
                           + ", ".join(r.id[:12] for r in recs))
        return recs[0]

    def count_runs(self) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(s.runs)).scalar_one())

    def facets(self, limit: int = 500) -> dict[str, list[str]]:
        """The distinct suites, branches and tags stored (at most ``limit`` of each, sorted): the viewer's filters."""
        out: dict[str, list[str]] = {}
        with self.engine.connect() as conn:
            for name, col in (("suites", s.runs.c.suite), ("branches", s.runs.c.git_branch),
                              ("tags", s.run_tags.c.tag)):
                q = select(col).where(col.is_not(None)).distinct().order_by(col).limit(limit)
                out[name] = [v for (v,) in conn.execute(q)]
        return out

    def rows(self, run_id: str) -> list[ResultRow]:
        """The run's rows, in the order they arrived, as :class:`~referee.results.ResultRow`."""
        from ..results._schema import ResultRow

        # An outer join: a row whose text is not stored is a damaged store to say, not a row to leave out (the run
        # would be scored and compared a row short without a word).
        q = (select(s.rows.c.case_id, s.rows.c.latency_ms, s.rows.c.cost_usd, s.texts.c.packed, s.texts.c.data)
             .outerjoin(s.texts, s.texts.c.hash == s.rows.c.body)
             .where(s.rows.c.run_id == run_id).order_by(s.rows.c.seq, s.rows.c.case_id))
        out: list[ResultRow] = []
        with self.engine.connect() as conn:
            for case_id, latency, cost, packed, data in conn.execute(q):
                what = f"run {run_id[:12]}, case {case_id!r}"
                if data is None:
                    raise StoreError(f"{self.display_url}: {what}: its stored text is missing; `referee store check` "
                                     "says what else is wrong")
                try:
                    body = json.loads(self.text_of(packed, data, what))
                    if latency is not None:
                        body["latency_ms"] = latency
                    if cost is not None:
                        body["cost_usd"] = cost
                    out.append(ResultRow.model_validate(body))
                except (ValueError, TypeError) as exc:  # a text that unpacks, but is no row: a damaged store
                    raise self._damaged(what, exc) from None
        return out

    def _damaged(self, what: str, exc: Exception) -> StoreError:
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        return StoreError(f"{self.display_url}: {what}: the stored text is not what it should be ({reason}); "
                          "`referee store check` says what else is wrong")

    def count_rows(self, run_id: str | None = None) -> int:
        q = select(func.count()).select_from(s.rows)
        if run_id is not None:
            q = q.where(s.rows.c.run_id == run_id)
        with self.engine.connect() as conn:
            return int(conn.execute(q).scalar_one())

    def manifest(self, run_id: str) -> RunManifest | None:
        from ..results._manifest import RunManifest

        with self.engine.connect() as conn:
            h = conn.execute(select(s.runs.c.manifest).where(s.runs.c.id == run_id)).scalar()
            data = self.get_text(conn, h)
        try:
            return None if data is None else RunManifest.model_validate_json(data)
        except ValueError as exc:
            raise self._damaged(f"run {run_id[:12]}'s manifest", exc) from None

    def summary(self, run_id: str) -> dict[str, Any] | None:
        with self.engine.connect() as conn:
            h = conn.execute(select(s.runs.c.summary).where(s.runs.c.id == run_id)).scalar()
            data = self.get_text(conn, h)
        try:
            return None if data is None else dict(json.loads(data))
        except (ValueError, TypeError) as exc:
            raise self._damaged(f"run {run_id[:12]}'s summary", exc) from None

    def delete_runs(self, run_ids: Sequence[str]) -> int:
        """Delete runs (their rows and tags with them) and the texts nothing references any more. Returns how many
        runs were deleted: a run named twice (``runs delete last 3b5e``) is one."""
        ids = list(dict.fromkeys(run_ids))
        if not ids:
            return 0
        deleted = 0
        with self.engine.begin() as conn:
            for i in range(0, len(ids), 500):
                chunk = ids[i:i + 500]
                conn.execute(delete(s.rows).where(s.rows.c.run_id.in_(chunk)))
                conn.execute(delete(s.run_tags).where(s.run_tags.c.run_id.in_(chunk)))
                deleted += conn.execute(delete(s.runs).where(s.runs.c.id.in_(chunk))).rowcount
            # Rows of a run deleted while it was recording, whose process ended before it could clear them.
            conn.execute(delete(s.rows).where(~s.rows.c.run_id.in_(select(s.runs.c.id))))
            self._collect_texts(conn)
        return deleted

    def _collect_texts(self, conn: Connection) -> None:
        refs = [s.rows.c.body, s.runs.c.manifest, s.runs.c.summary, s.traces.c.attrs, s.spans.c.attrs,
                s.trace_scores.c.body, s.alignments.c.config, s.alignments.c.metrics, s.labels.c.note,
                s.generated_cases.c.source, s.generated_cases.c.body]
        used = [select(c).where(c.is_not(None)) for c in refs]
        conn.execute(delete(s.texts).where(~s.texts.c.hash.in_(used[0].union(*used[1:]).scalar_subquery())))
