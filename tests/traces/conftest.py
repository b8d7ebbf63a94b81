"""Every receiver and monitor test runs on both sinks: in memory, and the run-history store (SQLite)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from referee.store import Store
from referee.traces import MemorySink, StoreSink

SinkFactory = Callable[..., Any]


@pytest.fixture(params=["memory", "store"])
def make_sink(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SinkFactory]:
    stores: list[Store] = []

    def make(**kw: Any) -> Any:
        if request.param == "memory":
            return MemorySink(**kw)
        store = Store(f"sqlite:///{tmp_path / f'history{len(stores)}.sqlite'}")
        stores.append(store)
        return StoreSink(store, **kw)

    yield make
    for s in stores:
        s.close()


_pg: dict[str, Any] = {}


@pytest.fixture(scope="session")
def traces_pg_server() -> Iterator[Any]:
    from tests.support.postgres import start_server, unavailable

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


@pytest.fixture(params=["sqlite", "postgresql"])
def trace_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """The run-history store on SQLite and on a real PostgreSQL server (a fresh database per test)."""
    if request.param == "sqlite":
        with Store(f"sqlite:///{tmp_path / 'history.sqlite'}") as st:
            yield st
        return
    srv = request.getfixturevalue("traces_pg_server")
    db = srv.new_database()
    try:
        with Store(srv.url(db)) as st:
            yield st
    finally:
        srv.drop_database(db)
