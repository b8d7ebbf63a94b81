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
