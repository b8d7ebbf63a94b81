"""``list_runs`` on a local file reads it with the standard library: the same runs, in the same order, as
``Store.list_runs``, and any file that is not a store at the head goes through ``Store`` (migrated or refused)."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from referee.store import list_runs, open_store
from referee.store._sqlite_reader import list_runs_sqlite

DATA = Path(__file__).resolve().parent.parent / "data" / "store"


def seed(url: str) -> None:
    """Four runs over two suites, two branches and three statuses; tags with a quote and out of order."""
    st = open_store(url)
    try:
        runs = [("r1", "demo", "main", "complete", "2026-12-01T10:00:00+00:00", ["nightly"], True),
                ("r2", "demo", "feat/x", "complete", "2026-12-02T10:00:00+00:00", ["nightly", "a'--"], False),
                ("r3", "other", "main", "failed", "2026-12-02T10:00:00+00:00", [], None),
                ("r4", "demo", "main", "running", "2026-12-03T10:00:00+00:00", ["b", "a"], False)]
        for rid, suite, branch, status, started, tags, dirty in runs:
            st.begin_run({"id": rid, "kind": "run", "suite": suite, "identity": f"id-{suite}", "status": status,
                          "started_at": started, "git_branch": branch, "git_dirty": dirty,
                          "git_commit": "ab" * 20}, tags=tags)
    finally:
        st.close()


def _seed(path: Path) -> None:
    seed(f"sqlite:///{path}")


FILTERS: list[dict[str, Any]] = [
    {}, {"suite": "demo"}, {"branch": "main"}, {"tag": "nightly"}, {"tag": "a'--"}, {"status": "complete"},
    {"since": "2026-12-02"}, {"until": "2026-12-02T10:00:00+00:00"}, {"until": "2026-12-02"},
    {"since": "2026-12-02T11:00+01:00"}, {"limit": 2}, {"suite": "demo", "limit": 1},
    {"suite": "nothing"}, {"limit": 0},
    {"limit": 2**80},  # past any database's integer: every run (it was an OverflowError from the driver)
]


@pytest.mark.parametrize("filters", FILTERS, ids=[repr(f) for f in FILTERS])
def test_the_quick_reader_lists_what_the_store_lists(tmp_path: Path, filters: dict[str, Any]) -> None:
    path = tmp_path / "h.sqlite"
    _seed(path)
    st = open_store(f"sqlite:///{path}")
    try:
        want = [r.as_dict() for r in st.list_runs(**filters)]
    finally:
        st.close()
    quick = list_runs_sqlite(path, timeout_s=5, **filters)
    assert quick is not None and [r.as_dict() for r in quick] == want
    assert [r.as_dict() for r in list_runs(str(path), **filters)] == want
    if filters == {}:
        assert len(want) == 4 and {type(r["git_dirty"]) for r in want} == {bool, type(None)}


def test_a_file_not_at_the_head_goes_through_the_store(tmp_path: Path) -> None:
    old = tmp_path / "old.sqlite"
    shutil.copy(DATA / "schema-0001.sqlite", old)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database" * 100)
    for path in (old, junk, tmp_path / "missing.sqlite"):
        assert list_runs_sqlite(path, timeout_s=5) is None, path
    assert old.read_bytes() == (DATA / "schema-0001.sqlite").read_bytes()  # the reader never changes a file
    before = list_runs(str(old))  # Store migrates a local file on first use, then lists it
    con = sqlite3.connect(old)
    try:
        assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == len(before)
    finally:
        con.close()


def test_runs_list_on_a_local_file_imports_no_sqlalchemy_and_no_numpy(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    _seed(path)
    script = ("import sys\nfrom referee.cli import cli\ncode = cli(['runs', 'list', '--store', sys.argv[1]])\n"
              "print('heavy:', sorted(m for m in ('sqlalchemy', 'numpy', 'alembic') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "heavy: []" in done.stdout and done.stdout.count(" demo ") + done.stdout.count(" other ") == 4
