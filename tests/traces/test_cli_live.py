"""`referee monitor` as a user runs it: a process listening on loopback, a small application instrumented with the
OpenTelemetry SDK sending to it, the local LLM server as the judge, and the evaluation events arriving at a second
OTLP receiver; Ctrl-C prints the summary."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.judging import verdict
from tests.support.otel import App, logs_receiver


@pytest.mark.slow
def test_monitor_end_to_end_through_the_cli(tmp_path: Path, fake_server: Any) -> None:
    fake_server.responder = lambda req: verdict(0.1) if "WRONG" in req.prompt_text else verdict(0.9)
    with logs_receiver() as (logs, url):
        suite = tmp_path / "monitor.yaml"
        suite.write_text("evaluators:\n  - llm_judge: {rubric: '- the answer is right'}\n"
                         f"monitor:\n  quiet_seconds: 0.2\n  export: {{endpoint: '{url}'}}\n")
        env = {**os.environ, "OPENAI_API_KEY": "sk-test-0123456789abcdef"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "referee", "monitor", str(suite), "--port", "0", "--store",
             f"sqlite:///{tmp_path / 'history.sqlite'}", "--provider", "openai", "--model", "gpt-test",
             "--base-url", fake_server.url + "/v1"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            assert proc.stderr is not None
            line = proc.stderr.readline()
            assert "receiving OTLP/HTTP traces on http://127.0.0.1:" in line, line
            endpoint = line.split(" on ")[1].split("/v1/traces")[0]
            app = App(endpoint)
            sent = [app.ask(f"q{i}", "WRONG" if i == 0 else f"a{i}") for i in range(3)]
            app.flush()
            app.close()
            records = logs.wait_for(3, timeout=120)
            os.killpg(proc.pid, signal.SIGINT)
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert {(r["trace_id"], r["span_id"]) for r in records} == {(s.trace_id, s.root_span_id) for s in sent}
    labels = {r["trace_id"]: r["attributes"]["gen_ai.evaluation.score.label"] for r in records}
    assert labels[sent[0].trace_id] == "fail" and labels[sent[1].trace_id] == "pass"
    assert "llm_judge" in out and " 3 " in out
