"""Connecting to a store and keeping its schema current.

SQLite: WAL, a busy timeout, and every write transaction begun ``IMMEDIATE`` (a deferred one that later wants to
write is where "database is locked" comes from: it cannot wait for the lock it needs). PostgreSQL (psycopg 3): a
connect timeout, a statement timeout and TCP keepalives, so a server that is down or blackholed cannot hang a run.

Schema: Alembic's versioned migrations shipped in ``_migrations/`` and run from code. A SQLite store migrates
itself; a PostgreSQL store is created when empty, and otherwise upgraded only by ``referee store upgrade`` (under
an advisory lock). A store written by a newer referee is refused, never altered.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event, inspect, text
from sqlalchemy.engine import URL, Engine, make_url

from .._util._home import ensure_dir
from ..errors import MissingExtraError
from ._revision import HEAD, REVISIONS
from ._settings import StoreError, connect_timeout_s, display_url, lock_timeout_s, scrub

_PG_LOCK_KEY = 0x7265_6665  # "refe": the advisory lock of a migration
# Alembic keeps the migration being run in module globals (its `context` and `op` proxies): two threads of one
# process migrating at once (a targets run records each target from a thread of its own) corrupt each other's.
# The database's lock serialises processes; this one serialises the threads of a process.
_MIGRATING = threading.Lock()


def make_engine(url: str) -> Engine:
    u = make_url(url)
    backend = u.get_backend_name()
    if backend == "sqlite":
        return _sqlite_engine(u.database or "")
    if backend == "postgresql":
        return _pg_engine(url)
    raise StoreError(f"{display_url(url)}: only SQLite and PostgreSQL stores are supported")


def _sqlite_engine(path: str) -> Engine:
    on_disk = bool(path) and path != ":memory:"
    if on_disk:
        p = Path(path)
        if p.is_dir():  # SQLite's own word for it is "unable to open database file"
            raise StoreError(f"{p} is a folder: a store is a file in it, such as {p / 'history.sqlite'}")
        ensure_dir(p.parent) if p.parent.name == ".referee" else p.parent.mkdir(parents=True, exist_ok=True)
    timeout = lock_timeout_s()
    # LIFO: the connection just given back is the next one handed out, its page cache still warm (SQLite drops a
    # connection's cache whenever another connection has written since: two receiver threads taking turns on two
    # connections wrote 6% slower). An in-memory database has one connection per thread and no pool to order.
    # The path as it is: formatted back into a URL it would be percent-decoded a second time.
    engine = create_engine(URL.create("sqlite", database=path), connect_args={"timeout": timeout, "check_same_thread": False},
                           **({"pool_use_lifo": True} if on_disk else {}))

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # transactions are begun below, IMMEDIATE
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
        # WAL is set once the schema is known to be ours (``ensure_schema``): it is written into the file, and a
        # store from a newer referee, or one being checked, is never altered.
        cur.execute("PRAGMA synchronous=NORMAL")
        # Foreign keys are declared but not enforced here (SQLite's default): a check per row on `texts` and
        # `runs` halved the write rate, and deletes remove a run's rows and tags themselves.
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def _pg_engine(url: str) -> Engine:
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise MissingExtraError("postgres", "psycopg", "a PostgreSQL run history (--store postgresql://...)") from None
    u = make_url(url).set(drivername="postgresql+psycopg")
    statement_ms = int(lock_timeout_s() * 1000)
    return create_engine(
        u, pool_pre_ping=True, pool_size=2, max_overflow=2,
        connect_args={"connect_timeout": max(1, int(connect_timeout_s())),
                      "options": f"-c statement_timeout={statement_ms} -c lock_timeout={statement_ms}",
                      "keepalives": 1, "keepalives_idle": 5, "keepalives_interval": 2, "keepalives_count": 3,
                      "application_name": "referee"})


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        if not inspect(conn).has_table("alembic_version"):
            return None
        row = conn.execute(text("SELECT version_num FROM alembic_version")).first()
        conn.rollback()
    return None if row is None else str(row[0])


def _alembic_config(conn: Any) -> Any:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", "referee.store:_migrations")
    cfg.attributes["connection"] = conn
    return cfg


def upgrade(engine: Engine, url: str, *, on_wait: Any = None) -> tuple[str | None, str]:
    """Bring the schema to the head, under a lock (SQLite's write lock; PostgreSQL's advisory lock), so racing
    processes migrate once. Returns (revision before, after). ``on_wait(msg)``: told when another process holds
    the lock."""
    with _MIGRATING:
        return _upgrade(engine, url, on_wait=on_wait)


def _upgrade(engine: Engine, url: str, *, on_wait: Any = None) -> tuple[str | None, str]:
    from alembic import command

    before = current_revision(engine)
    refuse_newer(before, url)
    if before == HEAD:
        return before, HEAD
    with engine.connect() as conn:
        if conn.dialect.name == "postgresql":
            got = conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": _PG_LOCK_KEY}).scalar()
            if not got:
                if on_wait is not None:
                    on_wait(f"another process is upgrading {display_url(url)}; waiting for it")
                conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": _PG_LOCK_KEY})
            conn.commit()
        try:
            command.upgrade(_alembic_config(conn), "head")
            conn.commit()
        finally:
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": _PG_LOCK_KEY})
                conn.commit()
    return before, current_revision(engine) or HEAD


def refuse_newer(revision: str | None, url: str) -> None:
    if revision is not None and revision not in REVISIONS:
        raise StoreError(f"{display_url(url)} was written by a newer referee (schema {revision}; this one knows "
                         f"up to {HEAD}): upgrade referee to use it. It was not changed.")


def ensure_schema(engine: Engine, url: str) -> None:
    """Ready to use at the head: migrate a SQLite store (or an empty PostgreSQL one) itself; refuse a newer one;
    ask for ``referee store upgrade`` on an older shared one."""
    deadline = time.monotonic() + lock_timeout_s()
    pause = 0.01
    while True:
        try:
            _prepare(engine, url)
            return
        except StoreError:
            raise
        except Exception as exc:  # noqa: BLE001 - named, with the password masked
            # A preparation that lost a deadlock to another process's starts again: it reads the revision afresh.
            if _deadlocked(exc) and time.monotonic() + pause < deadline:
                time.sleep(pause)
                pause = min(pause * 2, 0.5)
                continue
            raise StoreError(f"cannot prepare {display_url(url)}: {scrub(str(exc), url)}") from exc


def _prepare(engine: Engine, url: str) -> None:
    rev = current_revision(engine)
    refuse_newer(rev, url)
    if rev == HEAD:
        _wal(engine)
        return
    if engine.dialect.name == "postgresql" and rev is not None:
        raise StoreError(f"{display_url(url)} has schema {rev}; this referee needs {HEAD}. A shared store is "
                         "upgraded only on purpose: run `referee store upgrade --store URL`")
    # Threads of one process take turns (see ``_MIGRATING``); processes wait on SQLite's locks.
    with _MIGRATING:
        _wal(engine)
        _upgrade(engine, url)


def _wal(engine: Engine) -> None:
    """SQLite: write-ahead logging (readers never block the writer; one writer at a time waits its turn)."""
    if engine.dialect.name == "sqlite":
        raw = engine.raw_connection()  # outside any transaction (the mode cannot change inside one)
        try:
            raw.driver_connection.execute("PRAGMA journal_mode=WAL")  # type: ignore[union-attr]
        finally:
            raw.close()


def _deadlocked(exc: BaseException) -> bool:
    """SQLite's "database is locked" (its busy handler gave up, or was never called: on a fresh file, one process
    switching it to WAL and another migrating it can each hold a lock the other needs, and SQLite fails one at once
    rather than wait forever)."""
    orig = getattr(exc, "orig", exc)
    return isinstance(orig, sqlite3.OperationalError) and ("locked" in str(orig) or "busy" in str(orig))
