"""Upgrades from every earlier schema: a store of each revision is committed (tests/data/store); each opens,
upgrades to the head and reads back whole. A store from a newer referee is refused and left alone.

How the fixtures were made: ``schema-0001`` by referee at 0001 (two runs of the suite "fixture"); each later one is
a copy of the one before, upgraded by referee with ``upgrade_store`` (journal mode left as it was). ``schema-0002``
also holds four production traces written by referee at 0002 through ``TraceStore.add_spans`` (A: an OK root and
an ERROR span whose body is zlib-packed; B: unset and OK spans; C: an ERROR span in its second request; D: an ERROR
span whose spans were then dropped, state ``sampled_out``), so the upgrade to 0003 proves its backfill.
"""

from __future__ import annotations

import importlib.util
import shutil
import sqlite3
import zlib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from sqlalchemy import event, text

import referee.store
from referee.results import RunManifest
from referee.store import REVISIONS, SCHEMA_REVISION, Store, StoreError, TraceStore, open_store, upgrade_store
from referee.store._engine import current_revision
from referee.traces import SpanRecord

FIXTURES = Path(__file__).resolve().parent.parent / "data" / "store"
A, B, C, D = "a" * 32, "b" * 32, "c" * 32, "d" * 32
"""The 0002 fixture's traces (see above)."""


def test_there_is_a_fixture_for_every_revision() -> None:
    have = sorted(p.stem.removeprefix("schema-") for p in FIXTURES.glob("schema-*.sqlite"))
    assert have == sorted(REVISIONS)


@pytest.mark.parametrize("revision", REVISIONS)
def test_each_revision_upgrades_to_the_head_and_reads_back(revision: str, tmp_path: Path) -> None:
    db = tmp_path / "h.sqlite"
    shutil.copy(FIXTURES / f"schema-{revision}.sqlite", db)
    url = f"sqlite:///{db}"
    before, after = upgrade_store(url)
    assert before == revision and after == SCHEMA_REVISION
    with open_store(url) as st:
        assert current_revision(st.engine) == SCHEMA_REVISION
        runs = st.list_runs()
        assert len(runs) == 2 and {r.suite for r in runs} == {"fixture"}
        older = runs[-1]
        assert sorted(older.tags) == ["fixture", "quote's"]
        rows = st.rows(older.id)
        assert len(rows) == older.n_rows == 6
        assert older.pass_rate == pytest.approx(sum(r.passed is True for r in rows) / 6)
        assert st.manifest(older.id).run_id == older.id  # type: ignore[union-attr]


def test_a_newer_schema_is_refused_and_left_alone(tmp_path: Path) -> None:
    db = tmp_path / "h.sqlite"
    shutil.copy(FIXTURES / f"schema-{SCHEMA_REVISION}.sqlite", db)
    con = sqlite3.connect(db)
    con.execute("UPDATE alembic_version SET version_num = '9999'")
    con.commit()
    con.close()
    before = db.read_bytes()
    for attempt in (lambda: open_store(f"sqlite:///{db}"), lambda: upgrade_store(f"sqlite:///{db}")):
        with pytest.raises(StoreError, match="newer referee"):
            attempt()
    assert db.read_bytes() == before


def test_a_version_1_manifest_still_reads() -> None:
    m = RunManifest.model_validate({"manifest_version": 1, "kind": "judge"})
    assert m.run_id is None
    with pytest.raises(ValueError, match="extra"):
        RunManifest.model_validate({"manifest_version": 2, "kind": "judge", "unknown_field": 1})


# -- 0003: traces.error, backfilled from the stored spans ------------------------------------------------------------
def test_the_0002_fixture_holds_traces_with_and_without_an_error_span() -> None:
    """What the backfill test below relies on, read with plain sqlite3: four traces, a packed body among the spans."""
    con = sqlite3.connect(FIXTURES / "schema-0002.sqlite")
    try:
        assert con.execute("SELECT version_num FROM alembic_version").fetchone() == ("0002",)
        assert sorted(r[0] for r in con.execute("SELECT id FROM traces")) == [A, B, C, D]
        assert "error" not in [r[1] for r in con.execute("PRAGMA table_info(traces)")]
        packed = con.execute("SELECT s.trace_id FROM spans s JOIN texts t ON t.hash = s.attrs "
                             "WHERE t.packed = 1").fetchall()
        assert (A,) in packed  # A's error span body is zlib-packed: the backfill must unpack it
    finally:
        con.close()


@pytest.mark.parametrize("revision", ["0002", "0003"])
def test_upgraded_traces_are_marked_when_a_stored_span_failed(revision: str, tmp_path: Path) -> None:
    db = tmp_path / "h.sqlite"
    shutil.copy(FIXTURES / f"schema-{revision}.sqlite", db)
    url = f"sqlite:///{db}"
    assert upgrade_store(url)[1] == SCHEMA_REVISION
    with open_store(url) as st:
        ts = TraceStore(st)
        assert {t.id: t.error for t in ts.list_traces()} == {A: True, B: False, C: True, D: False}
        assert [t.id for t in ts.list_traces(error=True)] == [C, A]  # newest arrival first
        assert [t.id for t in ts.list_traces(error=False)] == [D, B]
        assert sorted(s["status"]["code"] for s in ts.trace_spans(A)) == [1, 2]  # the spans read back unchanged
        # Receiving goes on as before: a failing span now marks B.
        ts.add_spans([SpanRecord(trace_id=B, span_id="9" * 16, parent_span_id=None, name="late", start_ns=1,
                                 end_ns=2, service="checkout", status_code=2)], received_ns=1_800_000_000_000_000_000)
        assert ts.error_traces() == [A, C, B]


def _pack_as_0003(data: bytes) -> tuple[int, bytes]:
    """A text as referee up to schema 0003 stored it: zlib at level 1 from 256 bytes on, when that saved a tenth."""
    if len(data) >= 256:
        z = zlib.compress(data, 1)
        if len(z) < len(data) * 0.9:
            return 1, z
    return 0, data


def _migration_0003() -> ModuleType:
    path = Path(referee.store.__file__).parent / "_migrations" / "versions" / "v0003_trace_error.py"
    spec = importlib.util.spec_from_file_location("referee_migration_0003", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_backfill_reads_the_spans_a_batch_at_a_time(store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """On SQLite and PostgreSQL: with batches of 2 spans, 7 traces of 3 spans (errors first, middle, last, none, and a
    packed body) are found again in ceil(21 / 2) reads, none holding more than 2 spans."""
    mig = _migration_0003()
    monkeypatch.setattr(mig, "BATCH", 2)
    big = {"prompt": "the same words again " * 40}
    layout = {0: 0, 1: 1, 2: 2, 3: None, 4: 1, 5: None, 6: 2}  # trace -> which of its spans failed (None: none)
    with Store(store_url) as st:
        ts = TraceStore(st)
        for i, bad in layout.items():
            ts.add_spans([SpanRecord(trace_id=f"{i:032x}", span_id=f"{j + 1:016x}", parent_span_id=None, name="s",
                                     start_ns=j, end_ns=j + 1, status_code=2 if j == bad else 1,
                                     attributes=big if i == 4 else {"j": j}) for j in range(3)], received_ns=i)
        want = {f"{i:032x}": bad is not None for i, bad in layout.items()}
        assert {t.id: t.error for t in ts.list_traces()} == want  # as received
        with st.engine.begin() as conn:
            conn.execute(text("UPDATE traces SET error = :f"), {"f": False})
        assert ts.list_traces(error=True) == []
        reads: list[int] = []

        def count(_conn: Any, _cursor: Any, statement: str, *_a: Any) -> None:
            if statement.lstrip().upper().startswith("SELECT"):
                reads.append(1)

        event.listen(st.engine, "before_cursor_execute", count)
        with st.engine.begin() as conn:
            mig._backfill(conn)
        event.remove(st.engine, "before_cursor_execute", count)
        assert len(reads) == 11  # 21 spans, 2 a read: the last read holds one and ends it
        assert {t.id: t.error for t in ts.list_traces()} == want


def test_a_postgresql_store_at_0002_is_backfilled_by_store_upgrade(pg_url: str) -> None:
    """PostgreSQL upgrades only through ``referee store upgrade``: a store at 0002 holding the fixture's traces
    (written with the 0002 statements) comes out of it with the same marks as the SQLite fixture."""
    from alembic import command

    from referee._util._fastjson import dumps_bytes
    from referee.store._codec import digest
    from referee.store._engine import _alembic_config, make_engine

    engine = make_engine(pg_url)
    try:
        with engine.connect() as conn:
            command.upgrade(_alembic_config(conn), "0002")
            conn.commit()
        with engine.begin() as conn:
            for tid, codes in ((A, [1, 2]), (B, [0, 1]), (C, [0, 2]), (D, [])):
                conn.execute(text("INSERT INTO traces (id, service, last_ns, state, span_count) "
                                  "VALUES (:id, 'checkout', :last, 'open', :n)"),
                             {"id": tid, "last": ord(tid[0]), "n": len(codes)})
                for j, code in enumerate(codes):
                    body = dumps_bytes({"attributes": {"prompt": "the same words again " * 40} if tid == A else {},
                                        "status": [code, "boom" if code == 2 else ""], "service": "checkout"})
                    packed, data = _pack_as_0003(body)
                    assert packed == (1 if tid == A else 0)
                    conn.execute(text("INSERT INTO texts (hash, packed, data) VALUES (:h, :p, :d) "
                                      "ON CONFLICT (hash) DO NOTHING"), {"h": digest(body), "p": packed, "d": data})
                    conn.execute(text("INSERT INTO spans (trace_id, span_id, name, attrs) VALUES (:t, :s, 'x', :h)"),
                                 {"t": tid, "s": f"{j + 1:016x}", "h": digest(body)})
    finally:
        engine.dispose()
    with pytest.raises(StoreError, match="referee store upgrade"):
        open_store(pg_url)  # a shared store is not upgraded by using it
    assert upgrade_store(pg_url) == ("0002", SCHEMA_REVISION)
    with open_store(pg_url) as st:
        ts = TraceStore(st)
        assert {t.id: t.error for t in ts.list_traces()} == {A: True, B: False, C: True, D: False}
        assert [t.id for t in ts.list_traces(error=True)] == [C, A]


# -- 0004: texts compressed with Zstandard ---------------------------------------------------------------------------
def test_an_upgraded_store_reads_its_zlib_texts_beside_the_zstandard_ones_it_takes_next(tmp_path: Path) -> None:
    """The 0003 fixture's texts stay zlib (``packed`` 1) through the upgrade; a run recorded afterwards packs with
    Zstandard (2); both runs read back whole from one store."""
    from referee.results import ResultRow
    from referee.store._recorder import run_values

    db = tmp_path / "h.sqlite"
    shutil.copy(FIXTURES / "schema-0003.sqlite", db)
    url = f"sqlite:///{db}"
    with open_store(url) as st:  # a local file migrates itself on first use
        old = {r.id: [row.model_dump() for row in st.rows(r.id)] for r in st.list_runs()}
        new_id = "e" * 32
        m = RunManifest(kind="suite", run_id=new_id, extra={"suite": {"name": "fixture"}})
        st.begin_run(run_values(m, results_path=None, git={}))
        rows = [ResultRow(id=f"c{i}", status="scored", score=1.0, passed=True, evaluator="suite",
                          rationale=f"case {i}: " + "the answer cites the policy. " * 30) for i in range(4)]
        st.add_rows(new_id, rows)
        assert [r.model_dump() for r in st.rows(new_id)] == [r.model_dump() for r in rows]
        assert {r.id: [row.model_dump() for row in st.rows(r.id)] for r in st.list_runs() if r.id != new_id} == old
    con = sqlite3.connect(db)
    try:
        assert con.execute("SELECT version_num FROM alembic_version").fetchone() == ("0004",)
        kinds = dict(con.execute("SELECT packed, count(*) FROM texts GROUP BY packed").fetchall())
        fresh = con.execute("SELECT DISTINCT t.packed FROM rows r JOIN texts t ON t.hash = r.body "
                            "WHERE r.run_id = ?", (new_id,)).fetchall()
    finally:
        con.close()
    assert kinds.get(1, 0) > 0 and fresh == [(2,)]
