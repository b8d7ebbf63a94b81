"""The faults of the run history (SQLite and PostgreSQL): in every one the run goes on, its files are complete,
no stored row is lost or duplicated, and no password shows. Waits are on conditions, never fixed sleeps."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import referee
from referee.store import open_store
from tests.support.cli import close_pipes
from tests.support.postgres import PostgresServer

CASES = [{"id": f"c{i}", "output": "yes" if i % 3 else "no"} for i in range(30)]
EVALS = [{"contains": {"value": "yes"}}]
REPO = Path(__file__).resolve().parents[2]


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "run history not recorded" in r.getMessage()]


def _evaluate(url: str, tmp_path: Path, **kw: Any) -> Any:
    return referee.evaluate(CASES, EVALS, store=url, out=tmp_path / "r.jsonl", progress=False, **kw)


def _file_rows(tmp_path: Path) -> int:
    return len((tmp_path / "r.jsonl").read_text().splitlines())


def test_a_damaged_store_file_warns_once_and_the_run_goes_on(tmp_path: Path,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    db = tmp_path / "h.sqlite"
    db.write_bytes(b"SQLite format 3\x00" + b"\xff" * 5000)
    with caplog.at_level(logging.WARNING, logger="referee.store"):
        res = _evaluate(f"sqlite:///{db}", tmp_path)
    assert len(res.rows) == 30 and _file_rows(tmp_path) == 30
    (w,) = _warnings(caplog)
    assert str(db) in w
    assert "sqlalche.me" not in w  # what is wrong, not a link to SQLAlchemy's documentation


def test_a_store_locked_past_its_timeout(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "h.sqlite"
    open_store(f"sqlite:///{db}").close()
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another writer that never lets go
    monkeypatch.setenv("REFEREE_STORE_TIMEOUT", "0.5")
    try:
        with caplog.at_level(logging.WARNING, logger="referee.store"):
            res = _evaluate(f"sqlite:///{db}", tmp_path)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert len(res.rows) == 30 and _file_rows(tmp_path) == 30
    (w,) = _warnings(caplog)
    assert "locked" in w and str(db) in w


def test_a_store_from_a_newer_referee_is_left_alone_and_the_run_goes_on(
        store_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from sqlalchemy import text

    with open_store(store_url) as st, st.engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    with caplog.at_level(logging.WARNING, logger="referee.store"):
        res = _evaluate(store_url, tmp_path)
    assert len(res.rows) == 30
    (w,) = _warnings(caplog)
    assert "newer referee" in w


def test_a_full_disk_mid_run(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite's own "database or disk is full" (SQLITE_FULL), from a page limit on the store's connections."""
    from sqlalchemy import event

    from referee.store import _engine

    real = _engine._sqlite_engine

    def small(path: str) -> Any:
        engine = real(path)

        @event.listens_for(engine, "connect")
        def _limit(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.execute("PRAGMA max_page_count = 36")

        return engine

    monkeypatch.setattr(_engine, "_sqlite_engine", small)
    big = [{"id": f"c{i}", "output": f"yes {i} " + "x" * 3000} for i in range(200)]
    with caplog.at_level(logging.WARNING, logger="referee.store"):
        res = referee.evaluate(big, EVALS, store=f"sqlite:///{tmp_path / 'h.sqlite'}", out=tmp_path / "r.jsonl",
                               progress=False)
    assert len(res.rows) == 200 and _file_rows(tmp_path) == 200 and res.run_id is not None
    (w,) = _warnings(caplog)
    assert "full" in w
    # what was stored before the disk filled is whole: every stored row reads back, none twice
    monkeypatch.setattr(_engine, "_sqlite_engine", real)
    with open_store(f"sqlite:///{tmp_path / 'h.sqlite'}") as st:
        rows = st.rows(res.run_id)
        assert len(rows) == len({r.id for r in rows}) < 200


def test_postgres_down_blackholed_or_refusing_the_credentials(
        pg_server: PostgresServer, pg_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFEREE_STORE_CONNECT_TIMEOUT", "1")
    # A host that accepts the connection and never answers (a blackhole at the protocol level).
    hole = socket.socket()
    hole.bind(("127.0.0.1", 0))
    hole.listen(64)
    port = hole.getsockname()[1]
    db = pg_url.rsplit("/", 1)[1]
    urls = {"down": "postgresql://u:pw-down-123@127.0.0.1:1/x",
            "blackholed": f"postgresql://u:pw-hole-123@127.0.0.1:{port}/x",
            "bad password": pg_server.url(db, password="pw-wrong-123")}
    try:
        for name, url in urls.items():
            caplog.clear()
            with caplog.at_level(logging.WARNING, logger="referee.store"):
                res = referee.evaluate(CASES, EVALS, store=url, progress=False)
            assert len(res.rows) == 30, name
            text = "\n".join(r.getMessage() for r in caplog.records)
            assert len(_warnings(caplog)) == 1, (name, text)
            assert "pw-" not in text and "127.0.0.1" in text, (name, text)
    finally:
        hole.close()


def test_postgres_restarting_mid_run_loses_no_row(pg_server: PostgresServer, pg_url: str, tmp_path: Path,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    restarted = threading.Event()

    async def slow_yes(output: str, case: Any) -> bool:
        import asyncio

        if case.id == "c10" and not restarted.is_set():
            def rows_stored_then_restart() -> None:
                with open_store(pg_url) as st:  # mid-run: once the first rows are in
                    deadline = time.monotonic() + 60
                    while st.count_rows() == 0:
                        assert time.monotonic() < deadline, "no row was ever stored"
                        time.sleep(0.02)
                pg_server.restart()

            await asyncio.to_thread(rows_stored_then_restart)
            restarted.set()
        await asyncio.sleep(0.01)
        return output == "yes"

    with caplog.at_level(logging.WARNING, logger="referee.store"):
        res = referee.evaluate(CASES, [slow_yes], store=pg_url, out=tmp_path / "r.jsonl", progress=False,
                               concurrency=1)
    assert restarted.is_set() and len(res.rows) == 30 and res.run_id is not None
    assert _warnings(caplog) == []
    with open_store(pg_url) as st:
        assert st.count_rows(res.run_id) == 30 and st.get_run(res.run_id).status == "complete"


def _suite(folder: Path, n: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "output": "yes" if i % 2 else "no"})
                                                + "\n" for i in range(n)))
    (folder / "suite.yaml").write_text("name: race\ncases: cases.jsonl\nevaluators:\n  - contains: {value: 'yes'}\n")
    return folder / "suite.yaml"


def _env(url: str, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(REFEREE_STORE=url, REFEREE_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(REPO))
    return env


@pytest.mark.slow
def test_16_processes_write_at_once_with_a_reader(store_url: str, tmp_path: Path) -> None:
    suite = _suite(tmp_path / "s", 100)
    reader_errors: list[str] = []
    done = threading.Event()

    def reader() -> None:  # the viewer's side: reading the history while it is written
        from referee.store import Store

        st = Store(store_url, prepare=False)
        try:
            while not done.is_set():
                try:
                    for r in st.list_runs(limit=50):
                        st.count_rows(r.id)
                except Exception as exc:  # noqa: BLE001 - counted, asserted below
                    if "no such table" not in str(exc) and "does not exist" not in str(exc):
                        reader_errors.append(f"{type(exc).__name__}: {exc}")
                done.wait(0.05)
        finally:
            st.close()

    t = threading.Thread(target=reader)
    t.start()
    procs = [subprocess.Popen([sys.executable, "-m", "referee", "run", str(suite), "--out",
                               str(tmp_path / f"out{i}.jsonl"), "--tag", f"p{i}"],
                              env=_env(store_url, tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              start_new_session=True) for i in range(16)]
    errs = []
    try:
        for p in procs:
            _, err = p.communicate(timeout=600)
            errs.append(err.decode())
            assert p.returncode == 0, err.decode()[-2000:]
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
            close_pipes(p)
        done.set()
        t.join()
    joined = "\n".join(errs)
    assert "locked" not in joined and "not recorded" not in joined, joined[-3000:]
    assert reader_errors == []
    with open_store(store_url) as st:
        runs = st.list_runs()
        assert len(runs) == 16 and {r.status for r in runs} == {"complete"}
        assert sorted(t for r in runs for t in r.tags) == sorted(f"p{i}" for i in range(16))
        for r in runs:
            rows = st.rows(r.id)
            assert len(rows) == r.n_rows == 100 and len({x.id for x in rows}) == 100


@pytest.mark.slow
def test_migrations_raced_by_eight_processes_on_a_fresh_store(store_url: str, tmp_path: Path) -> None:
    code = "import sys; from referee.store import open_store; open_store(sys.argv[1]).close()"
    procs = [subprocess.Popen([sys.executable, "-c", code, store_url], env=_env(store_url, tmp_path),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
             for _ in range(8)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        close_pipes(p)
        assert p.returncode == 0, err.decode()[-2000:]
    from referee.store import SCHEMA_REVISION
    from referee.store._engine import current_revision

    with open_store(store_url) as st:
        assert current_revision(st.engine) == SCHEMA_REVISION and st.count_runs() == 0


def test_migrations_raced_by_threads_of_one_process_on_a_fresh_store(store_url: str) -> None:
    # A targets run records each target from a thread of its own: on a fresh store they all migrate at once, and
    # Alembic's module-level state must not mix them up (it lost a run in two, or all, before).
    from referee.store import SCHEMA_REVISION
    from referee.store._engine import current_revision

    errors: list[BaseException] = []
    go = threading.Barrier(6)

    def open_one() -> None:
        try:
            go.wait(timeout=60)
            open_store(store_url).close()
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    with open_store(store_url) as st:
        assert current_revision(st.engine) == SCHEMA_REVISION and st.count_runs() == 0


@pytest.mark.slow
def test_kill_9_then_resume_completes_the_same_run(store_url: str, tmp_path: Path) -> None:
    script = tmp_path / "slow.py"
    script.write_text(textwrap.dedent(f"""
        import sys, time
        import referee

        def slow_yes(output):
            time.sleep(0.05)
            return output == "yes"

        cases = [{{"id": f"c{{i}}", "output": "yes"}} for i in range(200)]
        referee.evaluate(cases, [slow_yes], name="killed", store={store_url!r}, out={str(tmp_path / 'r.jsonl')!r},
                         progress=False, concurrency=1)
    """))
    p = subprocess.Popen([sys.executable, str(script)], env=_env(store_url, tmp_path), stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, start_new_session=True)
    out = tmp_path / "r.jsonl"
    deadline = time.monotonic() + 120
    try:
        while not (out.exists() and len(out.read_text().splitlines()) >= 20):
            assert p.poll() is None, p.stderr.read().decode() if p.stderr else ""
            assert time.monotonic() < deadline, "the run never wrote 20 rows"
            time.sleep(0.05)  # polling the file for the condition
        with open_store(store_url) as st:
            deadline = time.monotonic() + 60
            while st.count_runs() == 0 or st.count_rows() < 5:
                assert time.monotonic() < deadline
                time.sleep(0.05)
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        close_pipes(p)
    with open_store(store_url) as st:
        (killed,) = st.list_runs()
        assert killed.status == "running"  # shown incomplete by `referee runs list`

    def slow_yes(output: str) -> bool:
        return output == "yes"

    cases = [{"id": f"c{i}", "output": "yes"} for i in range(200)]
    res = referee.evaluate(cases, [slow_yes], name="killed", store=store_url, out=out, progress=False)
    assert res.run_id == killed.id
    with open_store(store_url) as st:
        (run,) = st.list_runs()
        assert run.id == killed.id and run.status == "complete"
        rows = st.rows(run.id)
        assert len(rows) == 200 and len({r.id for r in rows}) == 200


def test_an_oversized_row_is_a_stub_and_said(store_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFEREE_STORE_MAX_ROW_BYTES", "4096")

    def long_reason(output: str) -> Any:
        from referee import CheckResult

        return CheckResult(score=1.0, passed=True, reason="r" * (10_000 if output == "big" else 10))

    cases = [{"id": "big", "output": "big"}, {"id": "small", "output": "small"}]
    with caplog.at_level(logging.WARNING, logger="referee.store"):
        res = referee.evaluate(cases, [long_reason], store=store_url, out=tmp_path / "r.jsonl", progress=False)
    assert any("stored as a stub" in r.getMessage() for r in caplog.records)
    assert _warnings(caplog) == [] and res.run_id is not None
    with open_store(store_url) as st:
        rows = {r.id: r for r in st.rows(res.run_id)}
    assert rows["big"].details["store_stub"]["file"] == str(tmp_path / "r.jsonl")
    assert rows["small"].rationale is not None and "store_stub" not in rows["small"].details
