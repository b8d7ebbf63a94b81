"""Batch mode (``--batch``): judge calls go to the provider's batch API at half price instead of one by one.

Evaluators do not change: :meth:`JudgeClient.complete` hands each request to :class:`BatchRunner`, which collects
the requests that arrive together (every case of a run starts at once in batch mode), submits them as one job
(``custom_id`` = the request's cache key), polls with backoff, downloads the results and answers each waiting call.
A judge that re-asks after an invalid reply simply lands in the next job.

The jobs are recorded in the run manifest (``extra.batch_jobs``) the moment they are submitted, so a rerun of a
killed or interrupted run polls the same jobs instead of paying twice; results fill the response cache, so an
unchanged rerun makes no call. A request a job did not answer (expired, cancelled, failed, errored) becomes an
``error`` row with the reason, and only those are resubmitted by the next run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable
from typing import Any

from .._util._redact import redact_text
from ..errors import ProviderError
from ..providers._base import Completion, JudgeRequest
from ..providers._batch import BatchAdapter, JobStatus, Outcome
from ._env import env_seconds

log = logging.getLogger(__name__)


def _report(line: str) -> None:
    log.info("%s", line)


class BatchRunner:
    """Collects requests into batch jobs and resolves each call when its job ends. One per client and run."""

    def __init__(self, adapter: BatchAdapter, *, window_s: float | None = None, poll_s: float | None = None,
                 max_poll_s: float = 60.0, report: Callable[[str], None] = _report) -> None:
        self.adapter = adapter
        self.window_s = window_s if window_s is not None else env_seconds("REFEREE_BATCH_WINDOW_S")
        """Requests arriving less than this apart go into the same job."""
        self.poll_s = poll_s if poll_s is not None else env_seconds("REFEREE_BATCH_POLL_S")
        """First wait between status polls; it grows by half each poll up to ``max_poll_s``."""
        self.max_poll_s = max(max_poll_s, self.poll_s)
        self.report = report
        self.jobs: list[dict[str, Any]] = []
        """The manifest's job records (shared with it): id, provider, model, state, keys while running."""
        self.on_result: Callable[[str, Completion], Completion] | None = None
        """Every result passes here before any waiting call gets it (the client checks, redacts and caches it
        there); what it returns is the answer, and a :class:`ProviderError` it raises becomes the error."""
        self._save: Callable[[], None] = lambda: None
        self._pending: dict[str, JudgeRequest] = {}
        self._futures: dict[str, asyncio.Future[Completion]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._flusher: asyncio.Task[None] | None = None
        self._last_add = 0.0
        self._resumed = False

    def attach(self, jobs: list[dict[str, Any]], save: Callable[[], None]) -> None:
        """Use the manifest's job list (earlier runs' jobs resume) and save it on every change."""
        self.jobs = jobs
        self._save = save

    # -- the calls ---------------------------------------------------------------------------------------------
    async def complete(self, key: str, request: JudgeRequest) -> Completion:
        if not self._resumed:
            self._resumed = True
            self._resume()
        fut = self._futures.get(key)
        if fut is None:
            fut = asyncio.get_running_loop().create_future()
            self._futures[key] = fut
            self._pending[key] = request
            self._last_add = time.monotonic()
            if self._flusher is None:
                self._flusher = self._spawn(self._flush_when_quiet())
        return await asyncio.shield(fut)

    def _spawn(self, coro: Any) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _resolve(self, key: str, outcome: Outcome | BaseException) -> None:
        fut = self._futures.get(key)
        if fut is None:
            fut = asyncio.get_running_loop().create_future()
            self._futures[key] = fut
        if fut.done():
            return
        if isinstance(outcome, Completion):
            fut.set_result(outcome)
        else:
            exc = outcome if isinstance(outcome, BaseException) else ProviderError(outcome, retryable=False)
            fut.set_exception(exc)
            fut.add_done_callback(lambda f: f.exception())  # nobody may be waiting (a resumed job's other keys)

    # -- submitting --------------------------------------------------------------------------------------------
    async def _flush_when_quiet(self) -> None:
        while True:
            await asyncio.sleep(self.window_s)
            if time.monotonic() - self._last_add >= self.window_s:
                break
        pending, self._pending, self._flusher = self._pending, {}, None
        for chunk in self._chunks(list(pending.items())):
            await self._submit(chunk)

    def _chunks(self, items: list[tuple[str, JudgeRequest]]) -> list[list[tuple[str, JudgeRequest]]]:
        """Jobs within the provider's request-count and size limits (the size estimated from the messages)."""
        chunks: list[list[tuple[str, JudgeRequest]]] = [[]]
        size = 0
        for key, req in items:
            n = 512 + sum(len(m.content.encode()) for m in req.messages) + (
                len(json.dumps(req.response_schema)) if req.response_schema else 0)
            current = chunks[-1]
            if current and (len(current) >= self.adapter.max_requests or size + n > self.adapter.max_bytes):
                chunks.append([])
                size = 0
            chunks[-1].append((key, req))
            size += n
        return [c for c in chunks if c]

    async def _submit(self, items: list[tuple[str, JudgeRequest]]) -> None:
        keys = [k for k, _ in items]
        try:
            job_id = await self._with_retries(lambda: self.adapter.submit(items))
        except ProviderError as exc:
            for k in keys:
                self._resolve(k, exc)
            return
        p = self.adapter.provider
        record: dict[str, Any] = {"id": job_id, "provider": p.name, "model": p.model, "requests": len(keys),
                                  "state": "submitted", "ended": False, "keys": keys}
        self.jobs.append(record)
        self._save()  # before anything else can fail: a killed run finds the job again
        self.report(f"batch job {job_id} submitted ({p.name}, {len(keys)} requests)")
        self._spawn(self._watch(record))

    def _resume(self) -> None:
        for record in self.jobs:
            if record.get("ended") or not isinstance(record.get("keys"), list):
                continue
            if record.get("provider") != self.adapter.provider.name:
                continue
            for k in record["keys"]:
                self._futures.setdefault(k, asyncio.get_running_loop().create_future())
            self.report(f"batch job {record['id']} resumed from the manifest ({record.get('requests')} requests, "
                        f"last seen {record.get('state')})")
            self._spawn(self._watch(record))

    # -- polling -------------------------------------------------------------------------------------------------
    async def _watch(self, record: dict[str, Any]) -> None:
        job_id, keys = str(record["id"]), list(record["keys"])
        delay = self.poll_s
        seen = ""
        try:
            while True:
                status: JobStatus = await self._with_retries(lambda: self.adapter.status(job_id))
                progress = f"{status.state}" + (f", {status.done}/{status.total} done"
                                                if status.done is not None and status.total else "")
                if progress != seen:
                    seen = progress
                    record["state"] = status.state
                    self._save()
                    self.report(f"batch job {job_id}: {progress}")
                if status.ended:
                    break
                await asyncio.sleep(delay)
                delay = min(delay * 1.5, self.max_poll_s)
            outcomes = await self._with_retries(lambda: self.adapter.results(job_id, status, keys))
        except ProviderError as exc:  # polling failed for good: the job stays in the manifest for the next run
            for k in keys:
                self._resolve(k, exc)
            return
        answered = 0
        for k in keys:
            outcome = outcomes.get(k)
            if isinstance(outcome, Completion):
                answered += 1
                if self.on_result is not None:
                    try:
                        outcome = self.on_result(k, outcome)
                    except ProviderError as exc:
                        self._resolve(k, exc)
                        continue
                self._resolve(k, outcome)
            else:
                reason = outcome or f"batch job {job_id} ended as {status.state} without a result for this request"
                self._resolve(k, ProviderError(redact_text(reason) + " (a rerun resubmits it)", retryable=False))
        record.update(state=status.state, ended=True, answered=answered)
        record.pop("keys", None)  # ended jobs are history: keep the manifest small
        self._save()
        if answered < len(keys):
            self.report(f"batch job {job_id} ended as {status.state}: {answered}/{len(keys)} answered; the rest "
                        "are error rows, resubmitted by a rerun")

    async def _with_retries(self, call: Callable[[], Any], tries: int = 5) -> Any:
        delay = max(self.poll_s, 0.01)
        for attempt in range(tries):
            try:
                return await call()
            except ProviderError as exc:
                if not exc.retryable or attempt == tries - 1:
                    raise
                await asyncio.sleep(exc.retry_after if exc.retry_after is not None else delay)
                delay = min(delay * 2, self.max_poll_s)
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
