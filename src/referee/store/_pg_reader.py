"""``referee runs list`` on a shared PostgreSQL store: psycopg alone, no SQLAlchemy (its import was two-thirds of
the command's time). Like the SQLite reader it reads only a store at this referee's head revision, under the same
connect and statement timeouts as ``Store``; anything else (no schema yet, an older or newer one, a URL carrying its
own connection options, no psycopg) goes through ``Store``, which creates, refuses or explains it. A server that
cannot be reached is said here: handing it to ``Store`` would wait out the connect timeout a second time."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlsplit

from ._records import RunRecord
from ._revision import HEAD
from ._settings import StoreError, display_url, scrub
from ._sqlite_reader import read_runs


def pg_conninfo(url: str) -> str | None:
    """The libpq URI of a ``postgresql://`` (or ``postgresql+driver://``) store URL; None for one that sets its
    own ``options`` (its search path, say), which the timeouts below would replace."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.split("+")[0] != "postgresql":
        return None
    if any(k == "options" for k, _ in parse_qsl(urlsplit(url).query)):
        return None
    return f"postgresql://{rest}"


def list_runs_pg(url: str, *, connect_timeout_s: float, statement_timeout_s: float,
                 **filters: Any) -> list[RunRecord] | None:
    """The runs ``Store.list_runs`` returns for these filters (``QUICK_FILTERS``), newest first; None when the
    database is not a store at the head revision (the caller opens it with ``Store``). A server that is down,
    unreachable or refusing the credentials raises :class:`StoreError`, the password masked."""
    conninfo = pg_conninfo(url)
    if conninfo is None:
        return None
    try:
        import psycopg
    except ImportError:  # Store names the extra to install
        return None
    ms = int(statement_timeout_s * 1000)
    try:
        conn = psycopg.connect(conninfo, autocommit=True, connect_timeout=max(1, int(connect_timeout_s)),
                               options=f"-c statement_timeout={ms} -c lock_timeout={ms}",
                               application_name="referee")
    except psycopg.OperationalError as exc:
        raise StoreError(f"cannot connect to {display_url(url)}: {scrub(str(exc), url)}") from None
    except psycopg.Error:  # a URL libpq does not take: Store says what is wrong with it
        return None
    try:
        try:
            row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
        except psycopg.Error:  # an empty database (Store makes it a store), no right to read it (Store says so)
            return None
        if row is None or row[0] != HEAD:
            return None
        try:
            return read_runs(lambda sql, params: conn.execute(sql, params), "%s", **filters)
        except psycopg.OperationalError as exc:  # a statement past its timeout, a server going away
            raise StoreError(f"cannot read {display_url(url)}: {scrub(str(exc), url)}") from None
        except psycopg.Error:  # anything else: Store reads it, or says what is wrong
            return None
    finally:
        conn.close()
