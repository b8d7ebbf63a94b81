"""The Store face on SQLite: record, finish, query; texts stored once; stubs; hostile names; delete."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select, text

from referee.errors import UserError
from referee.results import ResultRow, RunManifest
from referee.store import Store, StoreError, open_store
from referee.store import _schema as schema
from referee.store._recorder import run_values

HOSTILE = ["'; DROP TABLE runs; --", 'quote " and \' both', "ctrl\x01\x1b[31m\ttab", "percent % under_score"]


def _rows(n: int, *, rationale: str = "fine", offset: int = 0) -> list[ResultRow]:
    return [ResultRow(id=f"c{i}", status="scored", score=(i % 4) / 3, passed=(i % 4) / 3 >= 0.7,
                      evaluator="suite", rationale=rationale, latency_ms=10.0 + i + offset) for i in range(n)]


def _begin(store: Store, run_id: str, *, suite: str = "s", tags: tuple[str, ...] = (),
           started: str = "2026-01-01T00:00:00+00:00", branch: str | None = "main",
           commit: str | None = "a" * 40) -> RunManifest:
    m = RunManifest(kind="suite", run_id=run_id, created_at=started, extra={"suite": {"name": suite}})
    values = run_values(m, results_path="r.jsonl", git={"commit": commit, "branch": branch, "dirty": False})
    store.begin_run({**values, "started_at": started}, tags=tags)
    return m


def test_a_run_recorded_reads_back_row_for_row(store: Store) -> None:
    _begin(store, "r1" * 16)
    rows = _rows(6)
    store.add_rows("r1" * 16, rows[:3])
    store.add_rows("r1" * 16, rows[3:], first_seq=3)
    back = store.rows("r1" * 16)
    assert [r.model_dump() for r in back] == [r.model_dump() for r in rows]
    rec = store.get_run("r1r1")
    assert (rec.status, rec.suite, rec.git_branch, rec.git_commit) == ("running", "s", "main", "a" * 40)


def test_a_row_stored_again_under_its_key_replaces_the_old_one(store: Store) -> None:
    _begin(store, "x" * 32)
    err = ResultRow(id="c0", status="error", evaluator="suite", error="timeout")
    store.add_rows("x" * 32, [err])
    store.add_rows("x" * 32, _rows(1))
    back = store.rows("x" * 32)
    assert len(back) == 1 and back[0].status == "scored"


def test_one_batch_holding_a_key_twice_keeps_the_later_row(store: Store) -> None:
    # PostgreSQL writes a batch as one statement: a key twice in it must not fail, and the later row wins, as
    # it does when the rows are written one after the other.
    _begin(store, "d" * 32)
    err = ResultRow(id="c1", status="error", evaluator="suite", error="timeout")
    rows = [*_rows(3), err, *_rows(3, offset=100)[2:]]
    store.add_rows("d" * 32, rows)
    back = {r.id: r for r in store.rows("d" * 32)}
    assert sorted(back) == ["c0", "c1", "c2"]
    assert back["c1"].status == "error" and back["c2"].latency_ms == 112.0 and back["c0"].latency_ms == 10.0


def test_a_row_whose_text_is_missing_is_said_not_left_out(store: Store) -> None:
    # An inner join dropped the row: a damaged store's run was scored, compared and exported a row short.
    _begin(store, "m" * 32)
    store.add_rows("m" * 32, _rows(3, rationale="only this row's"))
    with store.engine.begin() as conn:
        if store.dialect == "postgresql":  # its foreign key refuses the damage: a database edited by hand
            conn.execute(text("ALTER TABLE rows DROP CONSTRAINT rows_body_fkey"))
        body = conn.execute(select(schema.rows.c.body).where(schema.rows.c.case_id == "c1")).scalar_one()
        conn.execute(schema.texts.delete().where(schema.texts.c.hash == body))
    with pytest.raises(StoreError, match=f"run {'m' * 12}, case 'c1': its stored text is missing"):
        store.rows("m" * 32)


def test_a_batch_larger_than_one_statement_is_stored_whole(store: Store) -> None:
    _begin(store, "b" * 32)
    store.add_rows("b" * 32, _rows(12_001))
    assert store.count_rows("b" * 32) == 12_001
    assert [r.id for r in store.rows("b" * 32)[-2:]] == ["c11999", "c12000"]


def test_texts_that_repeat_are_stored_once(store: Store) -> None:
    for k in range(5):  # five reruns whose rows differ only in latency
        _begin(store, f"{k:032d}")
        store.add_rows(f"{k:032d}", _rows(20, rationale="the same long rationale " * 20, offset=k))
    with store.engine.connect() as conn:
        n_texts = conn.execute(select(func.count()).select_from(schema.texts)).scalar_one()
        n_rows = conn.execute(select(func.count()).select_from(schema.rows)).scalar_one()
    assert n_rows == 100
    assert n_texts == 20  # one body per distinct case, whatever the latency
    assert [r.latency_ms for r in store.rows(f"{3:032d}")][:2] == [13.0, 14.0]


def test_an_oversized_row_is_stored_as_a_stub_naming_its_file(store: Store,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFEREE_STORE_MAX_ROW_BYTES", "2048")
    _begin(store, "b" * 32)
    big = ResultRow(id="big", status="scored", score=1.0, passed=True, evaluator="suite", raw_reply="x" * 10_000)
    assert store.add_rows("b" * 32, [big, *_rows(1)], results_path="out.jsonl") == 1
    back = {r.id: r for r in store.rows("b" * 32)}
    assert back["big"].raw_reply is None and back["big"].score == 1.0
    assert back["big"].details["store_stub"]["file"] == "out.jsonl"
    assert back["c0"].rationale == "fine"


def test_a_text_that_would_expand_past_the_bound_is_refused_not_expanded(store: Store,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # A store file from elsewhere (``runs import``) may hold a compression bomb in place of a row's body: reading
    # the run is a StoreError naming the bound, never gigabytes in memory. (The bound lowered to 4 MiB for speed.)
    import zlib

    monkeypatch.setattr("referee.store._codec._TEXT_FLOOR", 4 << 20)
    _begin(store, "z" * 32)
    store.add_rows("z" * 32, _rows(2))
    bomb = zlib.compress(b"\0" * (5 << 20), 9)
    with store.engine.begin() as conn:
        body = conn.execute(select(schema.rows.c.body).where(schema.rows.c.case_id == "c1")).scalar_one()
        conn.execute(schema.texts.update().where(schema.texts.c.hash == body).values(packed=1, data=bomb))
    with pytest.raises(StoreError, match="past the bound of 4,194,304 bytes: the store is damaged or hostile") as e:
        store.rows("z" * 32)
    assert str(e.value).startswith(f"{store.display_url}: run zzzzzzzzzzzz, case 'c1': a stored text")


@pytest.mark.parametrize("name", HOSTILE)
def test_sql_quotes_and_control_characters_are_data(store: Store, name: str) -> None:
    run_id = "h" * 32
    _begin(store, run_id, suite=name, tags=(name,))
    store.add_rows(run_id, [ResultRow(id=name, status="scored", score=0.5, passed=False, evaluator="suite")])
    assert [r.id for r in store.list_runs(suite=name)] == [run_id]
    assert [r.id for r in store.list_runs(tag=name)] == [run_id]
    assert store.get_run(run_id).tags == [name]
    assert store.rows(run_id)[0].id == name
    assert store.count_runs() == 1  # the tables are all still there


def test_a_like_pattern_in_a_commit_prefix_is_literal(store: Store) -> None:
    _begin(store, "p" * 32, commit="abc%def")
    _begin(store, "q" * 32, commit="abcXdef")
    assert [r.id for r in store.list_runs(commit="abc%")] == ["p" * 32]


def test_filters_and_order(store: Store) -> None:
    _begin(store, "1" * 32, started="2026-01-01T00:00:00+00:00", branch="main", tags=("nightly",))
    _begin(store, "2" * 32, started="2026-01-02T00:00:00+00:00", branch="feature")
    _begin(store, "3" * 32, started="2026-01-03T00:00:00+00:00", branch="main")
    assert [r.id[0] for r in store.list_runs()] == ["3", "2", "1"]
    assert [r.id[0] for r in store.list_runs(branch="main")] == ["3", "1"]
    assert [r.id[0] for r in store.list_runs(tag="nightly")] == ["1"]
    assert [r.id[0] for r in store.list_runs(since="2026-01-02")] == ["3", "2"]
    assert [r.id[0] for r in store.list_runs(limit=1)] == ["3"]
    assert [r.id[0] for r in store.list_runs(limit=10**30)] == ["3", "2", "1"]  # past the driver's integers
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(UserError, match="limit must be"):
            store.list_runs(limit=bad)  # type: ignore[arg-type]


def test_prune_by_age_and_by_count(store: Store) -> None:
    from datetime import UTC, datetime, timedelta

    from referee.store import prune_plan

    now = datetime.now(UTC)
    for i, days in enumerate((400, 40, 2)):  # oldest first; one suite and configuration
        _begin(store, f"{i}" * 32, started=(now - timedelta(days=days)).isoformat())
        store.finish_run(f"{i}" * 32, {"status": "complete"})

    def plan(**kw: object) -> list[str]:
        return sorted(r.id[0] for r in prune_plan(store, **kw))  # type: ignore[arg-type]

    assert plan(older_than="30d") == ["0", "1"]
    assert plan(older_than="2w") == ["0", "1"]
    assert plan(older_than="500h") == ["0", "1"]
    assert plan(older_than="100d") == ["0"]
    assert plan(keep=1) == ["0", "1"]
    assert plan(keep=2, older_than="30d") == ["0"]  # both given: beyond the newest 2 and older than 30 days
    # Older than any date can be: nothing is (a date overflow's traceback before)
    assert plan(older_than="99999999999d") == [] and plan(older_than="9999999w") == []
    for bad in ("-5d", "30", "1e3d", "nand", "30 days"):
        with pytest.raises(UserError, match="older-than"):
            plan(older_than=bad)
    assert store.count_runs() == 3  # a plan deletes nothing


def test_prune_keeps_the_newest_complete_runs_not_a_killed_one_in_their_place(store: Store) -> None:
    # `--keep 1` counted a killed run (status running, newest) as the one kept and deleted every complete run of
    # its suite: no baseline was left. Complete runs are counted; a run newer than them stays; --keep 0 is all.
    from referee.store import prune_plan

    for i, status in enumerate(("complete", "complete", "interrupted", "complete", "running")):  # oldest first
        _begin(store, f"{i}" * 32, started=f"2026-01-0{i + 1}T00:00:00+00:00")
        if status != "running":
            store.finish_run(f"{i}" * 32, {"status": status})
    assert sorted(r.id[0] for r in prune_plan(store, keep=1)) == ["0", "1", "2"]
    assert sorted(r.id[0] for r in prune_plan(store, keep=2)) == ["0"]
    assert len(prune_plan(store, keep=0)) == 5


def test_since_and_until_are_times_not_strings(store: Store) -> None:
    _begin(store, "1" * 32, started="2026-01-01T23:30:00+00:00")
    _begin(store, "2" * 32, started="2026-01-02T00:00:00.500000+00:00")
    _begin(store, "3" * 32, started="2026-01-03T12:00:00+00:00")

    def ids(since: str | None = None, until: str | None = None) -> list[str]:
        return [r.id[0] for r in store.list_runs(since=since, until=until)]

    assert ids(until="2026-01-02") == ["2", "1"]  # a day given as the end includes that day
    assert ids(since="2026-01-02T01:00+01:00") == ["3", "2"]  # midnight UTC, said in another zone
    assert ids(since="2026-01-02T00:00:01") == ["3"]  # no offset: UTC
    assert ids(since="2026-01-01T23:30:00Z", until="2026-01-02T00:00:00.5Z") == ["2", "1"]
    for bad in ("yesterday", "2026-13-01", "2026-01-02T25:00", "'; DROP TABLE runs;--"):
        with pytest.raises(UserError, match="expected a date"):
            store.list_runs(since=bad)
    assert store.count_runs() == 3


def test_an_ambiguous_or_unknown_id_is_refused(store: Store) -> None:
    _begin(store, "abcd" + "1" * 28)
    _begin(store, "abcd" + "2" * 28)
    with pytest.raises(KeyError, match="ambiguous"):
        store.get_run("abcd")
    with pytest.raises(KeyError, match="no run"):
        store.get_run("ffff")


def test_delete_removes_rows_tags_and_unreferenced_texts(store: Store) -> None:
    _begin(store, "k" * 32, tags=("t",))
    store.add_rows("k" * 32, _rows(3, rationale="shared"))
    _begin(store, "d" * 32, tags=("t",))
    store.add_rows("d" * 32, _rows(3, rationale="shared") + [ResultRow(id="only", status="unscored",
                                                                          evaluator="suite")])
    assert store.delete_runs(["d" * 32]) == 1
    with store.engine.connect() as conn:
        n_texts = conn.execute(select(func.count()).select_from(schema.texts)).scalar_one()
        manifests = conn.execute(select(func.count()).select_from(schema.runs)).scalar_one()
    assert manifests == 1
    assert n_texts == 3  # the kept run's three bodies; "only" was collected
    assert len(store.rows("k" * 32)) == 3 and store.rows("d" * 32) == []


def test_delete_counts_the_runs_it_deleted(store: Store) -> None:
    # `runs delete last 3b5e` naming one run twice said "2 runs deleted".
    _begin(store, "k" * 32)
    _begin(store, "d" * 32)
    assert store.delete_runs(["d" * 32, "d" * 32]) == 1
    assert store.delete_runs(["d" * 32, "k" * 32]) == 1  # one was already gone


def test_a_store_from_a_newer_referee_is_refused_and_left_alone(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    open_store(url).close()
    import sqlite3

    db = sqlite3.connect(tmp_path / "h.sqlite")
    db.execute("UPDATE alembic_version SET version_num='9999'")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="newer referee.*9999.*not changed"):
        open_store(url)
    db = sqlite3.connect(tmp_path / "h.sqlite")
    assert db.execute("SELECT version_num FROM alembic_version").fetchall() == [("9999",)]
    db.close()


def test_the_planned_tables_exist_empty(store: Store) -> None:
    from sqlalchemy import inspect

    names = set(inspect(store.engine).get_table_names())
    assert {"traces", "spans", "trace_scores", "alignments", "labels", "generated_cases"} <= names


def test_generated_cases_are_recorded_per_generation_run(store: Store) -> None:
    records: list[dict[str, Any]] = [
        {"case_id": "synth-00001", "gate": "kept", "source": "Refunds take 14 days.",
         "body": '{"id": "synth-00001", "input": "How long?"}'},
        {"case_id": "synth-00002", "gate": "duplicate", "source": "Refunds take 14 days.",
         "body": '{"id": "synth-00002"}'},
        *({"case_id": name, "gate": "critic", "source": None, "body": name} for name in HOSTILE)]
    store.add_generated_cases("g" * 32, records)
    store.add_generated_cases("h" * 32, records[:1])
    got = store.generated_cases("g" * 32)
    assert [(g["case_id"], g["gate"], g["source"], g["body"]) for g in got] == sorted(
        ((r["case_id"], r["gate"], r["source"], r["body"]) for r in records), key=lambda t: t[0])
    assert len(store.generated_cases()) == len(records) + 1
    # Recorded again under the same run: replaced, not doubled; the shared source text is stored once.
    store.add_generated_cases("g" * 32, [{**records[0], "gate": "critic"}])
    again = store.generated_cases("g" * 32)
    assert len(again) == len(records) and again[0]["gate"] == "critic"
    with store.engine.connect() as conn:
        n = conn.execute(select(func.count()).select_from(schema.texts)
                         .where(schema.texts.c.data.is_not(None))).scalar()
    assert n is not None and n <= len(records) + 1


def test_a_store_named_by_a_folder_says_so(tmp_path: Path) -> None:
    # SQLite's own message for a folder was "unable to open database file", after "cannot prepare".
    with pytest.raises(StoreError, match=r"is a folder: a store is a file in it, such as .*history\.sqlite"):
        open_store(str(tmp_path))
    assert list(tmp_path.iterdir()) == []


def test_a_run_deleted_while_it_records_says_so_at_its_end(store: Store, store_url: str) -> None:
    _begin(store, "k" * 32)
    store.add_rows("k" * 32, _rows(1))
    _begin(store, "d" * 32, tags=("t",))
    store.add_rows("d" * 32, _rows(3))
    with open_store(store_url) as other:  # `referee runs delete` in another process
        assert other.delete_runs(["d" * 32]) == 1
    with pytest.raises(StoreError, match="deleted from the history while it was recording"):
        store.finish_run("d" * 32, {"status": "complete", "n_rows": 3})
    assert [r.id for r in store.list_runs()] == ["k" * 32]
    assert store.count_rows() == 1


def test_deleting_a_run_removes_rows_that_belong_to_no_run(tmp_path: Path) -> None:
    # Rows a killed recording wrote after its run was deleted (SQLite keeps them: it does not enforce the foreign key)
    with open_store(f"sqlite:///{tmp_path / 'h.sqlite'}") as st:
        for run_id in ("a" * 32, "b" * 32):
            _begin(st, run_id)
            st.add_rows(run_id, _rows(2))
        st.add_rows("gone" * 8, _rows(3))  # no run of that id
        assert st.count_rows() == 7
        assert st.delete_runs(["a" * 32]) == 1
        assert st.count_rows() == 2 and [r.id for r in st.list_runs()] == ["b" * 32]
