"""Appending result rows to a results file (JSONL, one row per line, flushed as they complete).

Apart from the readers (``_io.py``): a run opens its writer before its first request, and the result models load
while that request is in flight.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable
from pathlib import Path
from typing import IO, TYPE_CHECKING

from ..errors import UserError
from ._lock import ResultsLock

if TYPE_CHECKING:
    from ._schema import ResultRow



class ResultWriter:
    """Appends rows as they complete, flushing each write, so a crash or Ctrl-C keeps every row already paid for."""

    def __init__(self, path: str | Path, *, append: bool = True) -> None:
        self.path = Path(path)
        if self.path.parent and not self.path.parent.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
        # One writer per results file: a second process writing the same file stops here (exit 2).
        self._lock = ResultsLock(self.path).acquire()
        try:
            self._f: IO[str] = open(self.path, "a" if append else "w", encoding="utf-8")
        except BaseException:
            self._lock.release()
            raise
        self.count = 0

    def write(self, row: ResultRow) -> None:
        """Append one row and flush it."""
        self._append(_line(row), 1)

    def write_all(self, rows: Iterable[ResultRow]) -> None:
        """Append rows with one write and one flush (the run's engine hands over the rows of one event-loop turn:
        a flush per row cost a system call per case)."""
        self.write_lines(self.lines(rows))

    @staticmethod
    def lines(rows: Iterable[ResultRow]) -> list[str]:
        """The rows as :meth:`write_lines` takes them (the results file's lines)."""
        return [_line(r) for r in rows]

    def write_lines(self, lines: list[str]) -> None:
        """Append rows already encoded by :meth:`lines`, with one write and one flush."""
        if lines:
            self._append("".join(lines), len(lines))

    def _append(self, text: str, rows: int) -> None:
        try:
            self._f.write(text)
            self._f.flush()
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                raise UserError(
                    f"disk full while writing {self.path}: {self.count} rows already written are kept; "
                    "free space and rerun (finished cases are not judged again)"
                ) from exc
            raise
        self.count += rows

    def close(self) -> None:
        if self._f.closed:
            return
        try:
            self._close_file()
        finally:
            self._lock.release()

    def _close_file(self) -> None:
        try:
            self._f.flush()
            os.fsync(self._f.fileno())
        except OSError:
            pass
        try:
            self._f.close()
        except OSError:
            # A full disk: the text buffer still holds the line that failed, and closing retries the write.
            # Every complete row is already on disk; losing the failed one is what the error said.
            pass

    def __enter__(self) -> ResultWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def json_line(row: ResultRow) -> str:
    """A row's JSON text (no newline), valid UTF-8."""
    return row.to_json_text()


def _line(row: ResultRow) -> str:
    return row.to_json_text() + "\n"
