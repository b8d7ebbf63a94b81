"""The run history: every run recorded as it happens into a SQLite file (``.referee/history.sqlite``) or a shared

PostgreSQL database, queried by ``referee runs``, ``--baseline main|last|RUN|@COMMIT`` and ``referee.runs()``.

Runs are recorded by the one runner (``runner/_session``) through :func:`open_recorder`; commands choose the store
with :func:`recording` (``--store``, ``--no-store``, ``--tag``) or ``REFEREE_STORE=URL|off``. See docs/store.md.
"""

from __future__ import annotations

from importlib import import_module as _import_module
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from ._settings import (
    ENV,
    StoreError,
    StoreSettings,
    current,
    default_url,
    display_url,
    normalise_url,
    recording,
    require_history,
    reserved_paths,
    scope,
    sqlite_file,
)

if _TYPE_CHECKING:
    from ._alignments import alignments, record_alignment, record_view_label, view_labels
    from ._baseline import Baseline, file_note, find_run, latest_pair, looks_like_name, resolve_baseline
    from ._history import (
        StoredRun,
        check_store,
        compact_if_worth_it,
        export_run,
        import_results,
        import_store,
        load_run,
        prune_plan,
        results_files,
        rows_frame,
        runs_frame,
    )
    from ._identity import label_of_suite, suite_named
    from ._recorder import Recorder, new_run_id, open_recorder
    from ._records import RunRecord
    from ._revision import HEAD as SCHEMA_REVISION
    from ._revision import REVISIONS
    from ._store import Store
    from ._traces import SpansWritten, StoredTrace, TraceScore, TraceStore

# SQLAlchemy is imported with the names that need it, never by a run's start (the recorder's thread imports it);
# the baselines, the recorder and git with theirs, so a command that only names the store (the output guard) pays
# for its settings alone.
_LAZY = {**{n: ("._baseline", n) for n in ("Baseline", "file_note", "find_run", "latest_pair", "looks_like_name",
                                           "resolve_baseline")},
         "label_of_suite": ("._identity", "label_of_suite"), "suite_named": ("._identity", "suite_named"),
         **{n: ("._recorder", n) for n in ("Recorder", "new_run_id", "open_recorder")},
         "SCHEMA_REVISION": ("._revision", "HEAD"), "REVISIONS": ("._revision", "REVISIONS"),
         "alignments": ("._alignments", "alignments"), "record_alignment": ("._alignments", "record_alignment"),
         "record_view_label": ("._alignments", "record_view_label"), "view_labels": ("._alignments", "view_labels"),
         "RunRecord": ("._records", "RunRecord"), "Store": ("._store", "Store"),
         **{n: ("._traces", n) for n in ("SpansWritten", "StoredTrace", "TraceScore", "TraceStore")},
         **{n: ("._history", n) for n in ("StoredRun", "check_store", "compact_if_worth_it", "export_run",
                                          "import_results", "import_store", "load_run", "prune_plan",
                                          "results_files", "rows_frame", "runs_frame")}}


def __getattr__(name: str) -> _Any:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_import_module(where[0], __name__), where[1])
    globals()[name] = value
    return value


def open_store(url: str | None = None, *, create: bool = True) -> Store:
    """The store at ``url`` (default: the one in force, see :func:`current`), its schema ready. ``create=False``
    (a command that only reads): a local file that does not exist is a ``StoreError``, never made empty."""
    from ._store import Store

    resolved = normalise_url(url) if url else current().resolved_url()
    if not create:
        require_history(resolved)
    return Store(resolved)


def list_runs(store: str | None = None, **filters: _Any) -> list[RunRecord]:
    """Runs matching every filter (``Store.list_runs``'s: ``suite``, ``branch``, ``tag``, ``status``, ``since``,
    ``until``, ``limit``, ...), newest first, from the store at ``store`` (a URL or file; default: the one in
    force). A store already at this referee's schema is read without SQLAlchemy (a local file with the standard
    library, PostgreSQL with psycopg alone): a listing takes a fifth of the time on a file, a third on a server."""
    from ._settings import connect_timeout_s, lock_timeout_s, sqlite_file, sqlite_path
    from ._sqlite_reader import QUICK_FILTERS, list_runs_sqlite

    url = normalise_url(store) if store else current().resolved_url()
    path = sqlite_path(url)
    file = sqlite_file(url)
    if file is not None and not file.exists():  # nothing recorded there yet: a listing makes no store
        return []
    if set(filters) <= QUICK_FILTERS:
        quick: list[RunRecord] | None = None
        if path is not None:
            quick = list_runs_sqlite(path, timeout_s=lock_timeout_s(), **filters)
        elif url.startswith("postgresql"):
            from ._pg_reader import list_runs_pg

            quick = list_runs_pg(url, connect_timeout_s=connect_timeout_s(), statement_timeout_s=lock_timeout_s(),
                                 **filters)
        if quick is not None:
            return quick
    st = open_store(url)
    try:
        return st.list_runs(**filters)
    finally:
        st.close()


def runs(store: str | None = None, **filters: _Any) -> _Any:
    """The run history as a pandas DataFrame, one row per run, newest first: ``referee.runs(suite="demo",
    branch="main", tag="nightly", status="complete", since="2026-01-01", limit=50)``. ``store``: a store URL or
    file (default: the one in force). A run's rows: ``referee.store.rows_frame(open_store(), run_id)``."""
    from ._history import runs_frame

    st = open_store(store)
    try:
        return runs_frame(st, **filters)
    finally:
        st.close()


def upgrade_store(url: str | None = None, *, on_wait: _Any = None) -> tuple[str | None, str]:
    """Bring the store's schema to this referee's (a shared PostgreSQL store is upgraded only this way), under
    a lock. Returns (revision before, after)."""
    from sqlalchemy.exc import DBAPIError

    from ._engine import make_engine, upgrade
    from ._settings import require_history, scrub

    target = normalise_url(url) if url else current().resolved_url()
    require_history(target)  # a file that is not there (a mistyped --store) is said, never made to upgrade it
    engine = make_engine(target)
    try:
        return upgrade(engine, target, on_wait=on_wait)
    except DBAPIError as exc:  # not a database, a damaged file, a server that refuses: named, no traceback
        raise StoreError(f"cannot upgrade {display_url(target)}: {scrub(str(exc.orig or exc), target)}") from None
    finally:
        engine.dispose()


__all__ = [
    "Baseline",
    "ENV",
    "REVISIONS",
    "Recorder",
    "RunRecord",
    "SCHEMA_REVISION",
    "SpansWritten",
    "Store",
    "StoreError",
    "StoreSettings",
    "StoredRun",
    "StoredTrace",
    "TraceScore",
    "TraceStore",
    "alignments",
    "check_store",
    "compact_if_worth_it",
    "current",
    "default_url",
    "display_url",
    "export_run",
    "file_note",
    "find_run",
    "import_results",
    "import_store",
    "label_of_suite",
    "latest_pair",
    "list_runs",
    "load_run",
    "looks_like_name",
    "new_run_id",
    "normalise_url",
    "open_recorder",
    "open_store",
    "prune_plan",
    "record_alignment",
    "record_view_label",
    "recording",
    "require_history",
    "reserved_paths",
    "resolve_baseline",
    "results_files",
    "rows_frame",
    "runs",
    "runs_frame",
    "scope",
    "sqlite_file",
    "suite_named",
    "upgrade_store",
    "view_labels",
]
