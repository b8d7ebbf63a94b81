"""A progress bar (cases done, rate, cost so far), shown only for runs longer than a second: a rich bar on stderr
in a terminal; in a notebook an HTML ``<progress>`` bar in the cell, updated in place through IPython's display
(Jupyter shows stderr as a pink box of ``\r`` lines; IPython is there whenever a kernel is, and needs no widget
library)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich is imported only when a bar is actually shown (start-up time of every run)
    from rich.progress import Progress as _RichProgress
    from rich.progress import TaskID


class Progress:
    def __init__(self, total: int, label: str, *, enabled: bool = True,
                 cost: Callable[[], float | None] | None = None, delay_s: float = 1.0) -> None:
        self.total = total
        self.label = label
        self.done = 0
        self.start = time.perf_counter()
        self.delay_s = delay_s
        self.cost = cost
        self.notebook = enabled and total > 0 and not _isatty() and in_notebook()
        self.enabled = enabled and total > 0 and (_isatty() or self.notebook)
        self._bar: _RichProgress | None = None
        self._task: TaskID | None = None
        self._last = 0.0
        self._display: Any = None
        """The notebook's display handle (``IPython.display.DisplayHandle``) once the bar is shown."""

    def _describe(self) -> str:
        elapsed = max(time.perf_counter() - self.start, 1e-9)
        text = f"{self.label} {self.done / elapsed:.1f}/s"
        c = self.cost() if self.cost else None
        if c is not None:
            text += f" ${c:.4f}"
        return text

    def advance(self) -> None:
        self.done += 1
        if not self.enabled:
            return
        now = time.perf_counter()
        if self.notebook:
            if now - self.start >= self.delay_s and (now - self._last > 0.5 or self.done == self.total):
                self._last = now
                self._line()
            return
        if self._bar is None:
            if now - self.start < self.delay_s:
                return
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as _RichProgress

            self._bar = _RichProgress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                console=Console(stderr=True), transient=False, refresh_per_second=4,
            )
            self._bar.start()
            self._task = self._bar.add_task(self._describe(), total=self.total, completed=self.done)
        if now - self._last > 0.2 or self.done == self.total:  # rendering costs CPU: throttle updates
            self._last = now
            assert self._task is not None
            self._bar.update(self._task, completed=self.done, description=self._describe())

    def _line(self) -> None:
        import html

        from IPython.display import HTML, display

        elapsed = time.perf_counter() - self.start
        bar = HTML(f'<div class="referee-progress"><progress value="{self.done}" max="{self.total}" '
                   f'style="width:20em;vertical-align:middle"></progress> {self.done}/{self.total} '
                   f"{html.escape(self._describe())} {elapsed:.0f}s</div>")
        if self._display is None:
            self._display = display(bar, display_id=True)
        else:
            self._display.update(bar)

    def close(self) -> None:
        if self.notebook and self._last:
            self._line()
        if self._bar is not None:
            assert self._task is not None
            self._bar.update(self._task, completed=self.done, description=self._describe())
            self._bar.stop()
            self._bar = None


def _isatty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (IPython's ZMQ shell): progress then goes to the cell."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    shell = get() if callable(get) else None
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"
