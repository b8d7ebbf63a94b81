"""Every entry point records through the runner's one sink: run id on the result and in the manifest, rows,
totals, the summary from the aggregator; a store that fails never fails the run."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import referee
from referee.results import RunManifest
from referee.store import open_store
from tests.support.cli import run_cli

CASES = [{"id": f"c{i}", "output": "yes" if i % 3 else "no"} for i in range(9)]


def _is_yes(output: str) -> bool:
    return output == "yes"


def test_evaluate_records_the_run_with_its_id_rows_and_summary(store_url: str, tmp_path: Path) -> None:
    res = referee.evaluate(CASES, [_is_yes], store=store_url, tags=["exp-1"], out=tmp_path / "r.jsonl",
                           progress=False)
    assert res.run_id is not None and len(res.run_id) == 32
    assert RunManifest.read(tmp_path / "r.jsonl").run_id == res.run_id  # type: ignore[union-attr]
    with open_store(store_url) as st:
        rec = st.get_run(res.run_id)
        assert rec.status == "complete" and rec.tags == ["exp-1"]
        assert (rec.n_rows, rec.n_scored) == (9, 9)
        summary = res.summary.overall
        assert rec.pass_rate == pytest.approx(summary.pass_rate.estimate)
        assert rec.mean_lo == pytest.approx(summary.mean.lo)
        assert rec.results_path == str(tmp_path / "r.jsonl")
        stored = sorted((r.id, r.score) for r in st.rows(res.run_id))
        assert stored == sorted((r.id, r.score) for r in res.rows)
        assert st.manifest(res.run_id).run_id == res.run_id  # type: ignore[union-attr]


def test_store_false_and_the_env_switch_record_nothing(store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFEREE_STORE", store_url)
    referee.evaluate(CASES, [_is_yes], store=False, progress=False)
    with open_store(store_url) as st:
        assert st.count_runs() == 0
    res = referee.evaluate(CASES, [_is_yes], progress=False)  # REFEREE_STORE=URL: recorded there
    with open_store(store_url) as st:
        assert [r.id for r in st.list_runs()] == [res.run_id]


def test_a_store_that_cannot_be_written_warns_once_and_the_run_goes_on(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the store's folder should be")
    url = f"sqlite:///{blocker / 'h.sqlite'}"
    with caplog.at_level(logging.WARNING, logger="referee.store"):
        res = referee.evaluate(CASES, [_is_yes], store=url, out=tmp_path / "r.jsonl", progress=False)
    assert len(res.rows) == 9 and len((tmp_path / "r.jsonl").read_text().splitlines()) == 9
    warnings = [r.getMessage() for r in caplog.records if "run history not recorded" in r.getMessage()]
    assert len(warnings) == 1 and str(blocker) in warnings[0] and "runs import" in warnings[0]


def test_a_postgres_password_never_reaches_the_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    pytest.importorskip("psycopg")
    # Port 1 on loopback: refused at once, and the message must not carry the password.
    url = "postgresql://alice:hunter2-secret@127.0.0.1:1/evals"
    with caplog.at_level(logging.WARNING, logger="referee.store"):
        res = referee.evaluate(CASES, [_is_yes], store=url, progress=False)
    assert len(res.rows) == 9
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "run history not recorded" in text and "127.0.0.1:1" in text
    assert "hunter2" not in text and "alice" not in text


def test_a_resumed_run_keeps_its_id_and_completes_it(store_url: str, tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    first = referee.evaluate(CASES, [_is_yes], store=store_url, out=out, progress=False)
    # As if killed after four rows: the file holds four, the manifest says running.
    lines = out.read_text().splitlines()
    out.write_text("\n".join(lines[:4]) + "\n")
    m = RunManifest.read(out)
    assert m is not None
    m.status = "running"
    m.write(out)
    again = referee.evaluate(CASES, [_is_yes], store=store_url, out=out, progress=False)
    assert first.run_id is not None and again.run_id == first.run_id
    with open_store(store_url) as st:
        assert st.count_runs() == 1
        assert st.count_rows(first.run_id) == 9
        assert st.get_run(first.run_id).status == "complete"


def test_assert_eval_records_too(store_url: str) -> None:
    from referee.testing.pytest_plugin import assert_eval

    rows = assert_eval(cases=CASES, evaluators=[{"contains": {"value": "yes"}}], store=store_url, tags=["pytest"])
    assert len(rows) == 9
    with open_store(store_url) as st:
        (rec,) = st.list_runs()
        assert rec.tags == ["pytest"] and rec.n_rows == 9 and rec.status == "complete"


def test_cli_run_records_with_tags_and_no_store_records_nothing(
        store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    suite = tmp_path / "suite.yaml"
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES))
    suite.write_text("name: demo\ncases: cases.jsonl\nevaluators:\n  - contains: {value: 'yes'}\n")
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(["run", str(suite), "--out", str(tmp_path / "a.jsonl"), "--store", store_url,
                            "--tag", "nightly", "--tag", "x'; DROP TABLE runs;--"], capsys)
    assert code == 0, err
    code, _, err = run_cli(["run", str(suite), "--out", str(tmp_path / "b.jsonl"), "--no-store"], capsys)
    assert code == 0, err
    code, _, err = run_cli(["run", str(suite), "--out", str(tmp_path / "c.jsonl"), "--no-store", "--store",
                            store_url], capsys)
    assert code == 2 and "contradict" in err
    with open_store(store_url) as st:
        (rec,) = st.list_runs()
        assert rec.suite == "demo" and sorted(rec.tags) == ["nightly", "x'; DROP TABLE runs;--"]
        assert rec.n_rows == 9


def test_a_recorder_closed_before_its_run_started_opens_nothing(tmp_path: Path) -> None:
    from referee.store._recorder import Recorder
    from referee.store._settings import StoreSettings

    db = tmp_path / "h.sqlite"
    rec = Recorder(StoreSettings(url=f"sqlite:///{db}"), None)
    rec.finish(RunManifest(), [])  # a run that failed before its manifest existed
    assert not rec._thread.is_alive() and rec.failed is None
    assert not db.exists()  # no file created, no migration run, no git called


def test_the_runs_end_cuts_the_batching_wait_short(store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Rows wait for company up to BATCH_WAIT_S; the run's end must not wait that out. With an hour's wait, only
    # the wake-up lets finish() complete within its own bound (else: "still writing", run not complete).
    from referee.store import _recorder
    from referee.store._settings import StoreSettings

    monkeypatch.setattr(_recorder, "BATCH_WAIT_S", 3600.0)
    res = referee.evaluate(CASES[:3], [_is_yes], store=False, progress=False)
    rec = _recorder.Recorder(StoreSettings(url=store_url), None)
    m = RunManifest(kind="evaluate")
    rec.start(m)

    def wait_for(ready: Callable[[], bool]) -> None:
        deadline = time.monotonic() + 30
        while not ready() and time.monotonic() < deadline:
            time.sleep(0.01)

    def begun() -> bool:
        with open_store(store_url) as st:
            return st.count_runs() == 1

    wait_for(begun)  # the writer is back at its queue
    rec.rows(res.rows)
    wait_for(rec._q.empty)  # it has taken the rows and waits for company
    m.status = "complete"
    rec.finish(m, res.rows, wait_s=30)
    assert rec.failed is None and not rec._thread.is_alive()
    with open_store(store_url) as st:
        stored = st.get_run(rec.run_id)
        assert stored.status == "complete" and stored.pass_rate is not None
        assert sorted(r.id for r in st.rows(rec.run_id)) == ["c0", "c1", "c2"]


def test_rows_handed_with_their_file_lines_are_not_encoded_again(
        store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from referee.results import _writer

    calls: list[str] = []
    real = _writer.json_line

    def counted(row: object) -> str:
        calls.append("encoded")
        return real(row)  # type: ignore[arg-type]

    monkeypatch.setattr(_writer, "json_line", counted)
    res = referee.evaluate(CASES, [_is_yes], store=store_url, out=tmp_path / "r.jsonl", progress=False)
    assert calls == []  # the summary read the lines the results file was written from
    assert res.run_id is not None
    with open_store(store_url) as st:
        rec = st.get_run(res.run_id)
        assert rec.n_rows == 9 and rec.pass_rate == pytest.approx(res.summary.overall.pass_rate.estimate)
    # Without a results file there are no lines to share: the recorder encodes the rows itself.
    res = referee.evaluate(CASES, [_is_yes], store=store_url, progress=False)
    assert len(calls) == 9
    assert res.run_id is not None
    with open_store(store_url) as st:
        assert st.get_run(res.run_id).pass_rate == pytest.approx(res.summary.overall.pass_rate.estimate)
