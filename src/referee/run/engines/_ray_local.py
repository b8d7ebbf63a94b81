"""The local Ray cluster ``--engine ray`` starts: on loopback only, and gone with referee.

Ray runs arbitrary Python for whoever reaches its ports. A cluster referee starts for itself is used by this
machine alone, so every process of it listens on 127.0.0.1 (Ray binds its servers to the node's address, and
makes 127.0.0.1 the machine's outward address unless it believes no cluster can span machines, its macOS and
Windows default: that belief, held while the cluster starts, is what keeps them on loopback). Its processes
die with referee: a watchdog in its own session notices referee's end (kill -9 included: its end of a pipe
closes) and kills every process of the cluster, which Ray's agents would otherwise outlive for minutes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

LOOPBACK = "127.0.0.1"
_CLUSTER_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"

# Run as ``python -c``: argv = the cluster's first processes as pid:starttime. Every 0.3 s it adds their
# descendants (a process is known by pid and start time, so a reused pid is never killed); when its stdin
# reaches EOF (referee closed it after ray.shutdown, or referee died) it kills every one still alive.
_WATCHDOG = r"""
import os, select, signal, sys

def stat(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return int(fields[1]), fields[19]
    except (OSError, IndexError, ValueError):
        return None

known = {}
for arg in sys.argv[1:]:
    pid, start = arg.split(":")
    known[int(pid)] = start.encode()

def alive(pid):
    s = stat(pid)
    return s is not None and s[1] == known[pid]

def scan():
    live = {p for p in known if alive(p)}
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) not in known:
            s = stat(int(d))
            if s is not None and s[0] in live:
                known[int(d)] = s[1]

while True:
    scan()
    ready, _, _ = select.select([sys.stdin], [], [], 0.3)
    if ready and not os.read(sys.stdin.fileno(), 4096):
        break
for _ in range(3):
    scan()
    for pid in list(known):
        if alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
"""


def _children() -> dict[int, str]:
    """This process's children now: pid -> start time (field 22 of /proc/<pid>/stat)."""
    out: dict[int, str] = {}
    me = os.getpid()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for d in entries:
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            if int(fields[1]) == me:
                out[int(d)] = fields[19].decode()
        except (OSError, IndexError, ValueError):
            continue
    return out


@contextlib.contextmanager
def loopback_node() -> Iterator[None]:
    """While a local cluster starts: this node's address is 127.0.0.1 for Ray, in this process and in the
    processes it spawns now (they inherit the variable)."""
    consts: Any = None
    with contextlib.suppress(ImportError):
        import ray._private.ray_constants as ray_constants

        consts = ray_constants
    old_env = os.environ.get(_CLUSTER_ENV)
    old = getattr(consts, "ENABLE_RAY_CLUSTER", None)
    os.environ[_CLUSTER_ENV] = "0"
    if consts is not None and old is not None:
        consts.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        if old_env is None:
            os.environ.pop(_CLUSTER_ENV, None)
        else:
            os.environ[_CLUSTER_ENV] = old_env
        if consts is not None and old is not None:
            consts.ENABLE_RAY_CLUSTER = old


@contextlib.contextmanager
def tracking_new_children() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Around ``ray.init``: afterwards, a watchdog over the children it started (Linux; elsewhere none). The
    list holds the watchdog for :func:`stop_watchdog`."""
    holder: list[subprocess.Popen[bytes]] = []
    before = _children() if sys.platform.startswith("linux") else None
    try:
        yield holder
    finally:  # a start that failed half-way too: what it left is killed when referee ends
        if before is not None:
            _watch({p: s for p, s in _children().items() if before.get(p) != s}, holder)


def _watch(new: dict[int, str], holder: list[subprocess.Popen[bytes]]) -> None:
    if not new:
        return
    try:
        holder.append(subprocess.Popen(
            [sys.executable, "-c", _WATCHDOG, *(f"{p}:{s}" for p, s in new.items())],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, close_fds=True))
    except OSError as exc:  # no watchdog is not a reason to fail the run: ray.shutdown still stops the cluster
        logging.getLogger("referee").debug("no watchdog for the local Ray cluster: %s", exc)


def stop_watchdog(holder: list[subprocess.Popen[bytes]]) -> None:
    """After ``ray.shutdown``: the watchdog kills what is left of the cluster, and exits."""
    for proc in holder:
        with contextlib.suppress(Exception):
            assert proc.stdin is not None
            proc.stdin.close()
        with contextlib.suppress(Exception):
            proc.wait(timeout=10)
    holder.clear()


def enable_token_auth_for_address() -> None:
    """Ray turns its token authentication on by itself only for a cluster it finds (``auto``), not for an address
    it is given: a token-authenticated cluster at ``ray=HOST:PORT`` would then refuse referee. With
    ``RAY_AUTH_MODE`` unset and a token available (``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH`` or
    ``~/.ray/auth_token``), it is turned on here as Ray does for ``auto``."""
    if os.environ.get("RAY_AUTH_MODE"):
        return
    try:
        from ray._private.authentication.authentication_token_setup import (
            maybe_enable_token_auth_if_token_available,
        )
    except ImportError:  # a Ray without token authentication (before 2.52)
        return
    quiet = logging.getLogger("ray._private.authentication.authentication_token_setup")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # its "token authentication is enabled" notice is not referee's to print
    try:
        maybe_enable_token_auth_if_token_available(warn_if_disabled=False)
    except Exception as exc:  # noqa: BLE001 - Ray then reports the missing token itself, in one line
        logging.getLogger("referee").debug("Ray token authentication not set up: %s", exc)
    finally:
        quiet.setLevel(level)
