"""The sandbox's child: run as a script (``python -I -B _sandbox_child.py``) by :mod:`.sandbox`, never imported
by referee itself. It reads its configuration as one JSON line on stdin, locks itself down, runs the evaluated
code and its tests, and writes the verdict to a file descriptor the parent opened.

Order matters: kernel-enforced layers first (mounts, capabilities, the unprivileged user, resource limits),
the audit hook last. The audit hook is a tripwire that names what the code tried; it is not the boundary:
code that defeats Python introspection (``sys._getframe(...).f_globals``) only reaches the kernel layers.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import traceback
import types
from typing import Any, NoReturn

cfg: dict[str, Any] = {}
iso: dict[str, Any] = {}
forbidden: list[str] = []
WORK = ""
OWN_PROC = "/proc/self"
SOURCES: dict[str, str] = {}
_result_file: Any = None

PROC = {"os.fork", "os.forkpty", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "subprocess.Popen",
        "os.kill", "os.killpg", "os.setuid", "os.setgid", "pty.spawn", "os.startfile", "resource.setrlimit",
        "resource.prlimit"}
NET = {"socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg", "socket.getaddrinfo",
       "socket.gethostbyname", "socket.gethostbyaddr", "socket.__new__", "urllib.Request", "http.client.connect"}
LOW = {"ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata", "ctypes.call_function", "sys.setprofile"}
BAD_IMPORTS = {"ctypes", "_ctypes", "cffi", "_cffi_backend", "_posixsubprocess"}
# event -> (how many leading path arguments, positions of dir_fd arguments); an int path is an fd (f* calls)
FS: dict[str, tuple[int, tuple[int, ...]]] = {
    "os.remove": (1, (1,)), "os.rmdir": (1, (1,)), "os.rename": (2, (2, 3)), "os.chmod": (1, (2,)),
    "os.chown": (1, (3,)), "os.truncate": (1, ()), "os.symlink": (2, (2,)), "os.link": (2, (2, 3)),
    "os.mkdir": (1, (2,)), "os.utime": (1, (3,)), "os.setxattr": (1, ()), "os.removexattr": (1, ()),
    "os.chflags": (1, ()), "os.lchflags": (1, ()), "shutil.rmtree": (1, (1,)), "shutil.copyfile": (2, ()),
    "shutil.move": (2, ())}
MS_NOSUID, MS_NODEV, MS_RDONLY, MS_REMOUNT, MS_BIND = 2, 4, 1, 32, 4096
PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP, PR_SET_PDEATHSIG = 38, 24, 1


def lock_mounts() -> None:
    """In our own mount namespace (with a /proc showing only our pid namespace): the working directory becomes
    a small tmpfs owned by the unprivileged user, every other mount read-only, nosuid and nodev."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    work = os.path.realpath(os.getcwd())
    uid, gid = cfg["run_as"] if cfg["run_as"] else (0, 0)
    opts = f"size={cfg['disk_mb']}m,mode=0700,uid={uid},gid={gid}"
    ok = libc.mount(b"tmpfs", work.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, opts.encode()) == 0
    if ok:
        iso["disk_mb"] = cfg["disk_mb"]
    else:
        ok = libc.mount(work.encode(), work.encode(), None, MS_BIND, None) == 0  # writable, unbounded
    os.chdir(work)  # the old cwd still points into the parent mount, which is about to turn read-only
    if cfg["run_as"]:
        reveal_python(libc, work)
    mounts = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            parts = line.split()
            mp = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), parts[4])
            mounts.append((mp, parts[5].split(",")))
    keep = {"noexec": 8, "noatime": 1024, "nodiratime": 2048, "relatime": 1 << 21}
    for mp, mopts in reversed(mounts):
        if mp == work or not ok:
            continue
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV
        for name, bit in keep.items():
            if name in mopts:
                flags |= bit
        if libc.mount(None, mp.encode("utf-8", "surrogateescape"), None, flags, None) != 0 and mp == "/":
            ok = False
    if ok:
        iso["fs"] = "read-only outside the working directory"


def _closed_ancestor(path: str) -> str | None:
    """The first directory on the way to ``path`` that other users cannot enter (``/root`` is 0700)."""
    cur = "/"
    for part in path.strip("/").split("/"):
        cur = os.path.join(cur, part)
        try:
            if not os.stat(cur).st_mode & 0o001:
                return cur
        except OSError:
            return None
    return None


def reveal_python(libc: Any, work: str) -> None:
    """Make the Python installation reachable by the unprivileged user, in this mount namespace only: a
    closed ancestor (``/root`` of a pyenv install) is covered by an empty tmpfs, and the installation is
    bind-mounted back at its own path. Everything else in that ancestor is hidden from the code."""
    needed = sorted({os.path.realpath(p) for p in (sys.base_prefix, sys.prefix, sys.exec_prefix)})
    by_ancestor: dict[str, list[str]] = {}
    for p in needed:
        a = _closed_ancestor(p)
        if a is not None and a != p:
            by_ancestor.setdefault(a, []).append(p)
    for ancestor, paths in by_ancestor.items():
        stashes = []
        for i, p in enumerate(paths):
            stash = os.path.join(work, f".python-{i}")
            os.mkdir(stash, 0o700)
            if libc.mount(p.encode(), stash.encode(), None, MS_BIND | 16384, None) != 0:  # MS_REC
                return
            stashes.append((stash, p))
        if libc.mount(b"tmpfs", ancestor.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=0755") != 0:
            return
        for stash, p in stashes:
            os.makedirs(p, exist_ok=True)
            libc.mount(stash.encode(), p.encode(), None, MS_BIND | 16384, None)
            libc.umount2(stash.encode(), 2)  # MNT_DETACH
            os.rmdir(stash)
        iso["python"] = f"installation revealed under a hidden {ancestor}"


def drop_privileges() -> None:
    """No capabilities, no new privileges, and (when started as root) the unprivileged user for good: whatever
    the code does to Python, the kernel sees ``nobody`` (RLIMIT_NPROC applies, root-only files stay closed)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for cap in range(64):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    if cfg["run_as"] and os.geteuid() == 0:
        uid, gid = cfg["run_as"]
        try:
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)  # from uid 0 to another: every capability is gone too
        except OSError as exc:
            iso["user"] = f"kept (setuid failed: {exc})"
        # A change of credentials clears the parent-death signal ``unshare --kill-child`` set: set it again, so
        # the code (the init of its pid namespace, taking every process in it along) dies with referee.
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    iso["uid"] = os.getuid()
    if os.getuid() != 0 or os.geteuid() != 0:
        iso["user"] = "unprivileged"
    hdr = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable x 2: all empty
    iso["capabilities"] = "none" if libc.capset(hdr, data) == 0 else "kept"
    libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)


def own_network_namespace() -> None:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        flags = 0x40000000 if os.geteuid() == 0 else (0x40000000 | 0x10000000)  # CLONE_NEWNET (| CLONE_NEWUSER)
        if libc.unshare(flags) == 0:
            iso["net"] = "namespace"
    except Exception:  # noqa: BLE001 - best effort; the audit hook still refuses sockets
        pass


def set_limits() -> None:
    import resource

    def lim(which: int, value: int) -> None:
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):
            pass

    mb = 1024 * 1024
    lim(resource.RLIMIT_AS, cfg["memory_mb"] * mb)
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (cfg["cpu_s"], cfg["cpu_s"] + 1))  # SIGXCPU first, then SIGKILL
    except (ValueError, OSError):
        pass
    lim(resource.RLIMIT_FSIZE, cfg["file_mb"] * mb)
    lim(resource.RLIMIT_CORE, 0)
    lim(resource.RLIMIT_NOFILE, 256)
    lim(resource.RLIMIT_NPROC, cfg["nproc"])
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an oversized write fails with an error instead of a kill


def _other_process(path: Any) -> bool:
    try:
        p = os.path.realpath(os.fsdecode(path))
    except Exception:  # noqa: BLE001
        return True
    parts = p.split(os.sep)
    return (len(parts) > 2 and parts[1] == "proc" and parts[2].isdigit()
            and not (p + os.sep).startswith(OWN_PROC + os.sep))


def _inside(path: Any) -> bool:
    if path is None:
        return True
    try:
        p = os.path.realpath(os.fsdecode(path))
    except Exception:  # noqa: BLE001
        return False
    return p == WORK or p.startswith(WORK + os.sep)


def _deny(event: str, why: str) -> NoReturn:
    if not forbidden:
        forbidden.append(why)
    raise PermissionError("referee sandbox: " + why + " is not allowed")


def hook(event: str, args: tuple[Any, ...]) -> None:
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


def finish(status: str, reason: str, **extra: Any) -> NoReturn:
    out = {"status": status, "reason": reason, "forbidden": forbidden[0] if forbidden else None, "isolation": iso}
    out.update(extra)
    _result_file.write(json.dumps(out))
    _result_file.close()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def short_tb(exc: BaseException) -> str:
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    where = ""
    for fr in traceback.extract_tb(exc.__traceback__):
        if fr.filename in SOURCES and fr.lineno:
            src = SOURCES[fr.filename].splitlines()
            line = src[fr.lineno - 1].strip() if fr.lineno <= len(src) else ""
            where = " (" + fr.filename + ":" + str(fr.lineno) + (": " + line[:120] if line else "") + ")"
    return (text + where)[-500:]


def on_xcpu(signum: int, frame: Any) -> None:
    finish("failed", "CPU time limit exceeded (" + str(cfg["cpu_s"]) + "s)")


def arm_audit_hook() -> None:
    # _posixsubprocess.fork_exec starts processes without an audit event: load it now (so importing
    # subprocess still works), disarm it, and refuse any fresh import of it.
    import _imp
    import _posixsubprocess
    import posix
    import subprocess

    def no_fork_exec(*args: Any, **kwargs: Any) -> NoReturn:
        _deny("_posixsubprocess.fork_exec", "starting or signalling processes (_posixsubprocess.fork_exec)")

    _posixsubprocess.fork_exec = no_fork_exec
    subprocess._fork_exec = no_fork_exec  # type: ignore[attr-defined]  # subprocess keeps its own reference

    def guard(create: Any) -> Any:
        def guarded(spec: Any, *rest: Any) -> Any:
            if str(getattr(spec, "name", "")).rpartition(".")[2] in BAD_IMPORTS:
                _deny("import", "importing " + str(spec.name))
            return create(spec, *rest)
        return guarded

    def no_node(*args: Any, **kwargs: Any) -> NoReturn:
        _deny("os.mkfifo", "creating special files (os.mkfifo/os.mknod)")

    for mod in (os, posix):  # no audit event exists for these
        setattr(mod, "mkfifo", no_node)  # noqa: B010 - os and posix alike, typed modules or not
        setattr(mod, "mknod", no_node)  # noqa: B010
    _imp.create_builtin = guard(_imp.create_builtin)
    _imp.create_dynamic = guard(_imp.create_dynamic)
    sys.addaudithook(hook)


def run_code() -> NoReturn:
    code, tests = cfg["code"], cfg["tests"]
    ns: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
    try:
        exec(compile(code, "solution.py", "exec"), ns)
    except SystemExit as exc:
        if exc.code not in (None, 0):
            finish("failed", "the code exited with status " + str(exc.code))
    except MemoryError:
        finish("failed", "memory limit exceeded (" + str(cfg["memory_mb"]) + " MB)")
    except BaseException as exc:  # noqa: BLE001 - whatever the code raises is its failure
        finish("failed", "the code raised " + short_tb(exc))
    if tests is None:
        finish("passed", "ran without error", tests_passed=None, tests_total=None)
    before = set(ns)
    try:
        exec(compile(tests, "tests.py", "exec"), ns)
    except MemoryError:
        finish("failed", "memory limit exceeded (" + str(cfg["memory_mb"]) + " MB)", tests_passed=0, tests_total=1)
    except BaseException as exc:  # noqa: BLE001
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
        except BaseException as exc:  # noqa: BLE001
            failures.append(fn.__name__ + ": " + short_tb(exc))
    status = "passed" if passed == len(fns) else "failed"
    reason = str(passed) + "/" + str(len(fns)) + " tests passed" + ("; " + failures[0] if failures else "")
    finish(status, reason, tests_passed=passed, tests_total=len(fns), failures=failures[:5])


def main() -> NoReturn:
    global WORK, OWN_PROC, _result_file
    cfg.update(json.loads(sys.stdin.readline()))
    sys.stdin.close()
    iso.update({"net": "host" if cfg["network"] else "none", "pid": cfg["pid_ns"], "fs": "audit hook only"})
    # The verdict goes to a file the parent opened on its own mount (so no writer keeps ours from turning
    # read-only).
    _result_file = os.fdopen(cfg["result_fd"], "w", encoding="utf-8")
    if cfg["mount_ns"]:
        lock_mounts()
    if cfg["net_ns"]:
        iso["net"] = "namespace"
    elif not cfg["network"]:
        own_network_namespace()
    set_limits()  # before dropping privileges: RLIMIT_NPROC then counts the unprivileged user's processes
    drop_privileges()
    for m in [m for m in sys.modules if m.split(".")[0] in ("ctypes", "_ctypes")]:
        del sys.modules[m]  # used above; the code must import it afresh, which the audit hook refuses
    WORK = os.path.realpath(os.getcwd())
    try:
        OWN_PROC = "/proc/" + os.readlink("/proc/self")  # our pid as the mounted /proc numbers it
    except OSError:
        OWN_PROC = "/proc/self"
    SOURCES.update({"solution.py": cfg["code"], "tests.py": cfg["tests"] or ""})
    signal.signal(signal.SIGXCPU, on_xcpu)
    if cfg["audit"]:
        arm_audit_hook()
    run_code()


if __name__ == "__main__":
    main()
