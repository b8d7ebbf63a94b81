"""Running evaluated Python code so that it can never harm the machine running referee.

Layers (each one alone stops the common hostile outputs; together they are defence in depth):

1. A child process with a wall-clock timeout, its own session (the whole process group is killed on timeout
   and after every run, so stragglers die too), a temporary working directory that is deleted afterwards,
   and a minimal environment (API keys and other secrets are never passed on).
2. ``unshare --net --pid --fork --kill-child --mount-proc`` when available (plus ``--user --map-root-user``
   when not root): no network interfaces but a downed loopback, every process the code starts dies with
   it, and a ``/proc`` showing only the sandbox's processes (not referee's environment). Without
   ``unshare`` the child tries ``unshare(CLONE_NEWNET)`` itself.
3. In that mount namespace the boot code makes the working directory a small tmpfs (bounding all writes),
   remounts everything else read-only/nosuid/nodev and drops every capability, before the code runs:
   writes outside the directory are refused by the kernel, whatever Python tricks the code plays.
4. Resource limits set in the child before the code runs: address space (memory), CPU seconds, process
   count (against fork bombs; the kernel ignores it for root, hence layer 5), file size, core dumps off.
5. A Python audit hook installed before the code runs: process creation (fork, exec, spawn, subprocess,
   system), signals, raising limits, sockets, ctypes/cffi, writes outside the working directory and reading
   other processes' ``/proc`` entries raise ``PermissionError``; the first such event is reported even if
   the code swallows the exception. It is the only file-system guard where layer 3 is unavailable, and is
   not a boundary against code written to defeat Python introspection.

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

_BOOT = r'''
import json, os, sys
cfg = json.loads(sys.stdin.readline())
sys.stdin.close()
iso = {"net": "host" if cfg["network"] else "none", "pid": cfg["pid_ns"], "fs": "audit hook only"}
# The verdict goes to a file the parent opened on its own mount (so no writer keeps ours from turning read-only)
RESULT_FILE = os.fdopen(cfg["result_fd"], "w", encoding="utf-8")
if cfg["mount_ns"]:
    # Kernel-enforced: in our own mount namespace (with a fresh /proc that shows only our pid namespace),
    # every mount but the working directory becomes read-only, nosuid and nodev, then every capability is
    # dropped for good, so the code can neither write outside its directory (renames, links, dir_fd tricks,
    # devices included) nor undo the mounts or raise its limits again.
    import ctypes, re
    libc = ctypes.CDLL(None, use_errno=True)
    work = os.path.realpath(os.getcwd())
    # The working directory becomes a small tmpfs: its size bounds what the code can write in all.
    opts = "size=" + str(cfg["disk_mb"]) + "m,mode=0700"
    ro_ok = libc.mount(b"tmpfs", work.encode(), b"tmpfs", 2 | 4, opts.encode()) == 0  # MS_NOSUID | MS_NODEV
    if ro_ok:
        iso["disk_mb"] = cfg["disk_mb"]
    else:
        ro_ok = libc.mount(work.encode(), work.encode(), None, 4096, None) == 0  # MS_BIND: writable, unbounded
    os.chdir(work)  # the old cwd still points into the parent mount, which is about to turn read-only
    mounts = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            parts = line.split()
            mp = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), parts[4])
            mounts.append((mp, parts[5].split(",")))
    keep = {"noexec": 8, "noatime": 1024, "nodiratime": 2048, "relatime": 1 << 21}
    for mp, opts in reversed(mounts):
        if mp == work or not ro_ok:
            continue
        flags = 32 | 4096 | 1 | 2 | 4  # MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV
        for name, bit in keep.items():
            if name in opts:
                flags |= bit
        if libc.mount(None, mp.encode("utf-8", "surrogateescape"), None, flags, None) != 0 and mp == "/":
            ro_ok = False
    PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP = 38, 24
    for cap in range(64):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    hdr = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable x 2: all empty
    caps_ok = libc.capset(hdr, data) == 0
    libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    if ro_ok:
        iso["fs"] = "read-only outside the working directory"
    iso["capabilities"] = "none" if caps_ok else "kept"
    del libc, ctypes
if cfg["net_ns"]:
    iso["net"] = "namespace"
elif not cfg["network"]:
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        flags = 0x40000000 if os.geteuid() == 0 else (0x40000000 | 0x10000000)
        if libc.unshare(flags) == 0:
            iso["net"] = "namespace"
    except Exception:
        pass
for _m in [m for m in sys.modules if m.split(".")[0] in ("ctypes", "_ctypes")]:
    del sys.modules[_m]  # used above; the code must import it afresh, which the audit hook refuses
import resource, signal
def _lim(which, value):
    try:
        resource.setrlimit(which, (value, value))
    except (ValueError, OSError):
        pass
mb = 1024 * 1024
_lim(resource.RLIMIT_AS, cfg["memory_mb"] * mb)
try:
    resource.setrlimit(resource.RLIMIT_CPU, (cfg["cpu_s"], cfg["cpu_s"] + 1))  # SIGXCPU first, then SIGKILL
except (ValueError, OSError):
    pass
_lim(resource.RLIMIT_FSIZE, cfg["file_mb"] * mb)
_lim(resource.RLIMIT_CORE, 0)
_lim(resource.RLIMIT_NOFILE, 256)
_lim(resource.RLIMIT_NPROC, cfg["nproc"])
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an oversized write fails with an error instead of a kill
import traceback, types
WORK = os.path.realpath(os.getcwd())
forbidden = []
PROC = {"os.fork", "os.forkpty", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "subprocess.Popen",
        "os.kill", "os.killpg", "os.setuid", "os.setgid", "pty.spawn", "os.startfile", "resource.setrlimit",
        "resource.prlimit"}
NET = {"socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg", "socket.getaddrinfo",
       "socket.gethostbyname", "socket.gethostbyaddr", "socket.__new__", "urllib.Request", "http.client.connect"}
LOW = {"ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata", "ctypes.call_function", "sys.setprofile"}
BAD_IMPORTS = {"ctypes", "_ctypes", "cffi", "_cffi_backend", "_posixsubprocess"}
# event -> (how many leading path arguments, positions of dir_fd arguments); an int path is an fd (f* calls)
FS = {"os.remove": (1, (1,)), "os.rmdir": (1, (1,)), "os.rename": (2, (2, 3)), "os.chmod": (1, (2,)),
      "os.chown": (1, (3,)), "os.truncate": (1, ()), "os.symlink": (2, (2,)), "os.link": (2, (2, 3)),
      "os.mkdir": (1, (2,)), "os.utime": (1, (3,)), "os.setxattr": (1, ()), "os.removexattr": (1, ()),
      "os.chflags": (1, ()), "os.lchflags": (1, ()), "shutil.rmtree": (1, (1,)), "shutil.copyfile": (2, ()),
      "shutil.move": (2, ())}
try:
    OWN_PROC = "/proc/" + os.readlink("/proc/self")  # our pid as the mounted /proc numbers it
except OSError:
    OWN_PROC = "/proc/self"
def _other_process(path):
    try:
        p = os.path.realpath(os.fsdecode(path))
    except Exception:
        return True
    parts = p.split(os.sep)
    return len(parts) > 2 and parts[1] == "proc" and parts[2].isdigit() and not (p + os.sep).startswith(OWN_PROC + os.sep)
def _inside(path):
    if path is None:
        return True
    try:
        p = os.path.realpath(os.fsdecode(path))
    except Exception:
        return False
    return p == WORK or p.startswith(WORK + os.sep)
def _deny(event, why):
    if not forbidden:
        forbidden.append(why)
    raise PermissionError("referee sandbox: " + why + " is not allowed")
def hook(event, args):
    if event in PROC:
        _deny(event, "starting or signalling processes (" + event + ")")
    if event in NET and not cfg["network"]:
        _deny(event, "network access (" + event + ")")
    if event in LOW:
        _deny(event, "low-level native access (" + event + ")")
    if event == "import" and args and args[0] in BAD_IMPORTS:
        _deny(event, "importing " + str(args[0]))
    if event == "open" and len(args) >= 2 and not isinstance(args[0], int) and args[0] is not None:
        mode, flags = args[1], (args[2] if len(args) > 2 else 0) or 0
        # O_TRUNC truncates even with O_RDONLY on Linux; a directory fd outside would let dir_fd= reach it
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC))
        if writing and not _inside(args[0]):
            _deny(event, "writing outside the working directory (" + str(args[0])[:80] + ")")
        if _other_process(args[0]):
            # without a pid namespace of our own, /proc/<referee's pid>/environ would hold its API keys
            _deny(event, "reading another process (" + str(args[0])[:80] + ")")
        if not writing and os.path.isdir(args[0]) and not _inside(args[0]):
            _deny(event, "opening a directory outside the working directory (" + str(args[0])[:80] + ")")
    if event in FS:
        # every path argument counts (rename/link/symlink targets too); dir_fd-relative calls are refused
        npaths, fds = FS[event]
        paths = list(args[:npaths])
        dir_fd = [args[i] for i in fds if i < len(args) and args[i] not in (None, -1, -100)]
        # an fd path: ftruncate needs a writable fd (which open already vetted); fchmod & co. do not
        fd_ok = event == "os.truncate"
        if dir_fd or any((not fd_ok) if isinstance(a, int) else not _inside(a) for a in paths):
            _deny(event, "changing files outside the working directory (" + event + ")")
def finish(status, reason, **extra):
    out = {"status": status, "reason": reason, "forbidden": forbidden[0] if forbidden else None, "isolation": iso}
    out.update(extra)
    RESULT_FILE.write(json.dumps(out))
    RESULT_FILE.close()
    sys.stdout.flush(); sys.stderr.flush()
    os._exit(0)
SOURCES = {"solution.py": cfg["code"], "tests.py": cfg["tests"] or ""}
def short_tb(exc):
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    where = ""
    for fr in traceback.extract_tb(exc.__traceback__):
        if fr.filename in SOURCES and fr.lineno:
            src = SOURCES[fr.filename].splitlines()
            line = src[fr.lineno - 1].strip() if fr.lineno <= len(src) else ""
            where = " (" + fr.filename + ":" + str(fr.lineno) + (": " + line[:120] if line else "") + ")"
    return (text + where)[-500:]
def on_xcpu(signum, frame):
    finish("failed", "CPU time limit exceeded (" + str(cfg["cpu_s"]) + "s)")
signal.signal(signal.SIGXCPU, on_xcpu)
code, tests = cfg["code"], cfg["tests"]
if cfg["audit"]:
    # _posixsubprocess.fork_exec starts processes without an audit event: load it now (so importing
    # subprocess still works), disarm it, and refuse any fresh import of it.
    import subprocess, _posixsubprocess, _imp
    def _no_fork_exec(*args, **kwargs):
        _deny("_posixsubprocess.fork_exec", "starting or signalling processes (_posixsubprocess.fork_exec)")
    _posixsubprocess.fork_exec = _no_fork_exec
    subprocess._fork_exec = _no_fork_exec  # subprocess keeps its own reference to the original
    def _guard(create):
        def guarded(spec, *rest):
            if str(getattr(spec, "name", "")).rpartition(".")[2] in BAD_IMPORTS:
                _deny("import", "importing " + str(spec.name))
            return create(spec, *rest)
        return guarded
    def _no_node(*args, **kwargs):
        _deny("os.mkfifo", "creating special files (os.mkfifo/os.mknod)")
    import posix
    for _mod in (os, posix):  # no audit event exists for these
        _mod.mkfifo = _mod.mknod = _no_node
    _imp.create_builtin = _guard(_imp.create_builtin)
    _imp.create_dynamic = _guard(_imp.create_dynamic)
    sys.addaudithook(hook)
ns = {"__name__": "__main__", "__builtins__": __builtins__}
try:
    exec(compile(code, "solution.py", "exec"), ns)
except SystemExit as exc:
    if exc.code not in (None, 0):
        finish("failed", "the code exited with status " + str(exc.code))
except MemoryError:
    finish("failed", "memory limit exceeded (" + str(cfg["memory_mb"]) + " MB)")
except BaseException as exc:
    finish("failed", "the code raised " + short_tb(exc))
if tests is None:
    finish("passed", "ran without error", tests_passed=None, tests_total=None)
before = set(ns)
try:
    exec(compile(tests, "tests.py", "exec"), ns)
except MemoryError:
    finish("failed", "memory limit exceeded (" + str(cfg["memory_mb"]) + " MB)", tests_passed=0, tests_total=1)
except BaseException as exc:
    finish("failed", "tests failed: " + short_tb(exc), tests_passed=0, tests_total=1)
fns = [ns[k] for k in ns if k.startswith("test") and k not in before and isinstance(ns[k], types.FunctionType)]
if not fns:
    finish("passed", "tests passed", tests_passed=1, tests_total=1)
passed, failures = 0, []
for fn in fns:
    try:
        fn()
        passed += 1
    except MemoryError:
        failures.append(fn.__name__ + ": memory limit exceeded")
    except BaseException as exc:
        failures.append(fn.__name__ + ": " + short_tb(exc))
status = "passed" if passed == len(fns) else "failed"
reason = str(passed) + "/" + str(len(fns)) + " tests passed" + ("; " + failures[0] if failures else "")
finish(status, reason, tests_passed=passed, tests_total=len(fns), failures=failures[:5])
'''


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


def _nproc_limit(extra: int) -> int:
    """RLIMIT_NPROC counts all the user's processes: allow what already runs plus ``extra``."""
    if os.geteuid() == 0:
        return 1 + extra  # ignored by the kernel for root; the audit hook and the pid namespace do the work
    uid = os.getuid()
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
    return count + 8 + extra  # a little slack for the interpreter's own helper threads


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
    work = Path(tempfile.mkdtemp(prefix="referee-sbx-"))
    nonce = secrets.token_hex(8)
    result_name = f".referee-{nonce}.json"
    cfg: dict[str, Any] = {
        "code": code, "tests": tests, "memory_mb": limits.memory_mb, "cpu_s": limits.cpu_s,
        "file_mb": limits.file_mb, "disk_mb": limits.disk_mb, "nproc": _nproc_limit(limits.max_processes),
        "network": limits.network, "net_ns": "--net" in prefix, "pid_ns": bool(prefix),
        "mount_ns": "--mount-proc" in prefix, "audit": _audit,
    }
    boot = work / f".boot-{nonce}.py"
    boot.write_text(_BOOT, encoding="utf-8")
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(work), "TMPDIR": str(work), "LANG": "C.UTF-8",
           "PYTHONIOENCODING": "utf-8", "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [*prefix, sys.executable, "-I", "-B", str(boot)]
    t0 = time.perf_counter()
    out_path, err_path = work / "stdout.txt", work / "stderr.txt"
    try:
        with open(out_path, "wb") as fo, open(err_path, "wb") as fe, open(work / result_name, "wb") as fr:
            cfg["result_fd"] = fr.fileno()
            try:
                proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=fo, stderr=fe, cwd=work, env=env,
                                        start_new_session=True, close_fds=True, pass_fds=(fr.fileno(),))
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
