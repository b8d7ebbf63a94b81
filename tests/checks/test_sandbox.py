"""The sandboxed ``python`` check: good code passes, hostile code fails with the reason, quickly."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from referee.cases import Case
from referee.evaluators.base import registry
from referee.evaluators.checks import extract_code
from referee.evaluators.sandbox import SandboxLimits, run_python
from referee.suites.options import OptionProblem, build_evaluator

FAST = {"timeout_s": 3.0, "cpu_s": 2, "memory_mb": 256}


def check(code: str, tests: str | None = None, **opts: object):  # type: ignore[no-untyped-def]
    e = build_evaluator(registry()["python"], {**FAST, "tests": tests, **opts})
    c = Case(id="c", data={"id": "c", "output": code})
    return e.evaluate(c, c.output)


def test_code_that_passes_its_tests() -> None:
    r = check("```python\ndef add(a, b):\n    return a + b\n```", "def test_a():\n    assert add(1, 2) == 3\n")
    assert r.status == "scored" and r.passed and r.score == 1.0


def test_partial_test_score_and_failure_reason() -> None:
    r = check("def add(a, b):\n    return a - b", "def test_zero():\n    assert add(0, 0) == 0\n"
                                                  "def test_one():\n    assert add(1, 1) == 2\n")
    assert not r.passed and r.score == 0.5 and "test_one" in r.reason


def test_syntax_error_and_exception_fail() -> None:
    assert not check("def broken(:").passed
    r = check("raise ValueError('boom')")
    assert not r.passed and "boom" in r.reason


def test_hang_is_stopped_by_the_cpu_limit() -> None:
    r = check("while True:\n    pass")
    assert r.status == "scored" and not r.passed and "CPU time" in r.reason


def test_sleeping_forever_is_killed_at_the_timeout() -> None:
    r = check("import time\ntime.sleep(60)", timeout_s=1.0)
    assert not r.passed and "timed out" in r.reason


def test_fork_bomb_is_refused() -> None:
    r = check("import os\nwhile True:\n    os.fork()")
    assert not r.passed and "os.fork" in r.reason
    r = check("import subprocess\nsubprocess.run(['true'])")
    assert not r.passed and "subprocess" in r.reason


def test_low_level_process_creation_is_refused_too() -> None:
    """_posixsubprocess.fork_exec has no audit event of its own; it is disarmed, and fresh copies refused."""
    r = check("import _posixsubprocess\n_posixsubprocess.fork_exec()")
    assert not r.passed and "fork_exec" in r.reason
    r = check("import sys\ndel sys.modules['_posixsubprocess']\nimport _posixsubprocess")
    assert not r.passed and "importing _posixsubprocess" in r.reason
    assert not check("import ctypes").passed
    assert check("import subprocess\nprint(subprocess.list2cmdline(['a', 'b']))").passed  # importing is fine


def test_swallowed_forbidden_event_still_fails() -> None:
    r = check("import os\ntry:\n    os.fork()\nexcept Exception:\n    pass\nprint('carried on')")
    assert not r.passed and "attempted" in r.reason


def test_unbounded_allocation_hits_the_memory_cap() -> None:
    r = check("chunks = []\nwhile True:\n    chunks.append(bytearray(10**7))")
    assert not r.passed and "memory" in r.reason


def test_network_is_refused() -> None:
    r = check("import socket\nsocket.create_connection(('127.0.0.1', 9), timeout=1)")
    assert not r.passed and "network" in r.reason


def test_no_network_even_without_the_audit_hook() -> None:
    """The namespace layer alone: a server on this machine's loopback cannot be reached."""
    prefix_ok = os.path.exists("/usr/bin/unshare") or os.path.exists("/bin/unshare")
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    port = srv.getsockname()[1]
    try:
        res = run_python(f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)\n",
                         None, SandboxLimits(timeout_s=5), _audit=False)
    finally:
        srv.close()
    if res.isolation.get("net") != "namespace":
        pytest.skip(f"no network namespace available here (unshare present: {prefix_ok})")
    assert res.status == "failed"
    assert "unreachable" in res.reason.lower() or "refused" in res.reason.lower()


def test_writes_outside_the_work_dir_are_refused(tmp_path: Path) -> None:
    target = tmp_path / "pwned.txt"
    r = check(f"open({str(target)!r}, 'w').write('x')")
    assert not r.passed and "outside the working directory" in r.reason
    assert not target.exists()
    assert check("open('scratch.txt', 'w').write('ok')\nassert open('scratch.txt').read() == 'ok'").passed


def test_secrets_are_not_passed_to_the_child(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret")
    r = check("import os\nassert 'OPENAI_API_KEY' not in os.environ, 'leaked'")
    assert r.passed


def test_tests_from_a_case_field() -> None:
    e = build_evaluator(registry()["python"], {**FAST, "tests_field": "tests"})
    c = Case(id="c", data={"id": "c", "output": "x = 2", "tests": "assert x == 2"})
    assert e.evaluate(c, c.output).passed
    c2 = Case(id="c", data={"id": "c", "output": "x = 2"})
    assert e.evaluate(c2, c2.output).status == "error"


def test_bad_options_are_config_errors() -> None:
    with pytest.raises(OptionProblem, match="tests"):
        build_evaluator(registry()["python"], {"tests": "def ("})
    with pytest.raises(OptionProblem, match="memory_mb"):
        build_evaluator(registry()["python"], {"memory_mb": 1})


def test_extract_code() -> None:
    assert extract_code("Here:\n```python\nx = 1\n```\nand\n```py\ny = 2\n```") == "x = 1\n\ny = 2"
    assert extract_code("x = 1") == "x = 1"
