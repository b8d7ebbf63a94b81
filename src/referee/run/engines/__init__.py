"""Where a suite's cases are evaluated: in this process (``local``) or sharded over a Ray cluster (``ray``).

An engine only decides where ``evaluate(case) -> row`` runs. Everything around it stays in the calling
process and is the same for every engine: resuming, the one writer of the results file, the manifest, the
totals and the gates (``referee.runner._session.execute``)::

    from referee.run.engines import get_engine
    run_suite(suite, out, engine=get_engine("ray=10.0.0.5:6379"))   # or "local", "ray", RayEngine(...)

The Ray engine lives in :mod:`referee.run.engines._ray` and imports Ray only when it starts (extra ``ray``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...errors import UserError
from ._limiter import Limiter, limit_provider

if TYPE_CHECKING:
    from ...cases._case import Case
    from ...results._schema import ResultRow
    from ...runner._client import JudgeClient
    from ...suites._loader import Suite


@dataclass
class EngineRun:
    """What a started engine gives the runner: the per-case coroutine and how many cases to keep in flight."""

    evaluate: Callable[[Case], Awaitable[ResultRow]]
    concurrency: int


class Engine:
    """Base of the engines. ``start`` is a context manager: whatever it sets up is torn down on exit."""

    name: str = "engine"

    def start(self, suite: Suite, *, client: JudgeClient | None,
              concurrency: int) -> contextlib.AbstractContextManager[EngineRun]:
        raise NotImplementedError

    def describe(self) -> str:
        return self.name


class LocalEngine(Engine):
    """Today's behaviour: cases as coroutines of one event loop, sandboxed checks in worker threads.

    ``rpm`` spaces provider call starts at most ``rpm`` per minute per provider.
    """

    name = "local"

    def __init__(self, *, rpm: float | None = None) -> None:
        _check_rpm(rpm)
        self.rpm = rpm
        self._limiter: Limiter | None = None
        self._started = 0

    @contextlib.contextmanager
    def start(self, suite: Suite, *, client: JudgeClient | None, concurrency: int) -> Iterator[EngineRun]:
        from .._case import CaseEvaluator

        undo = None
        if self.rpm is not None and client is not None:
            # Runs that overlap (a suite's targets side by side, each with its own judge client) share one
            # limiter: --rpm stays per provider for the process, not per target.
            if self._started == 0 or self._limiter is None:
                self._limiter = Limiter(rpm=self.rpm)
            undo = limit_provider(client.provider, self._limiter)
        self._started += 1
        try:
            yield EngineRun(evaluate=CaseEvaluator(suite).evaluate, concurrency=concurrency)
        finally:
            self._started -= 1
            if undo is not None:
                undo()


def _check_rpm(rpm: float | None) -> None:
    if rpm is not None and not rpm > 0:
        raise UserError(f"--rpm must be > 0, not {rpm}")


def get_engine(spec: str | Engine | None, *, rpm: float | None = None, **options: Any) -> Engine:
    """An engine from ``local``, ``ray`` (a local cluster, or the one ``RAY_ADDRESS`` names) or ``ray=ADDRESS``
    (``HOST:PORT`` of a running cluster's head, or ``auto`` for the one ``ray start`` started here). None: the
    ``REFEREE_ENGINE`` environment variable, as ``referee run --engine`` reads it, else ``local``."""
    if spec is None:
        spec = os.environ.get("REFEREE_ENGINE", "").strip() or None
    if spec is None:
        return LocalEngine(rpm=rpm)
    if isinstance(spec, Engine):
        return spec
    name, sep, address = spec.strip().partition("=")
    name = name.strip().lower()
    if name == "local" and not sep:
        return LocalEngine(rpm=rpm)
    if name == "ray":
        if sep and not address.strip():
            raise UserError("--engine ray=ADDRESS needs an address, e.g. ray=10.0.0.5:6379 or ray=auto")
        from ._ray import RayEngine

        return RayEngine(address=address.strip() or None, rpm=rpm, **options)
    raise UserError(f"--engine {spec!r}: use local, ray or ray=ADDRESS")


def __getattr__(name: str) -> Any:
    if name == "RayEngine":  # importing the class does not import Ray; starting it does
        from ._ray import RayEngine

        return RayEngine
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Engine", "EngineRun", "Limiter", "LocalEngine", "RayEngine", "get_engine"]
