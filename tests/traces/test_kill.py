"""kill -9 of the monitor: no trace scored twice, none lost; the judge calls of the pass that was cut are made
again (at-least-once, as documented), the passes already stored are not."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from referee.example import DATA
from referee.store import Store
from referee.testing import FakeLLMServer, WireRequest
from referee.traces import Monitor, Redactor, StoreSink, load_monitor, replay
from tests.support.judging import verdict

RECORDED = DATA / "production" / "traces.otlp.jsonl"


@pytest.mark.slow
def test_kill_9_loses_and_duplicates_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    with Store(url) as store:
        assert replay([RECORDED], StoreSink(store), Redactor(), received_ns=time.time_ns()) == 48
    suite = tmp_path / "monitor.yaml"
    suite.write_text("evaluators:\n  - llm_judge: {rubric: '- answers the question'}\n"
                     "monitor:\n  batch: 2\n  quiet_seconds: 0\n")
    arrived, release = threading.Event(), threading.Event()
    seen: list[int] = []

    def responder(req: WireRequest) -> str:
        seen.append(1)
        if len(seen) == 5:  # the fifth judge call (third pass): the monitor is killed while it waits
            arrived.set()
            release.wait(60)
        return verdict(0.8)

    with FakeLLMServer(responder) as srv:
        env = {**os.environ, "OPENAI_API_KEY": "sk-test-0123456789abcdef"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "referee", "monitor", str(suite), "--store", url, "--once", "--provider",
             "openai", "--model", "gpt-test", "--base-url", srv.url + "/v1", "--concurrency", "1",
             "--max-retries", "0"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            assert arrived.wait(120), "the monitor never reached its fifth judge call"
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(60)
        finally:
            release.set()
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(60)
        assert proc.returncode == -signal.SIGKILL
        with Store(url) as store:
            sink = StoreSink(store)
            assert len(sink.scores()) == 4  # two passes of two were stored before the kill
            monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
            config, _, _ = load_monitor(suite, clock=time.time)
            from referee import Judge

            mon = Monitor(sink, config, judge=Judge("openai:gpt-test", base_url=srv.url + "/v1", concurrency=1))
            calls_before = len(seen)
            while mon.step().traces:
                pass
            scores = sink.scores()
    assert sorted(s.trace_id for s in scores) == sorted({s.trace_id for s in scores})  # none twice
    assert len(scores) == 12  # none lost
    assert len(seen) - calls_before == 8  # only the 8 traces not yet stored are judged again
