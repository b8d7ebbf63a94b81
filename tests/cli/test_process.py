"""Whole-process behaviour: ``python -m referee``, Ctrl-C mid-run keeps every row written."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from referee.testing import FakeLLMServer, Reply
from tests.support.cli import close_pipes
from tests.support.judging import KEY, judge_args, make_cases, read_rows, verdict


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(OPENAI_API_KEY=KEY, REFEREE_CACHE_DIR=str(tmp / ".referee"))
    return env


def test_python_m_referee_help() -> None:
    done = subprocess.run([sys.executable, "-m", "referee", "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "judge" in done.stdout
    done = subprocess.run([sys.executable, "-m", "referee", "judge", "--help"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and "--base-url" in done.stdout and "--repeat" in done.stdout


def test_python_m_referee_testing_runs_the_server_without_warnings() -> None:
    done = subprocess.run([sys.executable, "-W", "error", "-m", "referee.testing", "--help"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and "--latency" in done.stdout and "Warning" not in done.stderr


def test_ctrl_c_keeps_rows_and_a_rerun_finishes(tmp_path: Path) -> None:
    # The server holds every request after the 8th until Ctrl-C has been sent: on a loaded machine the run
    # could otherwise finish before this process gets to send it. With 2 in flight, the 9th request is only
    # sent once at least 6 replies came back, so 4 rows are certain to appear while the rest wait.
    released = threading.Event()
    seen = itertools.count(1)

    def respond(req: object) -> Reply:
        if next(seen) > 8:
            released.wait(timeout=120)
        return Reply(text=verdict(), delay=0.05)

    with FakeLLMServer(responder=respond) as srv:
        try:
            args = judge_args(tmp_path, srv, "--concurrency", "2", cases=make_cases(40))
            proc = subprocess.Popen([sys.executable, "-m", "referee", *args], env=_env(tmp_path),
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            out = tmp_path / "results.jsonl"
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                if out.exists() and len(out.read_text().splitlines()) >= 4:
                    break
                time.sleep(0.05)
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=120)
        finally:
            released.set()
        assert proc.returncode == 130, err
        assert "interrupted" in err and "Traceback" not in err
        kept = read_rows(out)  # every line is a complete row
        assert 4 <= len(kept) < 40
        manifest = json.loads((tmp_path / "results.manifest.json").read_text())
        assert manifest["status"] == "interrupted" and manifest["totals"]["rows"] == len(kept)
        done = subprocess.run([sys.executable, "-m", "referee", *args], env=_env(tmp_path), capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        rows = read_rows(out)
        assert sorted(r["id"] for r in rows) == sorted(f"c{i}" for i in range(40))
        # Only the cases without a row are judged again (the in-flight ones may come from the cache): the
        # rerun's own count, and the server's (at most the 2 requests in flight at Ctrl-C were sent twice; a
        # held one may reach the server's log only once released, so no before/after split of that log).
        rerun = json.loads((tmp_path / "results.manifest.json").read_text())
        assert rerun["status"] == "complete" and 0 < rerun["totals"]["provider_calls"] <= 40 - len(kept)
        assert len(srv.requests) <= 40 + 2


def _limit_memory() -> None:
    import resource

    # /dev/full reads back as endless zeros: a regression that re-reads the output must fail, not eat the RAM.
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def test_out_on_a_full_device_exits_2_and_leaves_the_device_alone(tmp_path: Path) -> None:
    if not Path("/dev/full").exists():
        import pytest

        pytest.skip("no /dev/full on this system")
    with FakeLLMServer() as srv:
        args = judge_args(tmp_path, srv, cases=make_cases(2))
        i = args.index("--out")
        args[i + 1] = "/dev/full"
        done = subprocess.run([sys.executable, "-m", "referee", *args], env=_env(tmp_path), capture_output=True,
                              text=True, timeout=60, preexec_fn=_limit_memory)
    assert done.returncode == 2, done.stderr
    assert "disk full" in done.stderr and "Traceback" not in done.stderr
    assert Path("/dev/full").is_char_device()  # never moved aside as "an earlier results file"
    assert not Path("/dev/full.manifest.json").exists() and not Path("/dev/full.prev").exists()


def test_fast_benchmark_server_speaks_openai_chat_completions(tmp_path: Path) -> None:
    import urllib.error
    import urllib.request

    from referee.cli import cli

    proc = subprocess.Popen([sys.executable, "-m", "referee.testing", "--fast", "--latency", "0"],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        cases = tmp_path / "cases.jsonl"
        cases.write_text("".join(json.dumps(c) + "\n" for c in make_cases(3)), encoding="utf-8")
        tmpl = tmp_path / "t.md"
        tmpl.write_text("Grade {output}", encoding="utf-8")
        out = tmp_path / "r.jsonl"
        code = cli(["judge", str(cases), "-t", str(tmpl), "-o", str(out), "--provider", "openai",
                    "--base-url", url + "/v1", "--no-cache"])
        assert code == 0 and [r["score"] for r in read_rows(out)] == [0.8, 0.8, 0.8]
        with urllib.request.urlopen(url + "/_stats", timeout=10) as resp:  # what bench_judge.py splits runs by
            stats = json.loads(resp.read())
        assert stats["requests"] == 3 and 0 < stats["first_request_at"] <= stats["last_response_at"]
        with urllib.request.urlopen(url + "/_stats", timeout=10) as resp:  # taken: counted afresh
            assert json.loads(resp.read()) == {"requests": 0, "first_request_at": None, "last_response_at": None}
        bad = urllib.request.Request(url + "/v1/embeddings", data=b"{}", method="POST")
        try:
            urllib.request.urlopen(bad, timeout=10)
            raise AssertionError("expected a 404")
        except urllib.error.HTTPError as exc:
            assert exc.code == 404
    finally:
        proc.terminate()
        proc.wait(10)
        close_pipes(proc)


_HARD_EXIT = """
import atexit, sys
from referee.cli import _hard_exit
atexit.register(lambda: print("exit handler ran"))
print("x" * 200_000)
print("on stderr", file=sys.stderr)
_hard_exit(3)
"""


def test_the_console_scripts_hard_exit_flushes_runs_exit_handlers_and_keeps_the_code() -> None:
    done = subprocess.run([sys.executable, "-c", _HARD_EXIT], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3
    assert done.stdout == "x" * 200_000 + "\nexit handler ran\n"
    assert done.stderr == "on stderr\n"


_HARD_EXIT_PIPE = """
import sys
from referee.cli import _hard_exit
print("x", flush=True)
sys.stdin.readline()  # the reader has gone
print("more")  # buffered (a pipe's stdout, PYTHONUNBUFFERED unset): the flush at exit meets the closed pipe
_hard_exit(3)
"""


def test_the_hard_exit_with_a_closed_pipe_keeps_the_code_without_a_traceback() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    proc = subprocess.Popen([sys.executable, "-c", _HARD_EXIT_PIPE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(2) == b"x\n"
    proc.stdout.close()  # `referee ... | head -n1`
    proc.stdin.write(b"go\n")
    proc.stdin.close()
    err = proc.stderr.read().decode()
    assert proc.wait(60) == 3
    close_pipes(proc)
    assert "Traceback" not in err and "Exception ignored" not in err


def _fake_numpy(tmp: Path) -> Path:
    """A stand-in ``numpy`` that prints what OpenBLAS would read as it loads."""
    pkg = tmp / "fake" / "numpy"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "import os\nprint('at load:', os.environ.get('OPENBLAS_THREAD_TIMEOUT'), flush=True)\n")
    return tmp / "fake"


def test_the_console_script_shortens_openblas_spin_unless_the_user_set_it(tmp_path: Path) -> None:
    fake = _fake_numpy(tmp_path)
    code = ("import os, sys, referee.cli as c\n"
            "def cli():\n"
            "    import numpy\n"
            "    return 0\n"
            "c.cli = cli\n"
            "c.main()\n")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    env["PYTHONPATH"] = os.pathsep.join([str(fake), *sys.path])
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["at load: 20"]  # set before the command's first import of numpy

    env["OPENBLAS_THREAD_TIMEOUT"] = "28"  # the user's own setting wins
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines() == ["at load: 28"], done.stderr


def test_nothing_is_set_once_numpy_is_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy  # noqa: F401 - loaded: its OpenBLAS has read its settings already

    from referee.cli import shorten_blas_spin

    monkeypatch.delenv("OPENBLAS_THREAD_TIMEOUT", raising=False)
    shorten_blas_spin()
    assert "OPENBLAS_THREAD_TIMEOUT" not in os.environ
