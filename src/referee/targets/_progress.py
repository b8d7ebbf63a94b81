"""Progress of targets run side by side: one display on stderr with a row per target (cases done of the cases it
has to do, rate) and a row for all of them, in the style of the judge's bar (:mod:`referee.runner._progress`):
a rich display in a terminal, a one-line counter rewritten in place in a notebook, nothing when stderr is a file
or a pipe (CI logs get the per-target lines printed at the end), and only for runs longer than a second."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..runner._progress import _isatty, in_notebook

if TYPE_CHECKING:  # rich is imported only when the display is actually shown
    from rich.progress import Progress as _RichProgress
    from rich.progress import TaskID

ALL = "all targets"


class TargetsProgress:
    """Counts per target: ``begin(id, todo)`` when a target knows how many cases it has to run (resumed rows are
    not counted), ``advance(id)`` per finished case, ``finish(id)`` when its results are final."""

    def __init__(self, ids: Sequence[str], *, enabled: bool | None = None, delay_s: float = 1.0,
                 console: Any = None) -> None:
        self.ids = list(ids)
        self.todo: dict[str, int | None] = dict.fromkeys(self.ids)
        """Cases each target has to run; None until it has started (its resume is read then)."""
        self.done: dict[str, int] = dict.fromkeys(self.ids, 0)
        self.finished: set[str] = set()
        self._ended: dict[str, float] = {}
        """When each finished target ended: its rate stops there, not falling while the others run on."""
        self.start = time.perf_counter()
        self.delay_s = delay_s
        tty = _isatty()
        self.notebook = enabled is None and not tty and in_notebook()
        self.enabled = (tty or self.notebook) if enabled is None else enabled
        self._console = console
        self._bar: _RichProgress | None = None
        self._tasks: dict[str, TaskID] = {}
        self._last = 0.0

    @property
    def total_done(self) -> int:
        return sum(self.done.values())

    @property
    def total_todo(self) -> int:
        return sum(n for n in self.todo.values() if n is not None)

    def begin(self, tid: str, todo: int) -> None:
        self.todo[tid] = todo
        self._show(force=True)

    def advance(self, tid: str) -> None:
        self.done[tid] += 1
        self._show()

    def finish(self, tid: str) -> None:
        self.finished.add(tid)
        self._ended[tid] = time.perf_counter()
        self._show(force=True)
        if self._bar is not None and tid in self._tasks:
            self._bar.stop_task(self._tasks[tid])

    def _describe(self, tid: str) -> str:
        elapsed = max(self._ended.get(tid, time.perf_counter()) - self.start, 1e-9)
        done = self.total_done if tid == ALL else self.done[tid]
        state = " done" if tid in self.finished else ("" if tid == ALL or self.todo[tid] is not None else " waiting")
        return f"{tid}: {done / elapsed:.1f}/s{state}"

    def line(self) -> str:
        """The one-line form (a notebook's counter): ``v1 12/60, v2 30/60 (42/120)``."""
        parts = [f"{t} {self.done[t]}/{self.todo[t] if self.todo[t] is not None else '?'}" for t in self.ids]
        return f"{', '.join(parts)} ({self.total_done}/{self.total_todo})"

    def _show(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self.start < self.delay_s:
            return
        if not force and now - self._last <= 0.2:  # rendering costs CPU: throttle updates
            return
        self._last = now
        if self.notebook:
            sys.stderr.write(f"\r{self.line()}")
            sys.stderr.flush()
            return
        if self._bar is None:
            self._open()
        assert self._bar is not None
        for tid, task in self._tasks.items():
            if tid == ALL:
                self._bar.update(task, completed=self.total_done, total=self.total_todo or None,
                                 description=self._describe(ALL))
            else:
                todo = self.todo[tid]
                self._bar.update(task, completed=self.done[tid], total=todo, description=self._describe(tid))

    def _open(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as _RichProgress

        self._bar = _RichProgress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=self._console or Console(stderr=True), transient=False, refresh_per_second=4,
        )
        self._bar.start()
        for tid in [*self.ids, ALL]:
            self._tasks[tid] = self._bar.add_task(tid, total=None)

    def close(self) -> None:
        if not self.enabled:
            return
        if self.notebook:
            if self._last:
                sys.stderr.write(f"\r{self.line()}\n")
            return
        if self._bar is not None:
            self._last = 0.0
            self._show(force=True)
            self._bar.stop()
            self._bar = None
