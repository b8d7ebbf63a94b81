"""Provider call permits: at most N calls in flight and at most R calls started per minute, per provider.

One :class:`Limiter` serves a whole run: in-process for the local engine, inside one Ray actor for the Ray
engine (every worker asks that actor for a permit, so a cluster of 50 workers still makes at most N calls at
once, not 50 x N). Each attempt of a call (retries included) takes its own permit.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

from ...providers._base import Completion, JudgeRequest, Provider


class Permits(Protocol):
    async def acquire(self, key: str) -> None: ...

    def release(self, key: str) -> None: ...


class Limiter:
    """Per key: a semaphore of ``concurrency`` and call starts spaced ``60 / rpm`` seconds apart (no bursts)."""

    def __init__(self, concurrency: int | None = None, rpm: float | None = None) -> None:
        if concurrency is not None and concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        if rpm is not None and not rpm > 0:
            raise ValueError("rpm must be > 0")
        self.concurrency = concurrency
        self.rpm = rpm
        self._sems: dict[str, asyncio.Semaphore] = {}
        self._next_start: dict[str, float] = {}
        self._pacing: dict[str, asyncio.Lock] = {}
        self.in_flight: dict[str, int] = {}
        # Counters per key, for diagnostics and tests: the most calls ever in flight at once, permits granted,
        # and (with rpm) the monotonic time the last start was let through (exact, unlike a clock read later).
        self.max_in_flight: dict[str, int] = {}
        self.granted: dict[str, int] = {}
        self.last_start: dict[str, float] = {}

    async def acquire(self, key: str) -> None:
        sem = None
        if self.concurrency is not None:
            sem = self._sems.get(key)
            if sem is None:
                sem = self._sems[key] = asyncio.Semaphore(self.concurrency)
            await sem.acquire()
        try:
            if self.rpm is not None:
                # One waiter at a time, and the next start counted from the moment this one is really let
                # through: a late wake-up (a busy machine) can only widen the gap, never bunch two calls.
                lock = self._pacing.get(key)
                if lock is None:
                    lock = self._pacing[key] = asyncio.Lock()
                async with lock:
                    wait = self._next_start.get(key, 0.0) - time.monotonic()
                    if wait > 0:
                        await asyncio.sleep(wait)
                    now = self.last_start[key] = time.monotonic()
                    self._next_start[key] = now + 60.0 / self.rpm
        except BaseException:
            if sem is not None:
                sem.release()
            raise
        n = self.in_flight[key] = self.in_flight.get(key, 0) + 1
        self.max_in_flight[key] = max(self.max_in_flight.get(key, 0), n)
        self.granted[key] = self.granted.get(key, 0) + 1

    def release(self, key: str) -> None:
        self.in_flight[key] = max(0, self.in_flight.get(key, 0) - 1)
        sem = self._sems.get(key)
        if sem is not None:
            sem.release()


def provider_key(provider: Provider) -> str:
    """Limits are per provider endpoint (an account's limits), whatever the model."""
    return f"{provider.name} {provider.base_url or ''}".strip()


def limit_provider(provider: Provider, permits: Permits) -> Callable[[], None]:
    """Make every ``provider.complete`` call hold a permit; returns the function that undoes it.

    The instance's own ``complete`` is wrapped (not the provider wrapped in another object), so its name,
    model and ``describe()`` (the cache key) stay exactly those of a run without limits.
    """
    key = provider_key(provider)
    inner: Callable[[JudgeRequest], Awaitable[Completion]] = provider.complete

    @functools.wraps(inner)
    async def complete(request: JudgeRequest) -> Completion:
        await permits.acquire(key)
        try:
            return await inner(request)
        finally:
            permits.release(key)

    setattr(provider, "complete", complete)  # noqa: B010 - an instance attribute shadowing the method

    def undo() -> None:
        provider.__dict__.pop("complete", None)

    return undo
