"""Running evaluated Python code so that it can never harm the machine running referee.

The child's code is the module :mod:`._sandbox_child` (run as a script). Layers, kernel-enforced first:

1. A child process with a wall-clock timeout, its own session (the whole process group is killed on timeout
   and after every run), a temporary working directory ``referee-sbx-<referee pid>-*`` that is deleted
   afterwards (and swept by the next run when referee was killed), and a minimal environment (no API keys).
2. ``unshare --net --pid --fork --kill-child --mount-proc`` when available (plus ``--user --map-root-user``
   when not root): no network, a pid namespace whose init is the code (every process it starts dies with
   it), a ``/proc`` showing only the sandbox. ``PR_SET_PDEATHSIG`` on ``unshare`` (and again on the code
   after it changes user) kills the whole tree when referee dies, ``kill -9`` included.
3. In that mount namespace: the working directory is a small tmpfs (bounding writes), every other mount is
   read-only/nosuid/nodev, a Python installation under a closed directory (``/root``) is revealed alone.
4. The unprivileged user: started as root, the code switches to ``nobody`` (setresuid; every capability,
   the bounding set and new privileges dropped): root-only files (``/etc/shadow``) stay closed and
   RLIMIT_NPROC holds (it never applies to root). Resource limits: memory, CPU seconds, processes, file
   size, no core dumps.
5. A Python audit hook (process creation, sockets, ctypes, writes outside the folder, other processes'
   ``/proc``): a tripwire that names what the code tried, not a boundary (code can disarm it through frame
   introspection; the layers above still hold).

Guarantees by what the machine allows: with namespaces and root (this project's CI), all five layers. Without
``unshare``: no pid/mount/network namespaces; as root the code still runs as ``nobody`` when the Python
installation is readable by it, else as root with only the audit hook and limits (documented degradation).
The evaluated code sees its own stdout/stderr files only; referee reads at most a few KB of each.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

_EXCERPT = 2000



@dataclass(frozen=True)
class SandboxLimits:
    timeout_s: float = 10.0
    """Wall-clock seconds before the whole process group is killed."""
    cpu_s: int = 5
    memory_mb: int = 512
    max_processes: int = 0
    """Processes the code may start besides itself (the audit hook forbids process creation regardless)."""
    file_mb: int = 16
    disk_mb: int = 64
    """All the code may write in its working directory (a tmpfs of this size when mount namespaces work)."""
    network: bool = False


@dataclass
class SandboxResult:
    status: Literal["passed", "failed", "timeout", "error"]
    """``passed``/``failed``: the code ran (and its tests passed or not); ``timeout``: killed for time;
    ``error``: the sandbox itself could not run the code (never the code's fault)."""
    reason: str
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    tests_passed: int | None = None
    tests_total: int | None = None
    forbidden: str | None = None
    isolation: dict[str, Any] = field(default_factory=dict)
    duration_s: float = 0.0
    failures: list[str] = field(default_factory=list)

    def to_details(self) -> dict[str, Any]:
        d = asdict(self)
        return {k: v for k, v in d.items() if v not in (None, "", [], {})}


_PROBE_LOCK = threading.Lock()
_PREFIX: list[str] | None = None


def _unshare_prefix() -> list[str]:
    """The ``unshare`` command line that works here (probed once), or [] when none does."""
    global _PREFIX
    with _PROBE_LOCK:
        if _PREFIX is not None:
            return _PREFIX
        _PREFIX = []
        exe = shutil.which("unshare")
        if exe and os.environ.get("REFEREE_SANDBOX_NO_UNSHARE", "") in ("", "0"):
            base = [exe, "--net", "--pid", "--fork", "--kill-child"]
            # --mount-proc: our own mount namespace (the boot makes it read-only) and a /proc that shows
            # only the sandbox's processes (no /proc/<referee's pid>/environ)
            full = [*base, "--mount-proc"]
            user = [exe, "--user", "--map-root-user"]
            tries = [full, base] if os.geteuid() == 0 else [[*user, *full[1:]], [*user, *base[1:]]]
            for cmd in tries:
                try:
                    ok = subprocess.run([*cmd, "true"], capture_output=True, timeout=5).returncode == 0
                except (OSError, subprocess.SubprocessError):
                    ok = False
                if ok:
                    _PREFIX = cmd
                    break
        return _PREFIX


CHILD = Path(__file__).with_name("_sandbox_child.py")
"""The child's code: a real module (checked by ruff and mypy), run as a script."""
NOBODY = (65534, 65534)


def _run_as() -> tuple[int, int] | None:
    """The unprivileged (uid, gid) the child switches to when referee runs as root: ``nobody``."""
    if os.geteuid() != 0:
        return None  # already unprivileged; the child keeps the user it was started as
    try:
        import pwd

        pw = pwd.getpwnam("nobody")
        return pw.pw_uid, pw.pw_gid
    except (ImportError, KeyError):
        return NOBODY


def _nproc_limit(extra: int, uid: int | None = None) -> int:
    """RLIMIT_NPROC counts all of a user's processes: allow what already runs plus ``extra``."""
    uid = os.getuid() if uid is None else uid
    if uid == 0:
        return 1 + extra  # ignored by the kernel for root; the audit hook and the pid namespace do the work
    count = 0
    try:
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                try:
                    if entry.stat().st_uid == uid:
                        count += len(os.listdir(f"/proc/{entry.name}/task"))
                except OSError:
                    continue
    except OSError:
        return 4096
    if uid != os.getuid():
        return count + 1 + extra  # the child itself, started as root then switched: no helper threads
    return count + 8 + extra  # a little slack for the interpreter's own helper threads


def _reachable_by_others(path: str) -> bool:
    cur = "/"
    for part in os.path.realpath(path).strip("/").split("/"):
        cur = os.path.join(cur, part)
        try:
            if not os.stat(cur).st_mode & 0o001:
                return False
        except OSError:
            return False
    return True


_SWEPT = False


def _sweep_stale_dirs() -> None:
    """Remove working directories left by a referee process that was killed (kill -9 runs no cleanup)."""
    global _SWEPT
    if _SWEPT:
        return
    _SWEPT = True
    try:
        entries = list(Path(tempfile.gettempdir()).glob("referee-sbx-*"))
    except OSError:
        return
    for d in entries:
        parts = d.name.split("-")
        if len(parts) < 4 or not parts[2].isdigit():
            continue
        pid = int(parts[2])
        try:
            os.kill(pid, 0)
            continue  # its referee is alive
        except ProcessLookupError:
            shutil.rmtree(d, ignore_errors=True)
        except PermissionError:
            continue


_PRCTL: list[Any] = []


def _prctl() -> Any:
    """libc's ``prctl``, looked up in the parent: the forked child must not import or take locks (other
    threads may have held them at fork time)."""
    if not _PRCTL:
        try:
            import ctypes

            _PRCTL.append(ctypes.CDLL(None).prctl)
        except Exception:  # noqa: BLE001 - no libc prctl: the process group is still killed after every run
            _PRCTL.append(None)
    return _PRCTL[0]


def _die_with_parent() -> None:
    """In the forked child before exec: SIGKILL when referee dies (even by kill -9); ``unshare --kill-child``
    passes it on to the code, the init of its pid namespace, whose death takes every process in it along."""
    prctl = _PRCTL[0] if _PRCTL else None
    if prctl is not None:
        prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG


def _tail(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - _EXCERPT))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_python(code: str, tests: str | None = None, limits: SandboxLimits | None = None, *,
               _audit: bool = True) -> SandboxResult:
    """Run ``code`` (then ``tests``: top-level asserts and/or ``test_*`` functions) in the sandbox.

    ``_audit=False`` (tests only) leaves out the audit hook to prove the other layers hold on their own.
    """
    limits = limits or SandboxLimits()
    prefix = _unshare_prefix()
    if limits.network:  # keep the pid and mount namespaces (read-only file system), share the network
        prefix = [a for a in prefix if a != "--net"]
    _sweep_stale_dirs()
    work = Path(tempfile.mkdtemp(prefix=f"referee-sbx-{os.getpid()}-"))
    nonce = secrets.token_hex(8)
    result_name = f".referee-{nonce}.json"
    run_as = _run_as()
    if run_as is not None and "--mount-proc" not in prefix and not _reachable_by_others(sys.base_prefix):
        # No mount namespace to reveal a Python installation other users cannot enter (a pyenv under /root):
        # switching to nobody would leave the code without its standard library. Degrade, and say so.
        run_as = None
    if run_as is not None:
        os.chown(work, *run_as)  # the unprivileged child must write its own folder (when no tmpfs is mounted)
    cfg: dict[str, Any] = {
        "code": code, "tests": tests, "memory_mb": limits.memory_mb, "cpu_s": limits.cpu_s,
        "file_mb": limits.file_mb, "disk_mb": limits.disk_mb,
        "nproc": _nproc_limit(limits.max_processes, run_as[0] if run_as else None),
        "network": limits.network, "net_ns": "--net" in prefix, "pid_ns": bool(prefix),
        "mount_ns": "--mount-proc" in prefix, "audit": _audit, "run_as": list(run_as) if run_as else None,
    }
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(work), "TMPDIR": str(work), "LANG": "C.UTF-8",
           "PYTHONIOENCODING": "utf-8", "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [*prefix, sys.executable, "-I", "-B", str(CHILD)]
    _prctl()  # resolved here, in the parent, for _die_with_parent
    t0 = time.perf_counter()
    out_path, err_path = work / "stdout.txt", work / "stderr.txt"
    try:
        with open(out_path, "wb") as fo, open(err_path, "wb") as fe, open(work / result_name, "wb") as fr:
            cfg["result_fd"] = fr.fileno()
            try:
                proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=fo, stderr=fe, cwd=work, env=env,
                                        start_new_session=True, close_fds=True, pass_fds=(fr.fileno(),),
                                        preexec_fn=_die_with_parent)
            except OSError as exc:
                return SandboxResult(status="error", reason=f"could not start Python: {exc}")
            timed_out = False
            try:
                assert proc.stdin is not None
                try:
                    proc.stdin.write((json.dumps(cfg) + "\n").encode("utf-8"))
                    proc.stdin.close()
                except BrokenPipeError:
                    pass
                proc.wait(timeout=limits.timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc.pid)
                proc.wait()
            finally:
                _kill_group(proc.pid)  # stragglers of the group, whatever happened
        res = _result(work / result_name, proc.returncode, timed_out, limits)
        res.stdout, res.stderr = _tail(out_path), _tail(err_path)
        if res.status == "failed" and res.reason.startswith("the code exited with status 1 before") and \
                "unshare: sigprocmask" in res.stderr:
            # unshare --fork cannot re-raise SIGKILL on itself and exits 1 instead: the kernel killed the code
            res.reason = f"killed (CPU time limit of {limits.cpu_s}s with SIGXCPU ignored, or the memory limit)"
        res.exit_code = proc.returncode
        res.duration_s = round(time.perf_counter() - t0, 3)
        res.isolation.setdefault("pid", bool(prefix))
        res.isolation["audit_hook"] = _audit
        return res
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _result(path: Path, returncode: int, timed_out: bool, limits: SandboxLimits) -> SandboxResult:
    data: dict[str, Any] | None = None
    if path.exists():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = None
    if timed_out:
        # A busy machine can reach the wall-clock limit before the CPU time limit: say which one fired.
        return SandboxResult(status="timeout", reason=f"timed out after {limits.timeout_s:g}s (killed; wall-clock "
                                                      f"limit reached before the {limits.cpu_s}s CPU time limit)")
    if data is not None:
        status = data.get("status")
        res = SandboxResult(
            status="passed" if status == "passed" else "failed", reason=str(data.get("reason", "")),
            tests_passed=data.get("tests_passed"), tests_total=data.get("tests_total"),
            forbidden=data.get("forbidden"), isolation=dict(data.get("isolation") or {}),
            failures=list(data.get("failures") or []),
        )
        if res.forbidden and res.status == "passed":
            # The code caught the PermissionError and carried on: it still tried something forbidden.
            res.status, res.reason = "failed", f"attempted {res.forbidden}"
        elif res.forbidden and "not allowed" not in res.reason:
            res.reason = f"attempted {res.forbidden}; {res.reason}"
        return res
    if returncode < 0:
        sig = -returncode
        if sig == signal.SIGXCPU:
            why = f"CPU time limit exceeded ({limits.cpu_s}s)"
        elif sig == signal.SIGKILL:
            why = f"killed (CPU time limit of {limits.cpu_s}s with SIGXCPU ignored, or the memory limit)"
        elif sig == signal.SIGSEGV:
            why = "crashed (segmentation fault; possibly the memory limit)"
        else:
            why = f"killed by signal {signal.Signals(sig).name}"
        return SandboxResult(status="failed", reason=why)
    if returncode in (137, 152) or returncode > 128:
        # unshare reports a child killed by a signal as 128+signal
        sig = returncode - 128
        if sig == signal.SIGXCPU:
            return SandboxResult(status="failed", reason=f"CPU time limit exceeded ({limits.cpu_s}s)")
        return SandboxResult(status="failed", reason=f"killed by signal {sig}")
    return SandboxResult(status="failed", reason=f"the code exited with status {returncode} before finishing "
                                                 "(os._exit or a crash)")
