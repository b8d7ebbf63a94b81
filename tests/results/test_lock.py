"""One writer per results file; resume keeps only rows its manifest's judge wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from referee.cli import cli
from referee.errors import UserError
from referee.results import ResultRow, ResultWriter, read_results
from referee.results._lock import ResultsLock, lock_path
from referee.results._manifest import RunManifest
from referee.testing import FakeLLMServer
from tests.support.cli import close_pipes


def _inputs(tmp: Path, n: int = 3) -> tuple[Path, Path]:
    cases = tmp / "cases.jsonl"
    cases.write_text("".join(json.dumps({"id": f"c{i}", "output": f"answer {i}"}) + "\n" for i in range(n)))
    tpl = tmp / "t.md"
    tpl.write_text("Grade <output>{output}</output>")
    return cases, tpl


def _judge_args(srv: FakeLLMServer, cases: Path, tpl: Path, out: Path, model: str) -> list[str]:
    return ["judge", str(cases), "-t", str(tpl), "-o", str(out), "--provider", "openai", "--base-url",
            srv.openai_base_url, "--model", model, "--concurrency", "1", "--max-retries", "0"]


def test_a_second_run_on_a_file_in_use_exits_2_at_once_and_pays_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases, tpl = _inputs(tmp_path)
    out = tmp_path / "r.jsonl"
    with FakeLLMServer(latency=1.0) as slow:
        # The first run's replies wait until the second run has been refused: on a busy machine the first
        # run could otherwise finish (and release the file) before the second one starts.
        released, reply = threading.Event(), slow.responder
        slow.responder = lambda req: (released.wait(120), reply(req))[1]
        env = {**os.environ, "OPENAI_API_KEY": "sk-test-not-a-real-key"}
        first = subprocess.Popen([sys.executable, "-m", "referee", *_judge_args(slow, cases, tpl, out, "model-a")],
                                 env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 60
            while not slow.requests and time.monotonic() < deadline:  # the first run is paying for calls
                time.sleep(0.05)
            assert slow.requests, "the first run never started"
            assert lock_path(out).read_text().strip() == str(first.pid)
            with FakeLLMServer() as other:
                os.environ["OPENAI_API_KEY"] = "sk-test-not-a-real-key"
                try:
                    code = cli(_judge_args(other, cases, tpl, out, "model-b"))
                finally:
                    del os.environ["OPENAI_API_KEY"]
                err = capsys.readouterr().err
                assert code == 2 and f"in use by pid {first.pid}" in err
                assert other.requests == []  # refused before a single call
        finally:
            released.set()
            code = first.wait(timeout=120)
            first_err = first.stderr.read() if first.stderr else b""
            close_pipes(first)
            assert code == 0, first_err
    rows = read_results(out, strict=True).rows
    assert sorted(r.id for r in rows) == ["c0", "c1", "c2"]
    assert {r.judge.model for r in rows if r.judge} == {"model-a"}
    man = RunManifest.read(out)
    assert man is not None and man.judge is not None and man.judge.model == "model-a" and man.status == "complete"
    assert not lock_path(out).exists()  # released (the kernel also drops it if the run is killed)


def test_the_lock_is_reentrant_in_one_process_and_exclusive_across_processes(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    with ResultsLock(out), ResultWriter(out) as w:  # a run and its writer share the lock
        w.write(ResultRow(id="a", status="scored", score=1.0))
        holder = subprocess.run(
            [sys.executable, "-c", "import sys; from referee.results._lock import ResultsLock\n"
             "try:\n    ResultsLock(sys.argv[1]).acquire()\nexcept Exception as e:\n    print(e)",
             str(out)], capture_output=True, text=True, timeout=60)
        assert f"in use by pid {os.getpid()}" in holder.stdout
    ResultsLock(out).acquire().release()  # free again


def test_a_killed_writer_leaves_no_lock_behind(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    p = subprocess.Popen([sys.executable, "-c", "import sys, time; from referee.results._lock import ResultsLock\n"
                          "ResultsLock(sys.argv[1]).acquire(); print('held', flush=True); time.sleep(60)", str(out)],
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline().strip() == "held"
    with pytest.raises(UserError, match=f"pid {p.pid}"):
        ResultsLock(out).acquire()
    p.kill()
    p.wait()
    close_pipes(p)
    ResultsLock(out).acquire().release()  # kill -9 released it


def test_resume_keeps_no_row_another_judge_model_wrote(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases, tpl = _inputs(tmp_path)
    out = tmp_path / "r.jsonl"
    with FakeLLMServer() as srv:
        os.environ["OPENAI_API_KEY"] = "sk-test-not-a-real-key"
        try:
            assert cli(_judge_args(srv, cases, tpl, out, "model-a")) == 0
            # A file two unlocked runs wrote: model-a's manifest, one row by model-b slipped in.
            rows = read_results(out).rows
            forged = rows[0].model_copy(update={"judge": rows[0].judge.model_copy(update={"model": "model-b"})
                                                if rows[0].judge else None})
            with open(out, "a", encoding="utf-8") as f:
                f.write(json.dumps(forged.to_json_dict()) + "\n")
            srv.requests.clear()
            assert cli(_judge_args(srv, cases, tpl, out, "model-a")) == 0
        finally:
            del os.environ["OPENAI_API_KEY"]
    err = capsys.readouterr().err
    assert "different configuration" in err
    # Nothing kept from the mixed file (set aside, not deleted): every case judged again by model-a.
    assert len(read_results(tmp_path / "r.prev.jsonl").rows) == 4
    rows = read_results(out).rows
    assert len(rows) == 3 and {r.judge.model for r in rows if r.judge} == {"model-a"}
