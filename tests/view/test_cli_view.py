"""`referee view` as a user runs it: --port 0 prints the URL, the API answers, SIGTERM stops it cleanly."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

from referee.cli import cli
from tests.support.cli import close_pipes
from tests.view.conftest import Data


def _start(*args: str) -> tuple[subprocess.Popen[str], str, list[str]]:
    proc = subprocess.Popen([sys.executable, "-m", "referee", "view", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        if line.startswith("serving on "):
            return proc, line.split()[2], lines
    proc.wait(timeout=30)
    raise AssertionError(f"no URL printed: {lines} {proc.stderr.read() if proc.stderr else ''}")


def test_view_prints_its_url_serves_and_releases_the_labels_lock(data: Data) -> None:
    proc, url, lines = _start(str(data.results), "--cases", str(data.cases), "--port", "0")
    try:
        assert url.startswith("http://127.0.0.1:") and "(127.0.0.1 only)" in lines[-1]
        assert any(f"labels of results.jsonl go to {data.dir / 'results.labels.jsonl'}" in x for x in lines)
        with urllib.request.urlopen(url + "api/runs", timeout=30) as r:
            runs = json.loads(r.read())["runs"]
        assert runs[0]["rows"] == 13
        lock = data.dir / "results.labels.jsonl.lock"
        assert lock.read_text().strip() == str(proc.pid)
        # A second viewer on the same labels file is refused (exit 2, one line, no traceback).
        second = subprocess.run([sys.executable, "-m", "referee", "view", str(data.results), "--port", "0"],
                                capture_output=True, text=True, timeout=60)
        assert second.returncode == 2 and f"in use by pid {proc.pid}" in second.stderr
        assert "Traceback" not in second.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
        close_pipes(proc)
    assert code == 0
    assert not (data.dir / "results.labels.jsonl.lock").exists()


def test_another_host_is_warned_about(data: Data) -> None:
    proc, url, _ = _start(str(data.results), "--host", "0.0.0.0", "--port", "0")
    try:
        assert url.startswith("http://127.0.0.1:")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert proc.stderr is not None
    err = proc.stderr.read()
    close_pipes(proc)
    assert "warning: listening on 0.0.0.0" in err


def test_usage_errors_exit_2(data: Data, tmp_path: Path) -> None:
    assert cli(["view", str(tmp_path / "missing.jsonl")]) == 2
    assert cli(["view", str(data.results), "--labels", str(data.results)]) == 2
    assert cli(["view", str(data.results), str(data.results)]) == 2


def test_ipv6_loopback_is_served_too(data: Data) -> None:
    import socket

    from referee.view import ViewServer, build_app, close_app

    app = build_app([str(data.results)], lock=False)
    try:
        server = ViewServer(app, "::1", 0)
    except OSError as exc:  # no IPv6 on this machine
        close_app(app)
        import pytest

        pytest.skip(f"no IPv6 loopback here: {exc}")
    server.start_background()
    try:
        assert server.url.startswith("http://[::1]:") and server.address_family == socket.AF_INET6
        with urllib.request.urlopen(server.url + "api/runs", timeout=30) as r:
            assert json.loads(r.read())["runs"][0]["rows"] == 13
    finally:
        server.shutdown()
        server.server_close()
        close_app(app)


def test_a_second_viewer_on_the_labels_file_through_a_symlink_is_refused(data: Data) -> None:
    alias = data.dir / "alias.jsonl"
    alias.symlink_to(data.dir / "results.labels.jsonl")  # dangling until the first label: still the same file
    proc, _url, _ = _start(str(data.results), "--port", "0")
    try:
        second = subprocess.run([sys.executable, "-m", "referee", "view", str(data.results), "--labels", str(alias),
                                 "--port", "0"], capture_output=True, text=True, timeout=60)
        assert second.returncode == 2 and f"in use by pid {proc.pid}" in second.stderr, second.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        close_pipes(proc)


def test_view_opens_the_folder_referee_run_writes(tmp_path: Path) -> None:
    """`referee run` with targets writes results/ (results, outputs and manifest per target); `referee view
    results/` opens every target, the grid showing each one's own outputs."""
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": f"q{i}", "reference": "5 days"})
                                                  + "\n" for i in range(3)), encoding="utf-8")
    (tmp_path / "fh_view_bots.py").write_text("def good(case):\n    return 'Refunds take 5 days.'\n\n"
                                      "def bad(case):\n    return 'No refunds.'\n", encoding="utf-8")
    suite = tmp_path / "suite.yaml"
    suite.write_text("cases: cases.jsonl\ntargets:\n  - id: good\n    python: fh_view_bots:good\n  - id: bad\n"
                     "    python: fh_view_bots:bad\nevaluators:\n  - contains: ['5 days']\n", encoding="utf-8")
    out = tmp_path / "results"
    assert cli(["run", str(suite), "--out", str(out), "--no-gates"]) == 0
    assert (out / "good.outputs.jsonl").is_file()
    proc, url, _ = _start(str(out), "--port", "0")
    try:
        with urllib.request.urlopen(url + "api/runs", timeout=30) as r:
            names = [x["name"] for x in json.loads(r.read())["runs"]]
        assert names == ["bad.jsonl", "good.jsonl"]
        with urllib.request.urlopen(url + "api/grid", timeout=30) as r:
            grid = json.loads(r.read())
        assert grid["total"] == 3
        assert [(c["output"], c["passed"]) for c in grid["rows"][0]["cells"]] == [
            ("No refunds.", False), ("Refunds take 5 days.", True)]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        close_pipes(proc)


def test_a_port_in_use_suggests_port_0(data: Data, capsys: Any) -> None:
    taken = socket.socket()
    try:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert cli(["view", str(data.results), "--port", str(port)]) == 2
    finally:
        taken.close()
    err = capsys.readouterr().err
    assert f"cannot listen on 127.0.0.1:{port}" in err and "--port 0 picks a free port" in err


def test_reviewers_per_case_is_served_to_the_page(data: Data) -> None:
    proc, url, _ = _start(str(data.results), "--reviewers", "3", "--reviewer", "ann", "--port", "0")
    try:
        with urllib.request.urlopen(url + "api/runs", timeout=30) as r:
            index = json.loads(r.read())
        with urllib.request.urlopen(url + "api/runs/0/queue?kind=random&n=5&seed=1", timeout=30) as r:
            queue = json.loads(r.read())
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        close_pipes(proc)
    assert index["reviewers_per_case"] == 3 and index["reviewer"] == "ann"
    assert queue["reviewer"] == "ann" and queue["reviewers_per_case"] == 3  # --reviewer names the queue's reviewer


def test_reviewers_per_case_out_of_range_is_a_usage_error(data: Data) -> None:
    assert cli(["view", str(data.results), "--reviewers", "0"]) == 2
    assert cli(["view", str(data.results), "--reviewers", "21"]) == 2
