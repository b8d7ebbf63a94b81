"""Running many evaluations concurrently, writing each row the moment it completes."""

from __future__ import annotations

import asyncio
import os
import time
import traceback
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sized
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import ProviderAuthError, ProviderError, ProviderUnavailable, UserError
from ._progress import Progress

if TYPE_CHECKING:
    from ..results._schema import ResultRow
    from ..results._writer import ResultWriter

T = TypeVar("T")


class FatalRunError(UserError):
    """A failure that would repeat for every case (bad key, unknown model, server down): stop the run."""


@dataclass
class RunStats:
    """The rows a run produced (in completion order) and its wall time (``session.totals`` sums them)."""

    rows: list[ResultRow] = field(default_factory=list)
    wall_s: float = 0.0


def is_fatal(exc: BaseException) -> bool:
    """Errors no retry or next case can fix: the whole run stops with exit 2.

    A server that is still unreachable after the client's retries is down (or ``--base-url`` is wrong): every
    other case would fail the same way, slowly.
    """
    if isinstance(exc, ProviderAuthError | ProviderUnavailable):
        return True
    if isinstance(exc, ProviderError) and exc.status == 404:
        return True
    return isinstance(exc, UserError)


_DONE: Any = object()

_AHEAD_TURN_S = 0.0002
"""The longest the items made ahead take of one event-loop turn (the calls in flight wait for nothing longer)."""


class _Ahead:
    """An iterator's items made ahead of the workers, up to ``size`` waiting, in turns of the event loop that the
    calls in flight leave idle (:func:`run_rows`): a worker freed by an answer finds its next item made, instead of
    making it while the other answers of its wave wait. ``take()`` makes one itself when none is waiting."""

    def __init__(self, source: Iterator[Any], size: int) -> None:
        self.source = source
        self.size = size
        self.ready: deque[Any] = deque()
        self.spent = False
        self.error: BaseException | None = None
        self.wake = asyncio.Event()
        self.task = asyncio.get_running_loop().create_task(self._fill())

    async def _fill(self) -> None:
        while not self.spent:
            if len(self.ready) >= self.size:
                self.wake.clear()
                await self.wake.wait()
                continue
            until = time.perf_counter() + _AHEAD_TURN_S
            while len(self.ready) < self.size and time.perf_counter() < until:
                try:
                    self.ready.append(next(self.source))
                except StopIteration:
                    self.spent = True
                    return
                except Exception as exc:  # noqa: BLE001 - raised by take() once the items before it are taken
                    self.error, self.spent = exc, True
                    return
            await asyncio.sleep(0)

    def take(self) -> Any:
        if self.ready:
            self.wake.set()
            return self.ready.popleft()
        if self.error is not None:
            raise self.error
        if self.spent:
            return _DONE
        try:
            return next(self.source)
        except StopIteration:
            self.spent = True
            return _DONE

    def close(self) -> None:
        self.task.cancel()


async def run_rows(
    items: Iterable[T],
    evaluate: Callable[[T], Awaitable[ResultRow | list[ResultRow]]],
    *,
    writer: ResultWriter | None,
    concurrency: int = 8,
    label: str = "judging",
    on_error: Callable[[T, BaseException], ResultRow] | None = None,
    show_progress: bool | None = True,
    cost_so_far: Callable[[], float | None] | None = None,
    record: Callable[[list[ResultRow], list[str] | None], None] | None = None,
) -> RunStats:
    """Evaluate ``items`` with at most ``concurrency`` in flight; rows are written as they complete (at the end of
    the event-loop turn that completed them). ``items`` may be an iterator: an item is taken when a worker is free,
    so making the next one overlaps with the calls in flight (no progress bar then: the total is not known).

    ``evaluate`` should turn per-case failures into rows itself. An unexpected exception becomes a row via
    ``on_error`` (one bad case never stops a run); a fatal one (see :func:`is_fatal`) stops the run after
    the rows already written are flushed. ``record(rows, lines)``: handed each turn's rows too, with their
    file lines when there is a file (the run history's sink, which only queues them).
    """
    stats = RunStats()
    start = time.perf_counter()
    # One iterator shared by the workers (one event loop: next() is never interleaved); filling a queue with
    # every item first cost 3 us per item before the first request (10,000 cases: 30 ms).
    total = len(items) if isinstance(items, Sized) else None
    pending = iter(items)
    ahead = _Ahead(pending, max(1, concurrency)) if total is None else None
    progress = Progress(total=total or 0, label=label, enabled=show_progress is not False, cost=cost_so_far)
    fatal: list[BaseException] = []

    loop = asyncio.get_running_loop()
    unwritten: list[ResultRow] = []

    def write_unwritten() -> None:
        # Scheduled once per event-loop turn that completes rows, so it runs after every task of that turn: the
        # requests a burst of answers frees up go out before the file is written, and a turn's rows take one write
        # and one flush instead of one each (no change in wall time measured at concurrency 256).
        if not unwritten:
            return
        rows = unwritten[:]
        unwritten.clear()
        # Encoded once: the file's lines also go to the run history, whose summary reads rows as the file has them.
        lines = writer.lines(rows) if writer is not None else None
        if record is not None:
            record(rows, lines)
        if writer is None or lines is None:
            return
        try:
            writer.write_lines(lines)
        except Exception as exc:  # noqa: BLE001 - a full disk stops the run (is_fatal), reported after gather
            fatal.append(exc if isinstance(exc, UserError) else UserError(f"cannot write {writer.path}: {exc}"))

    def emit(rows: ResultRow | list[ResultRow]) -> None:
        batch = rows if isinstance(rows, list) else [rows]
        stats.rows.extend(batch)
        if writer is not None or record is not None:
            if not unwritten:
                loop.call_soon(write_unwritten)
            unwritten.extend(batch)

    async def worker() -> None:
        while not fatal:
            item = next(pending, _DONE) if ahead is None else ahead.take()
            if item is _DONE:
                return
            try:
                emit(await evaluate(item))
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - failures are data
                if is_fatal(exc):
                    fatal.append(exc)
                    return
                if on_error is None:
                    raise
                if os.environ.get("REFEREE_DEBUG", "") not in ("", "0"):
                    traceback.print_exc()
                emit(on_error(item, exc))
            progress.advance()

    workers = [asyncio.create_task(worker()) for _ in range(max(1, min(concurrency, total or 1) if total is not None
                                                                   else concurrency))]
    try:
        await asyncio.gather(*workers)
    finally:
        for w in workers:
            w.cancel()
        if ahead is not None:
            ahead.close()
        write_unwritten()  # also when interrupted: every row already paid for reaches the file
        progress.close()
        stats.wall_s = time.perf_counter() - start
    if fatal:
        exc = fatal[0]
        written = (f"; {len(stats.rows)} rows already written are kept"
                   if stats.rows and "already written" not in str(exc) else "")
        raise FatalRunError(f"{exc}{written}") from exc
    return stats
