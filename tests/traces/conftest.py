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


@pytest.fixture(params=["sqlite", "postgresql"])
def trace_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """The run-history store on SQLite and on a real PostgreSQL server (a fresh database per test)."""
    if request.param == "sqlite":
        with Store(f"sqlite:///{tmp_path / 'history.sqlite'}") as st:
            yield st
        return
    # The session's one PostgreSQL server (tests/support/postgres.py), a fresh database per test.
    with Store(str(request.getfixturevalue("pg_url"))) as st:
        yield st
