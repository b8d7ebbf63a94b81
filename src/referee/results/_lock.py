"""One writer per results file.

A run holds an exclusive ``flock`` on ``<results>.lock`` (beside the results, holding the writer's pid) from
before it reads the file to resume until its manifest is final. A second run on the same file stops at once,
before any call is paid for: "in use by pid N". The kernel drops the lock when the process dies (kill -9
included), so a stale lock file never blocks a rerun. The lock is beside the real file (symlinks resolved), so
every name of one file takes the same lock. Re-entrant within one process (the run and its
:class:`~referee.results._io.ResultWriter` share it).
"""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path
from types import TracebackType

from ..errors import UserError

_HELD: dict[str, tuple[int, int]] = {}  # lock path -> (fd, depth), for this process
_MUTEX = threading.Lock()


def lock_path(results: str | Path) -> Path:
    p = Path(results)
    return p.with_name(p.name + ".lock")


def _lockable(results: Path) -> bool:
    # A device or pipe (/dev/stdout) has no "file beside it" and no second writer to fear.
    return not results.exists() or results.is_file()


class ResultsLock:
    """``with ResultsLock(path):`` — exclusive use of a results file; raises :class:`UserError` (exit 2)
    naming the pid that holds it."""

    def __init__(self, results: str | Path) -> None:
        self.results = Path(results)
        # Keyed on the real file: two names of one file (a symlink, a symlinked folder) share one lock.
        self.path = lock_path(os.path.realpath(self.results))
        self._key = str(self.path.resolve()) if _lockable(self.results) else ""

    def acquire(self) -> ResultsLock:
        if not self._key:
            return self
        with _MUTEX:
            if self._key in _HELD:
                fd, depth = _HELD[self._key]
                _HELD[self._key] = (fd, depth + 1)
                return self
            self.path.parent.mkdir(parents=True, exist_ok=True)
            while True:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    holder = _read_pid(fd)
                    os.close(fd)
                    who = f"pid {holder}" if holder else "another process"
                    raise UserError(f"{self.results} is in use by {who} (another referee run is writing it); "
                                    "wait for it to finish or choose another --out") from None
                # The previous holder may have unlinked the file between our open and our lock: retry on a
                # fresh file so two runs never hold locks on different inodes of one name.
                try:
                    same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
                except FileNotFoundError:
                    same = False
                if same:
                    break
                os.close(fd)
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            _HELD[self._key] = (fd, 1)
        return self

    def release(self) -> None:
        if not self._key:
            return
        with _MUTEX:
            held = _HELD.get(self._key)
            if held is None:
                return
            fd, depth = held
            if depth > 1:
                _HELD[self._key] = (fd, depth - 1)
                return
            del _HELD[self._key]
            try:
                os.unlink(self.path)  # while still locked: no one else can be holding this inode
            except OSError:
                pass
            os.close(fd)

    def __enter__(self) -> ResultsLock:
        return self.acquire()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        return int(text) if text.isdigit() else None
    except OSError:
        return None
