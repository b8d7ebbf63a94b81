"""The store's tests: a fresh store per test (SQLite here; PostgreSQL joins in tests/store/_pg.py's fixture)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from referee.store import Store, open_store


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'history.sqlite'}"


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    st = open_store(store_url)
    try:
        yield st
    finally:
        st.close()
