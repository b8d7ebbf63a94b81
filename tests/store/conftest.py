"""The store's tests: every store test runs on SQLite and on a real PostgreSQL server this session starts
(``tests/support/postgres.py``), a fresh database per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from referee.store import Store, open_store
from tests.support.postgres import PostgresServer, start_server, unavailable

_pg: dict[str, PostgresServer | str] = {}


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    if "error" in _pg:
        unavailable(str(_pg["error"]))
    try:
        srv = start_server()
    except RuntimeError as exc:
        _pg["error"] = str(exc)
        unavailable(str(exc))
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def pg_url(pg_server: PostgresServer) -> Iterator[str]:
    db = pg_server.new_database()
    try:
        yield pg_server.url(db)
    finally:
        pg_server.drop_database(db)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'history.sqlite'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    st = open_store(store_url)
    try:
        yield st
    finally:
        st.close()
