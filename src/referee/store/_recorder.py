"""Recording a run as it goes: the one sink ``runner/_session`` hands its rows to.

Everything happens on a thread of its own (SQLAlchemy's import, git, the database), fed by a queue: the event
loop only appends rows to a list. Rows are written in batches (whatever arrived since the last write). A store
that fails warns once, naming the store (never its password), and the run goes on: its files are complete, and
``referee runs import`` adds it later."""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ._settings import StoreSettings, display_url, scrub

if TYPE_CHECKING:
    from pathlib import Path

    from ..results._manifest import RunManifest
    from ..results._schema import ResultRow

log = logging.getLogger("referee.store")
_STOP = object()
FINISH_WAIT_S = 60.0
RETRY_DELAYS_S = (0.2, 0.5, 1.0, 2.0, 4.0)
BATCH_WAIT_S = 0.2
"""How long the writer gathers rows into one write (a killed run loses at most this much from the store; its file
keeps every row, and a resume completes the run)."""


def new_run_id() -> str:
    """A run's id: 32 hex digits (a UUID4), unique across machines so stores merge."""
    return uuid.uuid4().hex


def _now() -> str:
    """Microseconds: runs started within one second still sort in the order they started."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def manifest_bytes(m: RunManifest) -> bytes:
    return json.dumps(m.recorded(), sort_keys=True, ensure_ascii=False).encode("utf-8")  # as the file: redacted


def run_values(m: RunManifest, *, results_path: str | None, git: dict[str, Any]) -> dict[str, Any]:
    from ._identity import identity, judge_key, suite_label

    assert m.run_id is not None
    return {
        "id": m.run_id, "kind": m.kind, "suite": suite_label(m), "identity": identity(m), "judge_key": judge_key(m),
        "judge": f"{m.judge.provider}/{m.judge.model}" if m.judge else None, "status": "running",
        "started_at": _now(), "finished_at": None, "results_path": results_path,
        "git_commit": git.get("commit"), "git_branch": git.get("branch"), "git_dirty": git.get("dirty"),
        "git_remote": git.get("remote"), "ci_provider": git.get("ci_provider"), "ci_commit": git.get("ci_commit"),
        "ci_ref": git.get("ci_ref"), "ci_run_id": git.get("ci_run_id"),
    }


def summary_of(rows: Sequence[ResultRow], m: RunManifest, *,
               lines: dict[int, tuple[ResultRow, bytes]] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the run's summary columns, the summary JSON) from the one aggregator. ``lines``: rows already encoded as
    results-file lines, by ``id(row)`` (with the row, so an id is never a later object's)."""
    from ..aggregate import ScoreOptions, summarize
    from ..aggregate._load import table_from_lines
    from ..results._writer import json_line

    scoring = m.extra.get("suite", {}).get("scoring") if isinstance(m.extra.get("suite"), dict) else None
    threshold = scoring.get("threshold") if isinstance(scoring, dict) else None
    opts = ScoreOptions(threshold=float(threshold)) if isinstance(threshold, int | float) else ScoreOptions()
    known = lines or {}
    encoded = []
    for r in rows:
        hit = known.get(id(r))
        encoded.append(hit[1] if hit is not None and hit[0] is r else json_line(r).encode("utf-8"))
    # With the manifest, a red-team run's rows stay in the adversarial track, as `referee score` of its file reads
    # them: its correctness figures are n/a and its attack types are kept apart, never blended into a pass rate.
    summ = summarize(table_from_lines(encoded, manifest=m), opts, min_case_pass_rate=None)

    def group(g: Any) -> dict[str, Any]:
        return {"name": g.name, "rows": g.rows, "cases": g.cases, "unscored": g.unscored, "errors": g.errors,
                "pass_rate": [g.pass_rate.estimate, g.pass_rate.lo, g.pass_rate.hi],
                "mean": [g.mean.estimate, g.mean.lo, g.mean.hi], "mean_cost": g.mean_cost,
                "mean_latency_ms": g.mean_latency_ms}

    o = summ.overall
    cols = {"pass_rate": o.pass_rate.estimate, "pass_rate_lo": o.pass_rate.lo, "pass_rate_hi": o.pass_rate.hi,
            "mean": o.mean.estimate, "mean_lo": o.mean.lo, "mean_hi": o.mean.hi}
    doc = {"threshold": summ.threshold, "n_boot": summ.n_boot, "overall": group(o),
           "categories": [group(g) for g in summ.categories]}
    if summ.adversarial:
        doc["adversarial"] = [group(g) for g in summ.adversarial]
    return cols, doc


class Recorder:
    """One run's recording. ``start(manifest)`` once the manifest exists, ``rows(batch)`` as rows complete (cheap:
    a queue put), ``finish(manifest, rows)`` at the end (waits for the writes, bounded)."""

    def __init__(self, settings: StoreSettings, out: Path | None) -> None:
        self.settings = settings
        self.url = settings.resolved_url()
        self.out = str(out) if out is not None else None
        self.started = False
        self.failed: str | None = None
        self.stubs = 0
        self._q: queue.SimpleQueue[Any] = queue.SimpleQueue()
        # Set by the run's end (finish, close) to cut the writer's batching wait short. Rows do not set it: a
        # wake-up per queued batch (hundreds a second at c256) cost the run's event loop the GIL each time.
        self._wake = threading.Event()
        self._seq = 0
        self._closed = False
        self._aggregator_loaded = False
        self._lines: dict[int, tuple[ResultRow, bytes]] = {}
        self.git: dict[str, Any] | None = None
        """Where the run ran (:func:`~referee.store._git.git_facts`), once this thread has read it."""
        self._git_read = threading.Event()
        self._thread = threading.Thread(target=self._work, name="referee-store", daemon=True)
        self._thread.start()

    # -- called from the run -------------------------------------------------------------------------------
    def start(self, manifest: RunManifest) -> None:
        if manifest.run_id is None:
            manifest.run_id = new_run_id()
        self.started = True
        self.run_id = manifest.run_id
        self._q.put(("start", manifest.model_copy(deep=True)))

    def rows(self, batch: Sequence[ResultRow], lines: Sequence[str] | None = None) -> None:
        """Queue rows; ``lines``: the same rows as the results file has them (``json_line``, a newline allowed),
        when the run has already encoded them, so the summary does not encode them again."""
        if batch and self.failed is None:
            self._q.put(("rows", (list(batch), list(lines) if lines is not None else None)))

    def git_facts(self, wait_s: float = 5.0) -> dict[str, Any] | None:
        """Where the run ran, for its manifest (None when the run never started or git was not read in time)."""
        if self.started:
            self._git_read.wait(wait_s)
        return self.git

    def finish(self, manifest: RunManifest, rows: Sequence[ResultRow], *, wait_s: float = FINISH_WAIT_S) -> None:
        if self.started and not self._closed:
            self._q.put(("finish", (manifest.model_copy(deep=True), list(rows))))
            self._wake.set()
        self.close(wait_s)

    def close(self, wait_s: float = FINISH_WAIT_S) -> None:
        """Stop the writer once its queue is written (bounded by ``wait_s``); later calls do nothing."""
        if self._closed:
            return
        self._closed = True
        self._q.put(_STOP)
        self._wake.set()
        self._thread.join(wait_s)
        if self._thread.is_alive():
            self._fail(f"still writing after {wait_s:.0f}s; the rest of this run is not recorded")

    # -- the writer thread ---------------------------------------------------------------------------------
    def _fail(self, why: str) -> None:
        if self.failed is None:
            self.failed = why
            where = f" ({self.out})" if self.out else ""
            log.warning("warning: run history not recorded in %s: %s; the run goes on and its files are complete%s"
                        "%s", display_url(self.url), scrub(why, self.url),
                        where, f"; `referee runs import {self.out}` adds it later" if self.out else "")

    def _work(self) -> None:
        store: Any = None
        git: dict[str, Any] = {}
        # Nothing is opened before the run has started (its manifest exists): until then the run is importing and
        # sending its first requests, and this thread's imports and git calls would hold it back (~0.2 s). A run
        # that ends before it starts opens nothing.
        first = self._q.get()
        if first is _STOP:
            return
        try:
            from ._git import git_facts
            from ._settings import lock_timeout_s
            from ._sqlite_writer import open_writer

            git = self.git = git_facts().as_dict()
            self._git_read.set()  # the manifest's, as the run ends: not after the store has been opened
            # A local file already at the head needs no SQLAlchemy: the stdlib writer (see its module).
            store = open_writer(self.url, timeout_s=lock_timeout_s())
            for delay in (*RETRY_DELAYS_S, None):
                if store is not None:
                    break
                try:
                    from ._store import Store

                    store = Store(self.url)
                    break
                except Exception as exc:  # noqa: BLE001 - a server restarting: tried again
                    cause = exc.__cause__ if exc.__cause__ is not None else exc
                    if delay is None or not (self.url.startswith("postgresql") and _transient_error(cause)):
                        raise
                    time.sleep(delay)
        except Exception as exc:  # noqa: BLE001 - the run must go on
            self._fail(f"{type(exc).__name__}: {exc}")
        finally:
            self._git_read.set()  # read or not: the run's end never waits for it longer
        while True:
            item, first = first if first is not None else self._q.get(), None
            items = [item]
            # Everything that arrives within BATCH_WAIT_S goes in the same write: a write (a transaction and its
            # statements) costs far more than a row, and rows arrive a few at a time. The end of the run (finish,
            # close) cuts the wait short; the event is cleared before the queue is drained, so an end queued
            # after the drain finds it set again and the next wait returns at once.
            if item is not _STOP and item[0] == "rows":
                self._wake.wait(BATCH_WAIT_S)
                self._wake.clear()
            while True:
                try:
                    items.append(self._q.get_nowait())
                except queue.Empty:
                    break
            pending: list[ResultRow] = []
            stop = False
            for it in items:
                if it is _STOP:
                    stop = True
                    continue
                kind, payload = it
                if kind == "rows":
                    batch, lines = payload
                    pending.extend(batch)
                    if lines is not None and store is not None and self.failed is None:
                        for r, line in zip(batch, lines, strict=True):
                            self._lines[id(r)] = (r, line.encode("utf-8"))
                    continue
                self._flush(store, pending)
                pending = []
                if kind == "start":
                    self._start(store, payload, git)
                elif kind == "finish":
                    self._finish(store, *payload)
            self._flush(store, pending)
            if stop:
                break
        if store is not None:
            store.close()

    def _guard(self, store: Any, what: Any, *args: Any) -> None:
        """Run one write; a PostgreSQL connection lost (a server restarting) is retried on a fresh connection,
        with backoff: every write is an upsert, so a retried batch is never stored twice."""
        if store is None or self.failed is not None:
            return
        for delay in (*RETRY_DELAYS_S, None):
            try:
                what(store, *args)
                return
            except Exception as exc:  # noqa: BLE001 - the run must go on
                if delay is None or not _transient(store, exc):
                    self._fail(f"{type(exc).__name__}: {exc}")
                    return
                time.sleep(delay)  # this thread only: the run's event loop never waits for the store

    def _start(self, store: Any, m: RunManifest, git: dict[str, Any]) -> None:
        def go(st: Any, m: RunManifest) -> None:
            st.begin_run(run_values(m, results_path=self.out, git=git), tags=self.settings.tags,
                         manifest_json=manifest_bytes(m))
        self._guard(store, go, m)

    def _flush(self, store: Any, rows: list[ResultRow]) -> None:
        if not rows:
            return
        if not self._aggregator_loaded:
            # The summary's aggregator (numpy, the statistics) is loaded here, while the run is under way and its
            # event loop mostly waits on the network, rather than after its last row, when the run waits for it.
            self._aggregator_loaded = True
            try:
                from ..aggregate import summarize  # noqa: F401 - loaded for _finish
            except Exception as exc:  # noqa: BLE001 - _finish reports it if it recurs
                log.debug("the aggregator did not load early: %s", exc)

        if store is not None and self.failed is None:
            # Each row as the summary's aggregator reads it, now, while the run waits on the network, so that the
            # run's end does not wait for it.
            from ..results._writer import json_line

            for r in rows:
                if id(r) not in self._lines:
                    self._lines[id(r)] = (r, json_line(r).encode("utf-8"))

        def go(st: Any, rows: list[ResultRow]) -> None:
            stubs = st.add_rows(self.run_id, rows, first_seq=self._seq, results_path=self.out)
            self._seq += len(rows)
            if stubs and not self.stubs:
                log.warning("warning: a row larger than the store's bound (REFEREE_STORE_MAX_ROW_BYTES) is stored "
                            "as a stub in %s; the full row is in %s", display_url(self.url), self.out or "memory")
            self.stubs += stubs
        self._guard(store, go, rows)

    def _finish(self, store: Any, m: RunManifest, rows: list[ResultRow]) -> None:
        def go(st: Any, m: RunManifest, rows: list[ResultRow]) -> None:
            t = m.totals
            values: dict[str, Any] = {
                "status": m.status, "finished_at": _now(), "n_rows": t.rows, "n_scored": t.scored,
                "n_unscored": t.unscored, "n_error": t.error, "cost_usd": t.cost_usd, "input_tokens": t.input_tokens,
                "output_tokens": t.output_tokens, "wall_s": t.wall_s}
            summary = None
            if rows:
                cols, doc = summary_of(rows, m, lines=self._lines)
                values.update(cols)
                summary = json.dumps(doc, sort_keys=True, allow_nan=False).encode("utf-8")
            st.finish_run(self.run_id, values, manifest_json=manifest_bytes(m), summary_json=summary)
        self._guard(store, go, m, rows)


def _transient(store: Any, exc: BaseException) -> bool:
    """A lost PostgreSQL connection (worth a retry); SQLite's errors (a lock held past the timeout, a full disk)
    are not: waiting longer is what the timeout already did."""
    return store.dialect == "postgresql" and _transient_error(exc)


def _transient_error(exc: BaseException) -> bool:
    from sqlalchemy.exc import InterfaceError, OperationalError

    if isinstance(exc, OperationalError | InterfaceError):
        # a refused password or a missing database will not come right by waiting
        return "password authentication failed" not in str(exc) and "does not exist" not in str(exc)
    return False


def open_recorder(out: Path | None) -> Recorder | None:
    """The recorder of a run starting now, or None when the store is off."""
    from ._settings import current

    try:
        settings = current()
    except Exception as exc:  # noqa: BLE001 - a bad REFEREE_STORE must not stop the run
        log.warning("warning: run history off: %s", exc)
        return None
    if not settings.enabled:
        return None
    return Recorder(settings, out)
