"""The sandboxed ``python`` check: good code passes, hostile code fails with the reason, quickly."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from referee.cases._case import Case
from referee.errors import OptionError
from referee.evaluators._base import registry
from referee.evaluators._options import build_evaluator
from referee.evaluators._sandbox import SandboxLimits, run_python
from referee.evaluators.checks import extract_code

pytestmark = pytest.mark.slow  # subprocesses: `pytest -m 'not slow'` skips them in a quick loop

# A wall timeout far above the CPU limit: on a busy machine a slow start must not look like a timeout (the tests
# of the timeout itself set their own).
FAST = {"timeout_s": 60.0, "cpu_s": 2, "memory_mb": 256}


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
    r = check("while True:\n    pass", cpu_s=1, timeout_s=30.0)  # wall time generous: the machine may be busy
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
    with pytest.raises(OptionError, match="tests"):
        build_evaluator(registry()["python"], {"tests": "def ("})
    with pytest.raises(OptionError, match="memory_mb"):
        build_evaluator(registry()["python"], {"memory_mb": 1})


def test_extract_code() -> None:
    assert extract_code("Here:\n```python\nx = 1\n```\nand\n```py\ny = 2\n```") == "x = 1\n\ny = 2"
    assert extract_code("x = 1") == "x = 1"


# --- escapes found in review: each must fail, and leave the machine untouched ---------------------------------


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim.txt"
    path.write_text("canary")
    return path


ESCAPES = {
    "rename over": "open('x', 'w').write('pwned')\nimport os\nos.replace('x', {v!r})",
    "hard link out": "open('y', 'w').write('z')\nimport os\nos.link('y', {d!r} + '/pwn_link')",
    "symlink out": "import os\nos.symlink('anything', {d!r} + '/pwn_symlink')",
    "O_TRUNC read-only": "import os\nos.open({v!r}, os.O_RDONLY | os.O_TRUNC)",
    "dir_fd": "import os\nd = os.open({d!r}, os.O_RDONLY)\nos.remove('victim.txt', dir_fd=d)",
    "fd chmod": "import os\nf = os.open({v!r}, os.O_RDONLY)\nos.chmod(f, 0o777)",
    "mkfifo": "import os\nos.mkfifo({d!r} + '/pwn_fifo')",
}


@pytest.mark.parametrize("audit", [True, False], ids=["all-layers", "kernel-only"])
@pytest.mark.parametrize("name", list(ESCAPES))
def test_file_escapes_fail_and_change_nothing(name: str, audit: bool, victim: Path) -> None:
    code = ESCAPES[name].format(v=str(victim), d=str(victim.parent))
    mode = victim.stat().st_mode
    res = run_python(code, None, SandboxLimits(timeout_s=5), _audit=audit)
    if not audit and res.isolation.get("fs") != "read-only outside the working directory":
        pytest.skip("no mount namespace here: the audit hook is the only file-system layer")
    if audit or name != "fd chmod":  # a read-only mount still lets fchmod through; only the hook stops it
        assert res.status == "failed", res
        assert victim.read_text() == "canary" and victim.stat().st_mode == mode
        assert sorted(p.name for p in victim.parent.iterdir()) == ["victim.txt"]


def test_work_dir_stays_writable_for_ordinary_code() -> None:
    r = check("import os\nos.mkdir('d')\nopen('d/a', 'w').write('1')\nos.rename('d/a', 'd/b')\n"
              "os.symlink('d/b', 'c')\nassert open('c').read() == '1'\nos.remove('c')\n"
              "with open('t', 'w') as f:\n    f.write('abc')\n    f.truncate(1)\n")
    assert r.passed, r.reason


def test_the_parent_environment_cannot_be_read_through_proc(monkeypatch: pytest.MonkeyPatch) -> None:
    """API keys live in referee's environment; /proc/<pid>/environ must not hand them to the code."""
    import subprocess
    import sys

    from referee.evaluators import _sandbox as sandbox

    marker = "sk-review-" + os.urandom(6).hex()
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                              env={**os.environ, "OPENAI_API_KEY": marker})
    scan = ("import glob\nfor p in glob.glob('/proc/[0-9]*/environ'):\n    try:\n"
            "        print(open(p, 'rb').read().decode('latin-1'))\n    except Exception:\n        pass\n")
    try:
        res = run_python(scan, None, SandboxLimits(timeout_s=5))
        assert marker not in res.stdout + res.stderr
        monkeypatch.setattr(sandbox, "_PREFIX", [])  # no namespaces: the audit hook alone must refuse it
        res = run_python(scan, None, SandboxLimits(timeout_s=5))
        assert marker not in res.stdout + res.stderr
        assert res.status == "failed" and "another process" in res.reason
    finally:
        holder.kill()
        holder.wait()


def test_limits_cannot_be_raised_again() -> None:
    r = check("import resource\nresource.setrlimit(resource.RLIMIT_AS, (-1, -1))\nx = bytearray(2 * 1024**3)")
    assert not r.passed and "setrlimit" in r.reason


def test_subprocess_private_fork_exec_is_disarmed() -> None:
    r = check("import subprocess\nsubprocess._fork_exec(*([None] * 23))")
    assert not r.passed and "fork_exec" in r.reason


def test_ignoring_sigxcpu_still_stops_the_code() -> None:
    r = check("import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True:\n    pass",
              cpu_s=1, timeout_s=8.0)
    assert r.status == "scored" and not r.passed
    assert "CPU time" in r.reason or "timed out" in r.reason


def test_huge_output_is_bounded_and_recursion_fails_cleanly() -> None:
    r = check("import sys\nwhile True:\n    sys.stdout.write('x' * 65536)")
    assert not r.passed and len(r.details.get("stdout", "")) <= 2000
    r = check("def f():\n    return f()\nf()")
    assert not r.passed and "RecursionError" in r.reason


def test_network_true_keeps_the_read_only_file_system(victim: Path) -> None:
    res = run_python(f"open({str(victim)!r}, 'w').write('pwned')", None,
                     SandboxLimits(timeout_s=5, network=True), _audit=False)
    if res.isolation.get("fs") != "read-only outside the working directory":
        pytest.skip("no mount namespace here")
    assert res.isolation.get("net") == "host"
    assert res.status == "failed" and ("Read-only file system" in res.reason or "Permission denied" in res.reason)
    assert victim.read_text() == "canary"


def test_all_the_code_writes_is_bounded() -> None:
    """Many files of legal size each: the working directory's own size limit stops them (when it has one)."""
    res = run_python("i = 0\nwhile True:\n    open(f'f{i}', 'wb').write(b'x' * 10**7)\n    i += 1", None,
                     SandboxLimits(timeout_s=10, disk_mb=32))
    if "disk_mb" not in res.isolation:
        pytest.skip("no mount namespace here: only each file's size is bounded")
    assert res.status == "failed" and "No space left on device" in res.reason
