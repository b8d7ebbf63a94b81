"""One judged run end to end: resume from an earlier (crashed) run, write rows and the manifest, totals.

Every judging command (judge, pairwise, rubric, gold, suites) goes through :func:`execute`, so they all
resume the same way and write the same manifest.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from .._util._redact import redact_text
from ..errors import UserError
from ..results import _self_grading as self_grading
from ..results._files import manifest_path, utc_now_iso
from ..results._lock import ResultsLock
from ..results._writer import ResultWriter
from ._client import ASK_AGAIN, JudgeClient
from ._engine import run_rows

if TYPE_CHECKING:
    from ..results._manifest import RunManifest, Totals
    from ..results._schema import ResultRow
    from ..store import Recorder

log = logging.getLogger(__name__)
T = TypeVar("T")


def _same_config(old: RunManifest, new: RunManifest) -> bool:
    """Rows of ``old`` may be reused by ``new`` only if they were produced the same way."""
    def judge_key(m: RunManifest) -> Any:
        if m.judge is None:
            return None
        j = m.judge
        return (j.provider, j.model, j.base_url, j.temperature, j.max_tokens, j.seed, j.repeat)

    # The eval set too: a case whose text changed must be judged again, not resumed with its old score
    # (unchanged cases then come from the response cache, at no cost).
    return (old.kind == new.kind and judge_key(old) == judge_key(new)
            and (old.template.sha256 if old.template else None) == (new.template.sha256 if new.template else None)
            and (old.eval_set.sha256 if old.eval_set else None) == (new.eval_set.sha256 if new.eval_set else None)
            and old.extra.get("config_hash") == new.extra.get("config_hash")
            # the images' content: an image file beside the cases can change while the cases file does not
            and old.extra.get("media_sha256") == new.extra.get("media_sha256"))


def _foreign_rows(out: Path, manifest: RunManifest) -> bool:
    """Whether the file holds rows another judge model wrote (a file two runs wrote at once, before results
    files were locked): its manifest cannot vouch for them, so none is kept."""
    from ..results._io import read_results

    if manifest.judge is None:
        return False
    models = {r.judge.model for r in read_results(out).rows if r.judge is not None and r.judge.model}
    return bool(models - {manifest.judge.model})


def _free_prev_name(out: Path) -> Path:
    """``x.prev.jsonl``, or ``x.prev2.jsonl``, ... when that is taken: an earlier set-aside run holds paid rows
    and must never be overwritten."""
    n = 1
    while True:
        prev = out.with_name(f"{out.stem}.prev{n if n > 1 else ''}{out.suffix}")
        if not prev.exists() and not manifest_path(prev).exists():
            return prev
        n += 1


RETRY_UNSCORED: ContextVar[bool] = ContextVar("referee_retry_unscored", default=False)
"""Whether a resumed run judges its kept ``unscored`` rows again (``--retry-unscored``; see
:func:`retrying_unscored`)."""


@contextmanager
def retrying_unscored(on: bool = True) -> Iterator[None]:
    """Within this block a resumed run judges again the rows an earlier run left ``unscored`` (as it always does
    ``error`` rows), asking the judge afresh rather than reading the cached reply they were unscored on."""
    token = RETRY_UNSCORED.set(on)
    try:
        yield
    finally:
        RETRY_UNSCORED.reset(token)


@dataclass
class Resume:
    kept: list[ResultRow] = field(default_factory=list)
    done: set[tuple[str, int | None, int | None]] = field(default_factory=set)
    note: str | None = None
    again: set[tuple[str, int | None, int | None]] = field(default_factory=set)
    """Keys of unscored rows set aside to be judged again (their replies skip the cache)."""


def prepare_output(out: Path, manifest: RunManifest) -> Resume:
    """Reuse finished rows of an interrupted or earlier identical run; set aside a different run's file.

    Finished means ``scored`` or ``unscored`` (the judge was paid and answered); ``error`` rows are retried.
    """
    res = Resume()
    if not out.exists():
        return res
    from ..results._io import read_results
    from ..results._manifest import RunManifest
    inputs = (("cases", manifest.eval_set.path if manifest.eval_set else None),
              ("--template", manifest.template.path if manifest.template else None))
    for name, given in inputs:
        # Checked here, for every judging command: the move below would set the user's input file aside.
        if given and out.resolve() == Path(given).resolve():
            raise UserError(f"--out {out} is the {name} file; write results to a file of their own")
    if out.is_dir():
        raise UserError(f"--out {out} is a directory; give a results file such as {out / 'results.jsonl'}")
    if not out.is_file():
        return res  # a device or pipe (/dev/stdout, /dev/full): nothing to resume, and never to be moved
    old = None
    try:
        old = RunManifest.read(out)
    except (ValueError, OSError):
        old = None
    if old is None or not _same_config(old, manifest) or _foreign_rows(out, manifest):
        manifest.run_id = None  # a different run: a new id
        prev = _free_prev_name(out)
        os.replace(out, prev)
        mp = manifest_path(out)
        if mp.exists():
            os.replace(mp, manifest_path(prev))
        res.note = f"{out} held results of a different configuration; moved to {prev}"
        return res
    # An unfinished run resumed keeps its id, so the history completes that run rather than adding another; a
    # rerun after a complete run is a new run (its kept rows recorded under the new id, their texts shared).
    if old.run_id is not None and old.status != "complete":
        manifest.run_id = old.run_id
    # Batch jobs an earlier (killed or interrupted) run submitted: polled again rather than paid twice.
    jobs = old.extra.get("batch_jobs")
    if isinstance(jobs, list) and jobs:
        # In place: batch runners attached before this point (model targets') hold this very list.
        manifest.extra.setdefault("batch_jobs", [])[:0] = [j for j in jobs if isinstance(j, dict)]
    loaded = read_results(out)
    retry = RETRY_UNSCORED.get()
    keep = [r for r in loaded.rows if r.status == "scored" or (r.status == "unscored" and not retry)]
    res.kept = keep
    res.done = {r.key for r in keep}
    n_error = sum(1 for r in loaded.rows if r.status == "error")
    n_unscored = sum(1 for r in loaded.rows if r.status == "unscored")
    if retry:
        res.again = {r.key for r in loaded.rows if r.status == "unscored"}
    # Rewrite without the rows judged again (atomically) so they do not appear twice, and without a line a
    # crash left half written.
    tmp = out.with_name(out.name + ".tmp")
    with ResultWriter(tmp, append=False) as w:
        w.write_all(keep)
    os.replace(tmp, out)
    if loaded.rows:
        scored = len(keep) - (0 if retry else n_unscored)
        if retry:
            kept = f"{scored} scored rows already in {out} are kept"
            again = f"{n_unscored} unscored and {n_error} error rows are judged again"
        else:
            kept = f"{len(keep)} rows already in {out} are kept ({scored} scored, {n_unscored} unscored)"
            again = f"{n_error} error rows are judged again" + (
                "; --retry-unscored judges the unscored ones again too" if n_unscored else "")
        res.note = f"resuming: {kept}; {again}; judging the rest"
    return res


def totals(rows: Sequence[ResultRow], client: JudgeClient | None, wall_s: float, skipped: int = 0) -> Totals:
    # One pass over the rows (six took ~40 ms of a 10,000-case run's tail); sums of the same lists as before.
    from ..results._manifest import Totals

    status = {"scored": 0, "unscored": 0, "error": 0}
    costs: list[float] = []
    ins: list[int] = []
    outs: list[int] = []
    for r in rows:
        if r.status in status:
            status[r.status] += 1
        if r.cost_usd is not None:
            costs.append(r.cost_usd)
        if r.usage:
            if r.usage.input_tokens is not None:
                ins.append(r.usage.input_tokens)
            if r.usage.output_tokens is not None:
                outs.append(r.usage.output_tokens)
    return Totals(
        rows=len(rows),
        scored=status["scored"],
        unscored=status["unscored"],
        error=status["error"],
        skipped_invalid=skipped,
        cost_usd=round(sum(costs), 8) if costs else None,
        input_tokens=sum(ins) if ins else None,
        output_tokens=sum(outs) if outs else None,
        provider_calls=client.stats.calls if client else 0,
        cached_calls=client.stats.cached if client else 0,
        wall_s=round(wall_s, 3),
    )


def totals_line(t: Totals, out: str | Path, *, judged: bool = True, lead: str | None = None,
                counts: str | None = None, timed: bool = True) -> str:
    """The one line every run ends with: counts, where the rows went, judge calls (cache hits, cost), time.

    ``lead`` replaces the leading ``N scored, `` (pairwise reports wins there); ``counts`` replaces every count
    before `` -> `` (gold reports PASS/FAIL per case); ``timed=False`` leaves the wall time out."""
    if counts is None:
        counts = (lead if lead is not None else f"{t.scored} scored, ") + f"{t.unscored} unscored, {t.error} error"
        if t.skipped_invalid:
            counts += f", {t.skipped_invalid} skipped as invalid"
    text = f"{counts} -> {out}"
    if judged:
        cost = f", cost ${t.cost_usd:.4f}" if t.cost_usd is not None else ""
        text += f" ({t.provider_calls} judge calls, {t.cached_calls} from cache{cost})"
    return text + (f", {t.wall_s:.1f}s" if timed and t.wall_s is not None else "")


def error_row(case_id: str, exc: BaseException, *, evaluator: str, category: str | None = None,
              repeat: int | None = None) -> ResultRow:
    from ..results._schema import ResultRow

    return ResultRow(id=case_id, status="error", evaluator=evaluator, category=category, repeat=repeat,
                     error=redact_text(f"{type(exc).__name__}: {exc}"))


@dataclass
class Outcome:
    rows: list[ResultRow]
    """All rows of the results file (kept from a resumed run plus new ones)."""
    new_rows: list[ResultRow]
    manifest: RunManifest
    resume_note: str | None


def execute(
    *,
    out: Path,
    manifest: RunManifest | Callable[[], RunManifest],
    items: Iterable[T],
    key: Callable[[T], tuple[str, int | None, int | None]],
    evaluate: Callable[[T], Awaitable[ResultRow | list[ResultRow]]],
    on_error: Callable[[T, BaseException], ResultRow],
    client: JudgeClient | None,
    concurrency: int,
    label: str,
    skipped: int = 0,
    cleanup: Callable[[], Awaitable[None]] | None = None,
) -> Outcome:
    """Run ``items`` not already done, appending rows to ``out``, and keep the manifest current (``manifest``: as
    :func:`execute_async` takes it).

    ``cleanup`` runs inside the run's event loop at its end (connections opened in that loop close there)."""
    return run_sync(execute_async(out=out, manifest=manifest, items=items, key=key, evaluate=evaluate,
                                  on_error=on_error, client=client, concurrency=concurrency, label=label,
                                  skipped=skipped, cleanup=cleanup))


async def execute_async(
    *,
    out: Path | None,
    manifest: RunManifest | Callable[[], RunManifest],
    items: Iterable[T],
    key: Callable[[T], tuple[str, int | None, int | None]],
    evaluate: Callable[[T], Awaitable[ResultRow | list[ResultRow]]],
    on_error: Callable[[T, BaseException], ResultRow],
    client: JudgeClient | None,
    concurrency: int,
    label: str,
    skipped: int = 0,
    show_progress: bool | None = None,
    cleanup: Callable[[], Awaitable[None]] | None = None,
    on_todo: Callable[[int], None] | None = None,
    on_rows: Callable[[list[ResultRow]], None] | None = None,
) -> Outcome:
    """:func:`execute` for async code: the one runner of every evaluation (resume, rows written as they
    complete, manifest totals). With ``out=None`` rows stay in memory (nothing to resume, no file).
    ``client`` is closed at the end. ``on_todo(n)``: told how many items are left to run once the resume is read
    (a progress display of its own). ``on_rows(rows)``: handed the rows of each event-loop turn that completed
    some, as the results file and the run history are (the monitor prepares each trace's score as it arrives).

    ``manifest`` may be given as the function that builds it: a new run (no results file yet, no batch) then
    sends its first requests first, and imports the result models (pydantic, ~0.1 s) and builds and writes the
    manifest while they are in flight; rows wait for it. A run that resumes or batches builds it first."""
    # One writer per results file, from before the resume read until the manifest is final: a second run on
    # the same --out stops here (exit 2, "in use by pid N") before it pays for anything.
    lock = ResultsLock(out).acquire() if out is not None else None
    recorder = None
    try:
        # The run history's one sink (None: off). Its thread opens the store while the run starts.
        from ..store import open_recorder
        recorder = open_recorder(out)
        return await _execute_locked(out=out, manifest=manifest, items=items, key=key, evaluate=evaluate,
                                     on_error=on_error, client=client, concurrency=concurrency, label=label,
                                     skipped=skipped, show_progress=show_progress, cleanup=cleanup,
                                     on_todo=on_todo, recorder=recorder, on_rows=on_rows)
    finally:
        if recorder is not None:
            recorder.close()  # a run that failed before it started: the thread stops unrecorded
        if lock is not None:
            lock.release()


async def _execute_locked(
    *,
    out: Path | None,
    manifest: RunManifest | Callable[[], RunManifest],
    items: Iterable[T],
    key: Callable[[T], tuple[str, int | None, int | None]],
    evaluate: Callable[[T], Awaitable[ResultRow | list[ResultRow]]],
    on_error: Callable[[T, BaseException], ResultRow],
    client: JudgeClient | None,
    concurrency: int,
    label: str,
    skipped: int,
    show_progress: bool | None,
    cleanup: Callable[[], Awaitable[None]] | None,
    on_todo: Callable[[int], None] | None = None,
    recorder: Recorder | None = None,
    on_rows: Callable[[list[ResultRow]], None] | None = None,
) -> Outcome:
    deferred = callable(manifest) and (out is None or not out.exists()) and (client is None or client.batch is None)
    built: list[RunManifest] = [] if deferred else [manifest() if callable(manifest) else manifest]
    ready = asyncio.Event()
    from ..store import new_run_id

    def the_manifest() -> RunManifest:
        if not built:
            assert callable(manifest)
            built.append(manifest())
        m = built[0]
        if client is not None and m.judge is not None:
            m.judge.price_source = client.price_source
        if m.run_id is None:
            m.run_id = new_run_id()
        if recorder is not None and not recorder.started:
            recorder.start(m)
            recorder.rows(resume.kept)
        return m

    resume = prepare_output(out, built[0]) if out is not None and built else Resume()
    if built:
        the_manifest()
    todo: Iterable[T]
    if isinstance(items, Sequence) or (client is not None and client.batch is not None):
        todo = [it for it in items if key(it) not in resume.done]
        n_todo: int | None = len(todo)
    else:
        # A stream (an iterator such as a CaseStream): each item is made when a worker takes it, so making the next
        # overlaps with the calls in flight. A batch job wants every request at once, so it takes them all above.
        todo = (it for it in items if key(it) not in resume.done)
        n_todo = None
    if on_todo is not None and n_todo is not None:
        on_todo(n_todo)

    async def evaluate_flagged(it: T) -> ResultRow | list[ResultRow]:
        # Every judging command goes through here, so every judged row is checked for self-grading once.
        if resume.again and key(it) in resume.again:
            token = ASK_AGAIN.set(True)
            try:
                res = await evaluate(it)
            finally:
                ASK_AGAIN.reset(token)
        else:
            res = await evaluate(it)
        if not ready.is_set():  # an answer (a cache hit) before a deferred manifest is written: it waits for it
            await ready.wait()
        m = built[0]
        judge_model = m.judge.model if m.judge is not None else None
        if isinstance(res, list):
            return [self_grading.mark(r, default_system_model=m.system_under_test, judge_model=judge_model)
                    for r in res]
        return self_grading.mark(res, default_system_model=m.system_under_test, judge_model=judge_model)

    # No manifest beside a device or pipe (it would land in /dev).
    keep_manifest = out is not None and (not out.exists() or out.is_file())
    if not deferred:
        m = the_manifest()
        if client is not None and client.batch is not None:
            # Every case starts at once so that their requests go into one job; the manifest is saved as jobs
            # change.
            def save_manifest() -> None:
                if keep_manifest and out is not None:
                    m.write(out)

            client.batch.attach(m.extra.setdefault("batch_jobs", []), save=save_manifest)
            concurrency = max(concurrency, n_todo or 0)
        if keep_manifest:
            assert out is not None
            m.write(out)
        ready.set()
    writer = ResultWriter(out, append=True) if out is not None else None
    t0 = time.perf_counter()
    new_rows: list[ResultRow] = []
    status: Literal["complete", "interrupted", "failed"] = "complete"
    try:
        try:
            run = run_rows(todo, evaluate_flagged, writer=writer, concurrency=concurrency, label=label,
                           on_error=on_error, show_progress=show_progress,
                           cost_so_far=(lambda: client.stats.cost_usd if client and client.price_source else None),
                           record=_sinks(recorder, on_rows))
            if deferred:
                task = asyncio.ensure_future(run)
                try:
                    await _first_requests_sent(task, client, concurrency if n_todo is None else min(concurrency, n_todo))
                    _load_result_models()  # the loop waits for it (~0.1 s) while the requests are in flight
                    if keep_manifest:
                        assert out is not None
                        the_manifest().write(out)
                    else:
                        the_manifest()
                except BaseException:
                    task.cancel()
                    await asyncio.wait([task])  # its rows so far are written by its own finally
                    raise
                finally:
                    ready.set()
                stats = await task
            else:
                stats = await run
            new_rows.extend(stats.rows)
        finally:
            if cleanup is not None:
                await cleanup()
            if client is not None:
                await client.aclose()
    except (KeyboardInterrupt, asyncio.CancelledError):
        status = "interrupted"
        raise
    except BaseException:
        status = "failed"
        raise
    finally:
        if writer is not None:
            writer.close()
        # Re-reading is for regular files only: /dev/full reads as endless zeros, a pipe would block.
        # With nothing to do (an unchanged rerun) nothing was written: no second copy of every kept row.
        reread = (_reread(out, resume.kept) if out is not None and n_todo != 0 and not new_rows and keep_manifest
                  else [])
        all_rows = resume.kept + (new_rows or reread)
        final = the_manifest()
        n_self = _record_self_grading(final, all_rows)
        final.status = status
        final.totals = totals(all_rows, client, time.perf_counter() - t0, skipped)
        final.finished_at = utc_now_iso()
        git = {k: v for k, v in (recorder.git_facts() or {}).items() if v is not None} if recorder is not None else None
        if git:
            # Where the run ran, in its files too: added later (`referee runs import`, after the store could not
            # be written), the run keeps its commit and branch, so `--baseline main` finds it.
            final.extra["git"] = git
        try:
            if keep_manifest:
                assert out is not None
                final.write(out)
        except OSError as exc:  # a full disk must not hide the original error
            log.warning("warning: could not update the manifest: %s", exc)
        if recorder is not None:
            recorder.finish(final, all_rows)
    if reread:  # the manifest counted the rows found in the file; the caveat speaks of this run's
        n_self = self_grading.count(resume.kept + new_rows)
    if n_self:
        judge_model = final.judge.model if final.judge is not None else None
        log.warning("%s", self_grading.caveat(n_self, len(resume.kept) + len(new_rows), judge_model))
    return Outcome(rows=resume.kept + new_rows, new_rows=new_rows, manifest=final, resume_note=resume.note)


def _sinks(recorder: Recorder | None, on_rows: Callable[[list[ResultRow]], None] | None,
           ) -> Callable[[list[ResultRow], list[str] | None], None] | None:
    """What ``run_rows`` hands each turn's rows to: the run history's recorder, ``on_rows``, both or neither."""
    if on_rows is None:
        return recorder.rows if recorder is not None else None
    if recorder is None:
        return lambda rows, _lines: on_rows(rows)

    def both(rows: list[ResultRow], lines: list[str] | None) -> None:
        recorder.rows(rows, lines)
        on_rows(rows)
    return both


async def _first_requests_sent(run: asyncio.Future[Any], client: JudgeClient | None, n: int) -> None:
    """Yield to the run until its first ``n`` calls have reached the provider (or been answered from the cache,
    or the run is over), then for 30 turns more, in which new connections are made and the requests written (an
    idle turn costs microseconds). Measured against 3 and 10 turns, and against importing in a worker thread at
    once (which slows the first requests at concurrency 256): 30 sent them soonest at concurrency 32 and 256. At
    most 50 turns of waiting for the calls: a judge that does other work first is not waited for."""
    for _ in range(50):
        if run.done() or client is None or client.stats.calls + client.stats.cached >= n:
            break
        await asyncio.sleep(0)
    for _ in range(30):
        await asyncio.sleep(0)


def _load_result_models() -> None:
    """Import the result models and pydantic (~0.1 s), once a run's first requests are in flight
    (:func:`execute_async`)."""
    from importlib import import_module

    for name in ("..results._schema", "..results._manifest", "..results._io"):
        import_module(name, __package__)


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from synchronous code, also when an event loop is already running in this
    thread (Jupyter, an async web handler): then on a loop of its own in a worker thread, which this call
    waits for. Ctrl-C still stops a plain script's run (``asyncio.run`` turns it into cancellation)."""
    box: list[T] = []

    async def main() -> None:
        # The result is handed over outside the task: at its end asyncio.run (3.11) formats the main task's repr,
        # result included, which for a run's thousands of rows costs about a CPU-second per 1000 rows.
        box.append(await coro)

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        in_loop = False
    else:
        in_loop = True
    if not in_loop:
        # Outside the except block: an error from the run is then not chained to "no running event loop".
        asyncio.run(main())
        return box[0]
    import concurrent.futures
    import contextvars

    ctx = contextvars.copy_context()
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="referee") as pool:
        pool.submit(ctx.run, asyncio.run, main()).result()
    return box[0]


def _record_self_grading(manifest: RunManifest, rows: Sequence[ResultRow]) -> int:
    """The manifest names the system under test (the flag's, else the cases' ``metadata.system_model``) and
    counts the self-graded rows, so a results file carries its caveat wherever it goes. Returns that count."""
    if manifest.system_under_test is None:
        # Rows without metadata (most judge runs) name no model: skipped cheaply, this runs on every row.
        models = sorted({m for r in rows if r.metadata for m in self_grading.system_models(r.metadata)})
        if models:
            manifest.system_under_test = ", ".join(models[:10]) + (" ..." if len(models) > 10 else "")
    n = self_grading.count(rows)
    if n:
        manifest.extra["self_grading_rows"] = n
    else:
        manifest.extra.pop("self_grading_rows", None)
    return n


def _reread(out: Path, kept: list[ResultRow]) -> list[ResultRow]:
    """After an interruption the engine's list is lost: count what actually reached the file."""
    from ..results._io import read_results

    try:
        rows = read_results(out).rows
    except Exception:  # noqa: BLE001 - best effort for the manifest totals only
        return []
    return rows[len(kept):]
