"""A stored run loaded whole (``load_run``): named as ``referee runs show`` names runs, and shown in a notebook and
a terminal as ``referee score`` reports it, under where and when it ran."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

import referee
from referee.errors import UserError
from referee.store import load_run, open_store

CASES = [{"id": f"c{i}", "output": "yes" if i % 4 else "no", "category": "greeting"} for i in range(8)]


def test_a_stored_run_is_loaded_by_name_and_displays_with_where_it_ran(store_url: str, tmp_path: Path) -> None:
    first = referee.evaluate(CASES, [{"contains": {"value": "yes"}}], name="demo", store=store_url,
                             out=tmp_path / "a.jsonl", tags=["nightly\x1b[2J"], progress=False)
    with open_store(store_url) as st:
        run = load_run(st, "last")  # a name, as `referee runs show last`; an id prefix still works
        assert run.run_id == first.run_id and load_run(st, first.run_id[:8]).run_id == first.run_id
        with pytest.raises(UserError, match="no complete runs recorded on branch 'no-such-branch'"):
            load_run(st, "no-such-branch")
        assert repr(run) == f"<StoredRun {first.run_id[:12]} demo complete: 8 rows>"
        html = run._repr_html_()
        assert html.startswith('<div class="referee"><div style="font-weight:bold">'
                               f"run {first.run_id[:12]}: 8 cases scored: pass rate 75.0% [")
        assert "suite run of demo, complete;" in html and "greeting" in html
        console = Console(record=True, width=80, force_terminal=True)
        console.print(run)
        text = console.export_text(styles=False)
        assert text.startswith(f"run {first.run_id[:12]}: 8 cases scored")
        # a tag is data: another store's runs may be imported, and its tags come with them
        assert "tags nightly[2J" in text and "\x1b[2J" not in text and "\x1b[2J" not in html


FIXTURES = Path(__file__).parents[1] / "data" / "store"


@pytest.mark.parametrize("schema", [*sorted(p.name for p in FIXTURES.glob("schema-*.sqlite")), "current"])
def test_importing_another_store_never_changes_it(schema: str, tmp_path: Path) -> None:
    # An import's source is an input: a file at an earlier schema was migrated in place (and switched to
    # write-ahead logging) by being imported from; and --tag was ignored for a store's runs.
    import hashlib

    from referee.store import import_store

    source = tmp_path / schema
    if schema == "current":  # this schema, in write-ahead mode, written and closed before the import begins
        with open_store(f"sqlite:///{source}") as made:
            import_store(made, f"sqlite:///{FIXTURES / 'schema-0004.sqlite'}")
    else:
        source.write_bytes((FIXTURES / schema).read_bytes())


    def files() -> dict[str, str]:  # the file and its journal files, if any, by content
        # A file in write-ahead mode is read, by any reader, through its -wal and -shm files beside it: SQLite
        # makes them for the reader when they are missing. The database's own bytes stay as they were.
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in tmp_path.glob(f"{schema}*")
                if schema != "current" or p.name == schema}

    before = files()
    with open_store(f"sqlite:///{tmp_path / 'merged.sqlite'}") as st:
        added, kept = import_store(st, f"sqlite:///{source}", tags=["from-ci"])
        assert added >= 1 and kept == 0
        assert all("from-ci" in r.tags for r in st.list_runs())
        assert import_store(st, f"sqlite:///{source}") == (0, added)  # the same runs again: kept once
    assert files() == before  # no byte changed (and beside an earlier schema's file, nothing made)


def test_a_file_that_is_no_history_or_is_newer_is_refused_unchanged(tmp_path: Path) -> None:
    import sqlite3

    from referee.store import StoreError, import_store

    other_app = tmp_path / "app.sqlite"
    with sqlite3.connect(other_app) as con:
        con.execute("CREATE TABLE notes (body TEXT)")
    newer = tmp_path / "newer.sqlite"
    newer.write_bytes((FIXTURES / "schema-0001.sqlite").read_bytes())
    with sqlite3.connect(newer) as con:
        con.execute("UPDATE alembic_version SET version_num = 'ffff9999'")
    con.close()
    snapshots = {p: p.read_bytes() for p in (other_app, newer)}
    with open_store(f"sqlite:///{tmp_path / 'merged.sqlite'}") as st:
        with pytest.raises(UserError, match="app.sqlite holds no referee run history"):
            import_store(st, f"sqlite:///{other_app}")
        with pytest.raises(StoreError, match="newer.sqlite was written by a newer referee .* It was not changed"):
            import_store(st, f"sqlite:///{newer}")
        with pytest.raises(StoreError, match="no run history at"):
            import_store(st, f"sqlite:///{tmp_path / 'missing.sqlite'}")
        assert st.list_runs() == []
    assert all(p.read_bytes() == b for p, b in snapshots.items())
    assert not (tmp_path / "missing.sqlite").exists()


def test_an_empty_server_database_is_refused_without_a_schema_made_in_it(pg_url: str, tmp_path: Path) -> None:
    from sqlalchemy import create_engine, inspect

    from referee.store import import_store

    with open_store(f"sqlite:///{tmp_path / 'merged.sqlite'}") as st:
        with pytest.raises(UserError, match="holds no referee run history"):
            import_store(st, pg_url)
    engine = create_engine(pg_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as conn:
            assert inspect(conn).get_table_names() == []
    finally:
        engine.dispose()
    # The same server holding a history is read where it is.
    referee.evaluate(CASES, [{"contains": {"value": "yes"}}], name="demo", store=pg_url, out=tmp_path / "a.jsonl",
                     progress=False)
    with open_store(f"sqlite:///{tmp_path / 'merged.sqlite'}") as st:
        assert import_store(st, pg_url, tags=["team"]) == (1, 0)
        assert st.list_runs()[0].tags == ["team"]


def test_a_source_that_cannot_be_copied_is_said_and_nothing_is_imported(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # The copy an import reads goes to the temporary folder: where it cannot be made (a full disk, a TMPDIR that
    # names a file), the error names the store and TMPDIR, never a traceback of sqlite3 or os.
    import tempfile

    from referee.store import StoreError, import_store

    source = tmp_path / "old.sqlite"
    source.write_bytes((FIXTURES / "schema-0001.sqlite").read_bytes())
    not_a_folder = tmp_path / "a-file"
    not_a_folder.write_text("x")
    monkeypatch.setattr(tempfile, "tempdir", str(not_a_folder))
    with open_store(f"sqlite:///{tmp_path / 'merged.sqlite'}") as st:
        with pytest.raises(StoreError, match=r"cannot copy .*old\.sqlite to read it: no temporary folder in .*TMPDIR"):
            import_store(st, f"sqlite:///{source}")
        assert st.list_runs() == []
