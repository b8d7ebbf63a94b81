"""The run history: every run recorded as it happens into a SQLite file (``.referee/history.sqlite``) or a shared

PostgreSQL database, queried by ``referee runs``, ``--baseline main|last|RUN|@COMMIT`` and ``referee.runs()``.

Runs are recorded by the one runner (``runner/_session``) through :func:`open_recorder`; commands choose the store
with :func:`recording` (``--store``, ``--no-store``, ``--tag``) or ``REFEREE_STORE=URL|off``. See docs/store.md.
"""

from __future__ import annotations

from importlib import import_module as _import_module
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from ._recorder import Recorder, new_run_id, open_recorder
from ._settings import (
    ENV,
    StoreError,
    StoreSettings,
    current,
    default_url,
    display_url,
    normalise_url,
    recording,
    scope,
)

if _TYPE_CHECKING:
    from ._engine import HEAD as SCHEMA_REVISION
    from ._engine import REVISIONS
    from ._store import RunRecord, Store

# SQLAlchemy is imported with the names that need it, never by a run's start (the recorder's thread imports it).
_LAZY = {"SCHEMA_REVISION": ("._engine", "HEAD"), "REVISIONS": ("._engine", "REVISIONS"),
         "RunRecord": ("._store", "RunRecord"), "Store": ("._store", "Store")}


def __getattr__(name: str) -> _Any:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_import_module(where[0], __name__), where[1])
    globals()[name] = value
    return value


def open_store(url: str | None = None) -> Store:
    """The store at ``url`` (default: the one in force, see :func:`current`), its schema ready."""
    from ._store import Store

    return Store(normalise_url(url) if url else current().resolved_url())


__all__ = [
    "ENV",
    "REVISIONS",
    "Recorder",
    "RunRecord",
    "SCHEMA_REVISION",
    "Store",
    "StoreError",
    "StoreSettings",
    "current",
    "default_url",
    "display_url",
    "new_run_id",
    "normalise_url",
    "open_recorder",
    "open_store",
    "recording",
    "scope",
]
