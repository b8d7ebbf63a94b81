"""A suite with ``targets:``: every target generates the outputs, the suite's evaluators judge them, one results
file per target under the run's output folder (``<out>/<id>.jsonl`` + manifest, ``<out>/<id>.outputs.jsonl``).

This drives the suite runner as it is today (``suites.runner.CaseEvaluator`` + ``runner.session.execute``);
generation is a wrapper around the per-case evaluation, so moving onto another runner only swaps those two.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..results._manifest import text_sha256
from ..results._schema import TargetInfo
from ..runner._session import Outcome, error_row, execute_async
from ..targets._kinds import Target
from ..targets._loader import build_target
from ..targets._model import TargetSpec
from ..targets._progress import TargetsProgress
from ..targets._run import GenerationStats, TargetRun, config_sha256, outputs_path, target_info


@dataclass
class TargetOutcome:
    target: TargetInfo
    results: Path
    outputs: Path
    outcome: Outcome
    generation: GenerationStats
    notes: list[str]


def build_targets(specs: Sequence[TargetSpec], base: Path, *, use_cache: bool = True,
                  batch: bool = False) -> list[Target]:
    """Every target built before any call: a module that does not import or a missing key stops the run here.
    ``batch``: model targets generate through their provider's batch API (``--batch``)."""
    return [build_target(s, base, use_cache=use_cache, batch=batch) for s in specs]


PARALLEL_TARGETS = 4
"""Targets run at once by default (the process's bound: at most this many targets' in-flight cases at a time)."""


class CallBudget:
    """``--concurrency`` as ONE budget of provider calls in flight per endpoint for the whole run: every target's
    judge client takes its permits from it, and so does a model target that calls the judge's endpoint with the
    judge's key (one account, one limit), so targets side by side never have more than ``--concurrency`` calls in
    flight there in total. Each attempt holds a permit only while it is sent (never during a retry's backoff)."""

    def __init__(self, concurrency: int) -> None:
        from .engines._limiter import Limiter

        self.limiter = Limiter(concurrency=concurrency)
        self._judges: set[tuple[str, tuple[str, ...]]] = set()
        self._undo: list[Callable[[], None]] = []

    @staticmethod
    def _account(client: Any) -> tuple[str, tuple[str, ...]] | None:
        """(endpoint, credentials) of a live client; None for a batch client (the provider paces a batch job)."""
        if client is None or getattr(client, "batch", None) is not None:
            return None
        from .engines._limiter import provider_key

        return provider_key(client.provider), tuple(client.provider.secrets())

    def note_judge(self, client: Any) -> None:
        """Remember a judge's endpoint (before any target starts, so generation knows whom it shares with)."""
        account = self._account(client)
        if account is not None:
            self._judges.add(account)

    def limit(self, client: Any, *, judge: bool) -> None:
        """Make ``client``'s calls hold a permit: a judge always, a target's model only on a judge's account."""
        account = self._account(client)
        if account is None or (not judge and account not in self._judges):
            return
        from .engines._limiter import limit_provider

        self._undo.append(limit_provider(client.provider, self.limiter))

    def release(self) -> None:
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()


@dataclass
class _Prepared:
    target: Target
    run: TargetRun
    manifest: Any
    info: TargetInfo
    path: Path
    bound: Any
    client: Any
    on_error: Callable[[Any, BaseException], Any]
    notes: list[str]
    in_flight: int


def _in_flight(target: Target, client: Any, concurrency: int) -> int:
    """Cases in flight for one target. Judged: the target's generation slots plus the judge's, so that while some
    cases wait on the target others are being judged (a case's judging starts as soon as its generation returns,
    and neither stage idles waiting for the other); the calls themselves stay within their own limits (the
    target's ``concurrency`` / pacer, the run's :class:`CallBudget`)."""
    generation = target.spec.concurrency or concurrency
    if client is None or getattr(client, "batch", None) is not None:
        return max(concurrency, generation)
    return generation + concurrency


def run_suite_targets(suite: Any, targets: Sequence[Target], out_dir: Path, *,
                      bind: Callable[[Any], tuple[Any, Any]], concurrency: int, command: list[str],
                      judge_config: Any = None, engine: Any = None,
                      parallel_targets: int = PARALLEL_TARGETS,
                      progress_factory: Callable[[list[str]], TargetsProgress] | None = None
                      ) -> list[TargetOutcome]:
    """Run ``suite`` once per target. ``bind(suite) -> (suite with its LLM evaluators bound, judge client or
    None)`` is called per target: each run owns (and closes) its client. Generation runs here; the generated
    cases are evaluated where ``engine`` says (``referee.run.engines``: this process, or a Ray cluster).

    Up to ``parallel_targets`` targets run at once in one event loop (with the Ray engine, evaluated in one
    cluster session), each within its own ``concurrency`` and ``rate_limit`` (its pacer) and writing only its
    own files; the outcomes come back in
    the order of ``targets`` whatever the timing. ``concurrency`` is one budget of judge calls in flight for the
    whole run (:class:`CallBudget`), and ``--rpm`` one limit per judge provider, across the targets; their
    progress is one display (:class:`TargetsProgress`, or what ``progress_factory(ids)`` makes)."""
    from ._suite import collector_tuned

    if parallel_targets < 1:
        raise ValueError("parallel_targets must be >= 1")
    out_dir.mkdir(parents=True, exist_ok=True)
    with collector_tuned(checks_only=False):
        return _run_targets(suite, targets, out_dir, bind=bind, concurrency=concurrency, command=command,
                            judge_config=judge_config, engine=engine, parallel_targets=parallel_targets,
                            progress_factory=progress_factory)


def _run_targets(suite: Any, targets: Sequence[Target], out_dir: Path, *,
                 bind: Callable[[Any], tuple[Any, Any]], concurrency: int, command: list[str],
                 judge_config: Any, engine: Any, parallel_targets: int,
                 progress_factory: Callable[[list[str]], TargetsProgress] | None) -> list[TargetOutcome]:
    from ..runner._session import run_sync
    from .engines import LocalEngine, get_engine

    eng = get_engine(engine)
    local = isinstance(eng, LocalEngine)
    # The engine is given --concurrency, never the cases in flight: on Ray it is the permit actor's bound on judge
    # calls. Locally the run's budget holds it (the Ray engine has its own budget, its permit actor; a target's
    # generation there is paced by the target alone).
    budget = CallBudget(concurrency) if local else None
    # An engine that serves several suites in one session (Ray: one set of workers, one permit actor for all)
    # runs the targets side by side too.
    start_many = None if local else getattr(eng, "start_many", None)
    side_by_side = len(targets) > 1 and parallel_targets > 1 and (local or start_many is not None)
    warmup = _Warmup()
    tail = _Tail([t.id for t in targets])
    # Side by side, one display for all the targets (one live display per terminal); one at a time, each run
    # shows the judge's own bar.
    progress = (progress_factory or TargetsProgress)([t.id for t in targets]) if side_by_side else None

    def prepare(target: Target) -> _Prepared:
        prep = _prepare(suite, target, out_dir, bind=bind, concurrency=concurrency, command=command,
                        judge_config=judge_config)
        if budget is not None:
            budget.note_judge(prep.client)
        return prep

    if not side_by_side:
        results = []
        try:
            for target in targets:
                prep = prepare(target)
                if budget is not None:
                    budget.limit(getattr(prep.target, "client", None), judge=False)
                with eng.start(prep.bound, client=prep.client, concurrency=concurrency) as where:
                    if budget is not None:
                        budget.limit(prep.client, judge=True)
                    outcome = run_sync(_execute(prep, where, show_progress=None, warmup=warmup, tail=tail))
                results.append(_finish(prep, outcome))
        finally:
            if budget is not None:
                budget.release()
            warmup.join()
        return results

    async def one(prep: _Prepared, gate: asyncio.Semaphore, shared: dict[str, Any] | None) -> TargetOutcome:
        async with gate:
            if shared is not None:
                outcome = await _execute(prep, shared[prep.target.id], show_progress=False, progress=progress,
                                         warmup=warmup, tail=tail)
            else:
                with eng.start(prep.bound, client=prep.client, concurrency=concurrency) as where:
                    if budget is not None:  # outermost, so a --rpm wait comes after the permit, never before
                        budget.limit(prep.client, judge=True)
                    outcome = await _execute(prep, where, show_progress=False, progress=progress, warmup=warmup,
                                             tail=tail)
            return _finish(prep, outcome)

    async def run_all(preps: list[_Prepared], shared: dict[str, Any] | None) -> list[TargetOutcome]:
        gate = asyncio.Semaphore(parallel_targets)
        tasks = [asyncio.ensure_future(one(p, gate, shared)) for p in preps]
        try:
            return list(await asyncio.gather(*tasks))
        finally:  # a fatal error in one target stops the others (their rows so far are kept, manifests final)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def release(preps: list[_Prepared]) -> None:
        for p in preps:
            await p.run.aclose()
            if p.client is not None:
                await p.client.aclose()

    preps: list[_Prepared] = []
    try:
        try:
            for t in targets:
                preps.append(prepare(t))
        except BaseException:  # e.g. an outputs file in use: release what the earlier targets opened
            run_sync(release(preps))
            raise
        if budget is not None:  # every judge is known now: a target on a judge's account shares its budget
            for p in preps:
                budget.limit(getattr(p.target, "client", None), judge=False)
        if start_many is None:
            return run_sync(run_all(preps, None))
        with contextlib.ExitStack() as stack:
            try:  # one cluster session for every target (its workers hold each target's suite)
                shared = stack.enter_context(start_many({p.target.id: (p.bound, p.client) for p in preps},
                                                        concurrency=concurrency))
            except BaseException:  # no cluster: nothing ran, release what the targets opened
                run_sync(release(preps))
                raise
            return run_sync(run_all(preps, shared))
    finally:
        if progress is not None:
            progress.close()
        if budget is not None:
            budget.release()
        warmup.join()


def _prepare(suite: Any, target: Target, out_dir: Path, *, bind: Callable[[Any], tuple[Any, Any]],
             concurrency: int, command: list[str], judge_config: Any) -> _Prepared:
    from ._suite import EVALUATOR_LABEL, build_manifest

    bound, client = bind(suite)
    run = TargetRun.open(target, out_dir, concurrency)
    manifest = build_manifest(bound, command=command, judge_config=judge_config)
    info = target_info(target)
    cfg = config_sha256(target)
    manifest.extra["target"] = {**info.model_dump(exclude_none=True), "config_sha256": cfg}
    manifest.extra["config_hash"] = text_sha256(str(manifest.extra.get("config_hash", "")) + cfg)
    manifest.system_under_test = info.model

    def on_error(c: Any, exc: BaseException, target: Target = target) -> Any:
        row = error_row(c.id, exc, evaluator=EVALUATOR_LABEL, category=c.category)
        return row.model_copy(update={"target": target_info(target)})

    path = out_dir / f"{target.id}.jsonl"
    target_batch = getattr(getattr(target, "client", None), "batch", None)
    if target_batch is not None:  # --batch: the target's jobs go in the manifest too, so a rerun resumes them
        target_batch.attach(manifest.extra.setdefault("batch_jobs", []),
                            save=lambda m=manifest, p=path: m.write(p))
    notes = [run.store.note] if run.store.note else []
    return _Prepared(target=target, run=run, manifest=manifest, info=info, path=path, bound=bound, client=client,
                     on_error=on_error, notes=notes, in_flight=_in_flight(target, client, concurrency))


class _Warmup:
    """Imports what the end of the run needs (numpy, for the targets table's intervals and paired test) in a
    thread while the run waits on the network, once the first case is done (never during start-up, whose imports
    are on the way to the first request). Third-party modules only: a thread importing referee's own modules
    could meet the main thread importing one of them halfway."""

    MODULES = ("numpy",)

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is not None or all(m in sys.modules for m in self.MODULES):
            return
        self._thread = threading.Thread(target=self._run, name="referee-warmup", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import importlib

        for m in self.MODULES:
            with contextlib.suppress(Exception):  # the main thread imports it again and reports any error
                importlib.import_module(m)

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join()


class _Tail:
    """Imports what the end of the run needs (the targets table: the aggregator and statistics, ~0.1 s) on this
    thread at the run's one idle moment: once every case of every target is generated, only judge calls remain,
    already in flight, and the event loop waits about a call's latency for them. An import there costs no wall
    time; after the last row it would add its whole length (and a thread importing referee's own modules could
    meet this one importing halfway)."""

    MODULES = ("referee.targets._compare", "referee.aggregate", "referee.stats", "referee.results._io")

    def __init__(self, ids: Sequence[str]) -> None:
        self.todo: dict[str, int | None] = dict.fromkeys(ids)
        self.generated: dict[str, int] = dict.fromkeys(ids, 0)
        self.fired = False

    def begin(self, tid: str, todo: int) -> None:
        self.todo[tid] = todo
        self._check()

    def generated_one(self, tid: str) -> None:
        self.generated[tid] += 1
        self._check()

    def _check(self) -> None:
        if self.fired or any(n is None or self.generated[t] < n for t, n in self.todo.items()):
            return
        self.fired = True
        # A moment later: the last generation's own judge call goes out first.
        asyncio.get_running_loop().call_later(0.02, self._import)

    def _import(self) -> None:
        import importlib

        for m in self.MODULES:
            with contextlib.suppress(Exception):  # imported again where needed, and any error reported there
                importlib.import_module(m)


async def _execute(prep: _Prepared, where: Any, *, show_progress: bool | None,
                   progress: TargetsProgress | None = None, warmup: _Warmup | None = None,
                   tail: _Tail | None = None) -> Outcome:
    from ._suite import EVALUATOR_LABEL

    tid = prep.target.id
    if tail is not None:
        prep.run.on_generated = lambda: tail.generated_one(tid)
    evaluate = prep.run.evaluator(where.evaluate, EVALUATOR_LABEL)
    if progress is not None or warmup is not None:
        inner = evaluate

        async def evaluate(case: Any) -> Any:
            try:
                return await inner(case)
            finally:
                if warmup is not None:
                    warmup.start()
                if progress is not None:
                    progress.advance(tid)

    def on_todo(n: int) -> None:
        if progress is not None:
            progress.begin(tid, n)
        if tail is not None:
            tail.begin(tid, n)

    try:
        return await execute_async(out=prep.path, manifest=prep.manifest, items=prep.bound.cases,
                                   key=lambda c: (c.id, None, None), evaluate=evaluate, on_error=prep.on_error,
                                   client=prep.client, concurrency=max(prep.in_flight, where.concurrency),
                                   label=f"{tid}: generating + judging", show_progress=show_progress,
                                   cleanup=prep.run.aclose, on_todo=on_todo)
    finally:
        if progress is not None:
            progress.finish(tid)


def _finish(prep: _Prepared, outcome: Outcome) -> TargetOutcome:
    if outcome.resume_note:
        prep.notes.append(outcome.resume_note)
    g = prep.run.stats
    outcome.manifest.extra["generation"] = {
        "generated": g.generated, "reused": g.reused, "failed": g.failed, "cost_usd": g.cost_usd,
        "provider_calls": g.calls, "cached_calls": g.cached_calls}
    judge_costs = [r.details.get("judge_cost_usd") for r in outcome.rows]
    outcome.manifest.extra["judge_cost_usd"] = (round(sum(c for c in judge_costs if c is not None), 10)
                                                if any(c is not None for c in judge_costs) else None)
    outcome.manifest.write(prep.path)
    return TargetOutcome(target=prep.info, results=prep.path, outputs=outputs_path(prep.path.parent, prep.target.id),
                         outcome=outcome, generation=g, notes=prep.notes)


@dataclass
class GenerationEstimate:
    """``referee run --dry-run`` for one target: calls, tokens and cost estimated from the filled prompts."""

    target: str
    kind: str
    model: str | None
    calls: int
    input_tokens: int | None
    max_output_tokens: int | None
    cost_usd: float | None
    price_source: str | None
    prices: tuple[float, float] | None

    def describe(self) -> str:
        head = f"  {self.target} ({self.model or self.kind}): {self.calls} call(s)"
        if self.input_tokens is None:
            return head + "; tokens and cost unknown (not a model target: it reports its own cost, if any)"
        text = (f"{head}, estimated input ~{self.input_tokens:,} tokens (4 characters per token), output at most "
                f"{self.max_output_tokens:,} tokens (max_tokens per call)")
        if self.cost_usd is None or self.prices is None:
            return text + ("; cost unknown: no public price (a local server or an unknown model; give the target input_price_per_mtok "
                           "and output_price_per_mtok)")
        return (text + f"; estimated cost at most ${self.cost_usd:.4f} ({self.price_source}, ${self.prices[0]:g} / "
                f"${self.prices[1]:g} per million input / output tokens)")


def estimate_generation(specs: Sequence[TargetSpec], cases: Sequence[Any], base: Path, *,
                        batch: bool = False) -> list[GenerationEstimate]:
    """What generating ``cases`` with each target would cost, without building a client, importing a module or
    calling anything: a model target's prompt (and system prompt) filled per case at 4 characters per token,
    its ``max_tokens`` per call as the output bound, priced by its own prices, else the public price database
    (as the judge's estimate). One call per case (per user turn of a ``turns:`` case); a tool loop's further
    steps and the earlier replies of a conversation are not counted, so the input is a lower bound there."""
    from .._util._image import images_in, strip_markers
    from ..cases._templates import fill
    from ..runner._image_tokens import image_tokens
    from ..runner._prices import BATCH_DISCOUNT, database_version, per_mtok
    from ..targets._kinds import case_inputs, user_turns
    from ..targets._loader import _read

    out = []
    for spec in specs:
        n_calls = 0
        if spec.kind != "model":
            for c in cases:
                n_calls += len(user_turns(c) or [c])
            out.append(GenerationEstimate(spec.id, spec.kind, None, n_calls, None, None, None, None, None))
            continue
        template = _read(base, spec.prompt, spec) if spec.prompt is not None else (spec.template or "")
        system = _read(base, spec.system_file, spec) if spec.system_file is not None else spec.system
        chars = 0
        for c in cases:
            image_chars = 0
            values = case_inputs(c)
            sys_chars = len(fill(system, values)) if system else 0
            sent = 0
            turns: list[str | None] = [None]
            turns = list(user_turns(c) or turns)
            for user in turns:
                text = fill(template, values if user is None else {**values, "input": user})
                sent += len(strip_markers(text))
                # Each call resends the conversation so far: its images too, counted by the provider's rule.
                image_chars += 4 * sum(image_tokens(spec.provider or "openai", spec.model, i) for i in images_in(text))
                chars += sys_chars + sent + image_chars
                n_calls += 1
        live_batch = batch and not spec.tools
        prices: tuple[float, float] | None = None
        source = None
        if spec.input_price_per_mtok is not None and spec.output_price_per_mtok is not None:
            prices, source = (spec.input_price_per_mtok, spec.output_price_per_mtok), "the target's prices"
            if live_batch:
                prices = (prices[0] * BATCH_DISCOUNT, prices[1] * BATCH_DISCOUNT)
        else:
            from ..providers import LOCAL_SERVERS

            name = spec.provider or "openai"
            prices = per_mtok(name, spec.model, base_url=spec.base_url or LOCAL_SERVERS.get(name), batch=live_batch)
            source = database_version()
        in_tokens, out_tokens = chars // 4, n_calls * spec.max_tokens
        cost = (round(in_tokens / 1e6 * prices[0] + out_tokens / 1e6 * prices[1], 10)
                if prices is not None else None)
        if prices is not None and live_batch:
            source = f"{source}, batch rate"
        out.append(GenerationEstimate(spec.id, spec.kind, f"{spec.provider or 'openai'} {spec.model}", n_calls,
                                      in_tokens, out_tokens, cost, source, prices))
    return out
