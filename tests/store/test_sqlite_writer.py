"""The recorder's stdlib SQLite writer writes exactly what ``Store`` writes, opens only a store at the head, and
spares a run SQLAlchemy's import."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from referee.results import CriterionScore, ResultRow, RunManifest
from referee.store import _schema as schema
from referee.store import _sqlite_writer, open_store
from referee.store._codec import NONE_INDEX, ROW_UPDATE_COLUMNS
from referee.store._recorder import manifest_bytes, run_values
from referee.store._sqlite_writer import (
    _PACK_BESIDE_MIN,
    ROW_COLUMNS,
    RUN_COLUMNS,
    SqliteWriter,
    open_writer,
    sqlite_path,
)

DATA = Path(__file__).resolve().parent.parent / "data" / "store"


def test_its_columns_are_the_schemas() -> None:
    assert RUN_COLUMNS == tuple(c.name for c in schema.runs.c)
    assert ROW_COLUMNS == tuple(c.name for c in schema.rows.c)
    assert NONE_INDEX == schema.NONE_INDEX
    assert set(ROW_UPDATE_COLUMNS) == set(ROW_COLUMNS) - {"run_id", "case_id", "rep", "turn"}


def _rows() -> list[ResultRow]:
    return [
        ResultRow(id="a", status="scored", score=1.0, passed=True, latency_ms=12.5, cost_usd=0.001,
                  criteria=[CriterionScore(id="tone", status="scored", score=1.0, rationale="ok")]),
        ResultRow(id="b'; DROP TABLE rows;--", status="unscored", rationale="no verdict \x00 here"),
        ResultRow(id="c", status="scored", score=0.0, passed=False, repeat=2, turn=1, rationale="x" * 3000),
        ResultRow(id="big", status="scored", score=0.5, passed=False, rationale="y" * 5000),  # over the bound
    ]


def _many() -> list[ResultRow]:
    return [ResultRow(id=f"m{i}", status="scored", score=(i % 3) / 2, passed=i % 3 == 2,
                      rationale="" if i % 5 == 0 else f"reason {i % 40} " * (1 + i % 60)) for i in range(_PACK_BESIDE_MIN * 2)]


def _tables(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    con = sqlite3.connect(path)
    try:
        return {t: sorted(con.execute(f"SELECT * FROM {t}").fetchall(), key=repr)  # noqa: S608 - fixed names
                for t in ("runs", "run_tags", "rows", "texts")}
    finally:
        con.close()


def _record(w: Any, m: RunManifest) -> None:
    run = run_values(m, results_path="r.jsonl", git={"commit": "ab" * 20, "branch": "main", "dirty": False})
    run["started_at"] = "2026-12-04T00:00:00+00:00"
    w.begin_run(run, tags=["t1", "x'--", "t1"], manifest_json=manifest_bytes(m))
    rows = _rows()
    assert w.add_rows(m.run_id, rows[:2], results_path="r.jsonl") == 0
    assert w.add_rows(m.run_id, rows[2:], first_seq=2, results_path="r.jsonl") == 1
    retried = rows[1].model_copy(update={"status": "scored", "score": 0.25, "passed": False})
    w.add_rows(m.run_id, [retried], first_seq=4, results_path="r.jsonl")  # the same key: replaced
    # A write with enough texts to be compressed beside its row inserts; bodies repeat, some are too short to pack.
    assert w.add_rows(m.run_id, _many(), first_seq=5, results_path="r.jsonl") == 0
    w.finish_run(m.run_id, {"status": "complete", "finished_at": "2026-12-04T00:01:00+00:00", "n_rows": 4,
                            "pass_rate": 0.25, "mean": 0.4375},
                 manifest_json=manifest_bytes(m), summary_json=b'{"overall": {}}')


def test_it_writes_what_store_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFEREE_STORE_MAX_ROW_BYTES", "4096")
    m = RunManifest(kind="judge", run_id="f" * 32)
    assert m.run_id is not None
    paths = [tmp_path / "by_store.sqlite", tmp_path / "by_writer.sqlite"]
    for p in paths:
        open_store(f"sqlite:///{p}").close()  # created and migrated by Store
    with open_store(f"sqlite:///{paths[0]}") as st:
        _record(st, m)
    w = SqliteWriter(paths[1], timeout_s=5)
    try:
        _record(w, m)
    finally:
        w.close()
    by_store, by_writer = _tables(paths[0]), _tables(paths[1])
    assert by_store["rows"] and len(by_store["rows"]) == 4 + len(_many()) and by_store["run_tags"]
    assert {packed for _, packed, _ in by_store["texts"]} == {0, 2}
    assert by_writer == by_store
    with open_store(f"sqlite:///{paths[1]}") as st:
        rows = {r.id: r for r in st.rows(m.run_id)}
        assert rows["b'; DROP TABLE rows;--"].score == 0.25
        assert (rows["big"].details or {}).get("store_stub", {}).get("file") == "r.jsonl"
        assert st.get_run(m.run_id).tags == ["t1", "x'--"]


def test_a_write_whose_texts_fail_to_pack_stores_nothing_and_the_next_write_goes_in(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The texts are compressed on a second thread while the rows go in: a failure there undoes the rows too.
    path = tmp_path / "h.sqlite"
    open_store(f"sqlite:///{path}").close()
    m = RunManifest(kind="judge", run_id="e" * 32)
    assert m.run_id is not None
    w = SqliteWriter(path, timeout_s=5)
    try:
        w.begin_run(run_values(m, results_path=None, git={}))
        before = _tables(path)

        def broken(datas: Any) -> Any:
            raise MemoryError("no room to compress")

        monkeypatch.setattr(_sqlite_writer, "pack_many", broken)
        with pytest.raises(MemoryError, match="no room"):
            w.add_rows(m.run_id, _many())
        assert _tables(path) == before
        monkeypatch.undo()
        assert w.add_rows(m.run_id, _many()) == 0
        assert len(_tables(path)["rows"]) == len(_many())
    finally:
        w.close()
    assert not any(t.name.startswith("referee-store-pack") for t in threading.enumerate())


def test_it_opens_only_a_plain_file_at_the_head(tmp_path: Path) -> None:
    head = tmp_path / "head.sqlite"
    open_store(f"sqlite:///{head}").close()
    w = open_writer(f"sqlite:///{head}", timeout_s=5)
    assert w is not None
    w.close()
    old = tmp_path / "old.sqlite"
    shutil.copy(DATA / "schema-0001.sqlite", old)
    fresh = tmp_path / "fresh.sqlite"
    sqlite3.connect(fresh).close()
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database" * 100)
    for url in (f"sqlite:///{tmp_path / 'missing.sqlite'}", f"sqlite:///{old}", f"sqlite:///{fresh}",
                f"sqlite:///{junk}", "sqlite:///:memory:", f"sqlite:///{head}?mode=ro"):
        assert open_writer(url, timeout_s=5) is None, url
    assert sqlite_path("postgresql://u:p@h/db") is None
    assert old.read_bytes() == (DATA / "schema-0001.sqlite").read_bytes()  # looked at, never changed


def test_a_run_recorded_into_an_existing_store_imports_no_sqlalchemy(tmp_path: Path) -> None:
    store = tmp_path / "h.sqlite"
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        import referee

        cases = [{{"id": f"c{{i}}", "output": "yes" if i % 3 else "no"}} for i in range(30)]
        r = referee.evaluate(cases, [{{"contains": {{"value": "yes"}}}}], name="demo", store={str(store)!r},
                             progress=False, out={str(tmp_path / 'r.jsonl')!r})
        print("sqlalchemy" in sys.modules, r.run_id)
    """))
    seen = []
    for _ in range(2):  # the first creates and migrates the store (SQLAlchemy, Alembic); the second needs neither
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        imported, run_id = done.stdout.split()
        seen.append((imported, run_id))
    assert [s[0] for s in seen] == ["True", "False"]
    with open_store(f"sqlite:///{store}") as st:
        ids = {r.id for r in st.list_runs()}
        assert ids == {s[1] for s in seen}
        for run_id in ids:
            run = st.get_run(run_id)
            assert run.status == "complete" and run.n_rows == 30 and run.pass_rate == pytest.approx(20 / 30)
            assert len(st.rows(run_id)) == 30


def test_a_run_deleted_while_it_records_leaves_no_row_behind(tmp_path: Path) -> None:
    # `referee runs delete` (or `prune`) of a run still recording: its later rows went on being written under a run
    # id no longer stored, rows of no run that nothing removed, and the run's end said nothing. Store and this
    # writer alike now remove them at the run's end and say so; `store check` names any left by a killed run.
    from referee.store import StoreError, check_store

    for writer in ("store", "stdlib"):
        path = tmp_path / f"{writer}.sqlite"
        with open_store(f"sqlite:///{path}") as st:
            keep = RunManifest(kind="judge", run_id="k" * 32)
            assert keep.run_id is not None
            st.begin_run(run_values(keep, results_path="k.jsonl", git={}), tags=["kept"])
            st.add_rows(keep.run_id, _rows()[:1], results_path="k.jsonl")
        m = RunManifest(kind="judge", run_id="d" * 32)
        assert m.run_id is not None
        w: Any = open_store(f"sqlite:///{path}") if writer == "store" else SqliteWriter(path, timeout_s=5)
        try:
            w.begin_run(run_values(m, results_path="r.jsonl", git={}), tags=["t"])
            w.add_rows(m.run_id, _rows()[:2], results_path="r.jsonl")
            with open_store(f"sqlite:///{path}") as other:  # another process: `referee runs delete`
                assert other.delete_runs([m.run_id]) == 1
            w.add_rows(m.run_id, _rows()[2:], first_seq=2, results_path="r.jsonl")
            assert check_store(f"sqlite:///{path}") == [
                "2 rows belong to no run (a run deleted while it was recording); the next `referee runs delete` "
                "or `runs prune` that deletes a run removes them"]
            with pytest.raises(StoreError, match="deleted from the history while it was recording"):
                w.finish_run(m.run_id, {"status": "complete", "n_rows": 4})
        finally:
            w.close()
        tables = _tables(path)
        assert [r[0] for r in tables["runs"]] == [keep.run_id], writer
        assert {r[0] for r in tables["rows"]} == {keep.run_id} and len(tables["rows"]) == 1, writer
        assert [r[0] for r in tables["run_tags"]] == [keep.run_id], writer
        assert check_store(f"sqlite:///{path}") == []
