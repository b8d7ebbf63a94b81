"""``list_runs`` on a PostgreSQL store reads it with psycopg alone: the same runs, in the same order, as
``Store.list_runs``; a database that is not a store at the head goes through ``Store`` (made a store, or refused);
a server that cannot be reached is said once, without the password, and never tried a second time."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from referee.store import StoreError, list_runs, open_store
from referee.store._pg_reader import list_runs_pg, pg_conninfo
from tests.store.test_sqlite_reader import FILTERS
from tests.store.test_sqlite_reader import seed as _seed
from tests.support.postgres import PostgresServer

pytest.importorskip("psycopg")


def _quick(url: str, **filters: Any) -> Any:
    return list_runs_pg(url, connect_timeout_s=5, statement_timeout_s=5, **filters)


def test_the_quick_reader_lists_what_the_store_lists(pg_url: str) -> None:
    _seed(pg_url)
    st = open_store(pg_url)
    try:
        wants = [[r.as_dict() for r in st.list_runs(**f)] for f in FILTERS]
    finally:
        st.close()
    for filters, want in zip(FILTERS, wants, strict=True):
        quick = _quick(pg_url, **filters)
        assert quick is not None and [r.as_dict() for r in quick] == want, filters
        assert [r.as_dict() for r in list_runs(pg_url, **filters)] == want, filters
    everything = wants[0]
    assert len(everything) == 4 and {type(r["git_dirty"]) for r in everything} == {bool, type(None)}
    assert next(r["tags"] for r in everything if r["id"] == "r4") == ["a", "b"]


def test_a_database_not_at_the_head_goes_through_the_store(pg_server: PostgresServer, pg_url: str) -> None:
    assert _quick(pg_url) is None  # an empty database: no schema yet
    assert list_runs(pg_url) == []  # Store made it a store
    _seed(pg_url)
    st = open_store(pg_url)
    try:
        from sqlalchemy import text

        with st.engine.begin() as conn:
            conn.execute(text("UPDATE alembic_version SET version_num = '0001'"))
    finally:
        st.close()
    assert _quick(pg_url) is None
    with pytest.raises(StoreError, match="store upgrade"):  # a shared store is upgraded only on purpose
        list_runs(pg_url)


def test_a_url_with_its_own_options_is_left_to_the_store() -> None:
    assert pg_conninfo("postgresql+psycopg://u:p@h:5/db") == "postgresql://u:p@h:5/db"
    assert pg_conninfo("postgresql://u:p@h/db?options=-csearch_path%3Devals") is None
    assert pg_conninfo("sqlite:///x.sqlite") is None


def test_a_server_down_or_refusing_the_password_is_said_once(pg_server: PostgresServer, pg_url: str,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from referee.store import _store

    def no_second_try(*args: object, **kwargs: object) -> None:
        raise AssertionError("the listing went on to Store and would wait for the server again")

    monkeypatch.setattr(_store.Store, "__init__", no_second_try)
    db = pg_url.rsplit("/", 1)[1]
    for url in ("postgresql://u:pw-down-123@127.0.0.1:1/x", pg_server.url(db, password="pw-wrong-123")):
        with pytest.raises(StoreError) as err:
            list_runs(url)
        message = str(err.value)
        assert "cannot connect" in message and "127.0.0.1" in message and "pw-" not in message


def test_runs_list_on_postgres_imports_no_sqlalchemy(pg_url: str) -> None:
    _seed(pg_url)
    script = ("import sys\nfrom referee.cli import cli\ncode = cli(['runs', 'list', '--store', sys.argv[1]])\n"
              "print('heavy:', sorted(m for m in ('sqlalchemy', 'numpy', 'alembic') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", script, pg_url], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "heavy: []" in done.stdout and done.stdout.count(" demo ") + done.stdout.count(" other ") == 4
