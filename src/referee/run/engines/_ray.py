"""The Ray engine: cases sharded over the CPUs of a Ray cluster, rows streamed back to the one writer.

Layout of one run:

- one ``_CaseWorker`` actor per CPU of the cluster (``num_cpus=1``): it holds the suite and evaluates
  whole cases, so CPU-heavy checks (the ``python`` sandbox, embeddings, trajectory replays) run there, one
  sandbox at a time per CPU;
- one ``_Hub`` actor pinned to this machine's node: the provider call permits of the whole run (at most
  ``concurrency`` calls in flight and ``rpm`` starts per minute per provider, across every worker) and the
  response cache (this machine's ``.referee/cache.sqlite``, so a rerun hits the same cache as a local run);
- this process keeps the results file, the manifest and the totals: a worker returns each row (and its
  judge client's call counters), and the runner writes it as it would a local row.

Judge clients cannot travel (a SQLite connection, an HTTP session): while the suite is sent, each one is
replaced by its recipe (provider, retry policy, prices) and rebuilt on the worker around the hub.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import socket
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from ...errors import MissingExtraError, UserError
from ...providers._base import Completion, JudgeRequest, Provider
from ...runner._cache import ResponseCache, cache_key
from ...runner._client import COST_DECIMALS, CallStats, JudgeClient, RetryPolicy
from . import Engine, EngineRun, _check_rpm
from ._limiter import Limiter, limit_provider

CONNECT_TIMEOUT_S = 3.0
"""An address that does not answer within this is unreachable: exit 2 at once, not after Ray's retries."""
START_TIMEOUT_S = 180.0
MAX_RESTARTS = 5
WIRE = 1
"""What the driver and its workers exchange; a worker whose referee speaks another version is refused at start."""


def import_ray() -> Any:
    # Ray reports usage statistics to the internet unless told not to; referee never lets it.
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError as exc:
        raise MissingExtraError("ray", "ray", "--engine ray") from exc
    return ray


def check_reachable(address: str) -> None:
    """A TCP connect to the head's port, so a wrong or down address fails in seconds with one line."""
    if address in ("auto", "local"):
        return
    target = address.rstrip("/")
    host, sep, port_text = target.rpartition(":")
    if not sep or "]" in port_text:
        host, port_text = target, "6379"
    host = host.strip("[]")
    try:
        port = int(port_text)
    except ValueError:
        raise UserError(f"--engine ray={address}: the port {port_text!r} is not a number "
                        "(give HOST:PORT of the cluster's head, e.g. ray=10.0.0.5:6379)") from None
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:
        why = exc.strerror or str(exc) or type(exc).__name__
        raise UserError(f"cannot reach the Ray cluster at {address}: {why} (start one with `ray start --head`, "
                        "or check the address and port)") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


# -- on the workers ---------------------------------------------------------------------------------------

class _HubPermits:
    """Permits from the hub actor (see ``_limiter.Permits``)."""

    def __init__(self, hub: Any) -> None:
        self._hub = hub

    async def acquire(self, key: str) -> None:
        await self._hub.acquire.remote(key)

    def release(self, key: str) -> None:
        self._hub.release.remote(key)


class _HubClient(JudgeClient):
    """A judge client whose cache is the hub's (this machine's cache file) instead of a local file."""

    def __init__(self, provider: Provider, *, hub: Any, hub_cache: bool, retry: RetryPolicy,
                 input_price_per_mtok: float | None, output_price_per_mtok: float | None) -> None:
        super().__init__(provider, cache=None, retry=retry, input_price_per_mtok=input_price_per_mtok,
                         output_price_per_mtok=output_price_per_mtok)
        self._hub = hub
        self._hub_cache = hub_cache

    async def complete(self, request: JudgeRequest, *, use_cache: bool = True) -> Completion:
        if not (use_cache and self._hub_cache):
            return await super().complete(request, use_cache=False)
        key = cache_key(self.provider.describe(), request)
        hit = await self._hub.cache_get.remote(key)
        if hit is not None:
            self.stats.cached += 1
            return hit  # type: ignore[no-any-return]
        completion = await super().complete(request, use_cache=False)
        await self._hub.cache_put.remote(key, completion)
        return completion


_WORKER_CLIENTS: dict[str, JudgeClient] = {}
"""In a worker process: the client rebuilt for each driver client (by token), shared by its evaluators."""


def _rebuild_client(state: dict[str, Any]) -> JudgeClient:
    token = state["token"]
    client = _WORKER_CLIENTS.get(token)
    if client is None:
        import ray

        hub = ray.get_actor(state["hub"])
        provider: Provider = state["provider"]
        limit_provider(provider, _HubPermits(hub))
        client = _WORKER_CLIENTS[token] = _HubClient(
            provider, hub=hub, hub_cache=state["cache"], retry=state["retry"],
            input_price_per_mtok=state["input_price"], output_price_per_mtok=state["output_price"])
    return client


def _stats_of(run_id: str) -> dict[str, dict[str, Any]]:
    return {t: dataclasses.asdict(c.stats) for t, c in _WORKER_CLIENTS.items() if t.startswith(run_id)}


class _CaseWorker:
    """Evaluates whole cases on one CPU of the cluster."""

    def __init__(self, suites: dict[Any, Any], run_id: str) -> None:
        from .._case import CaseEvaluator

        self._run_id = run_id
        # One sandboxed check at a time: this actor holds one CPU of the cluster (whichever suite it is for).
        slots = asyncio.Semaphore(1)
        # One suite per key: a session shared by a suite's targets holds each target's bound suite.
        self._ces = {key: CaseEvaluator(suite, code_slots=slots) for key, suite in suites.items()}
        self._instance = uuid.uuid4().hex  # a restarted worker counts its calls afresh
        self._seq = 0

    async def ready(self) -> dict[str, Any]:
        from ..._version import __version__

        return {"host": socket.gethostname(), "wire": WIRE, "referee": __version__}

    async def evaluate(self, case: Any, key: Any = None) -> tuple[Any, str, int, dict[str, dict[str, Any]]]:
        row = await self._ces[key].evaluate(case)
        self._seq += 1
        return row, self._instance, self._seq, _stats_of(self._run_id)

    async def close(self) -> None:
        for token, client in list(_WORKER_CLIENTS.items()):
            if token.startswith(self._run_id):
                with contextlib.suppress(Exception):
                    await client.aclose()
                _WORKER_CLIENTS.pop(token, None)


class _Hub:
    """The run's provider permits and response cache, on the driver's node."""

    def __init__(self, cache_path: str | None, concurrency: int, rpm: float | None) -> None:
        self._limiter = Limiter(concurrency=concurrency, rpm=rpm)
        self._cache = ResponseCache(cache_path) if cache_path else None

    async def acquire(self, key: str) -> None:
        await self._limiter.acquire(key)

    async def release(self, key: str) -> None:
        self._limiter.release(key)

    async def cache_get(self, key: str) -> Completion | None:
        return self._cache.get(key) if self._cache is not None else None

    async def cache_put(self, key: str, completion: Completion) -> None:
        if self._cache is not None:
            self._cache.put(key, completion)

    async def close(self) -> None:
        if self._cache is not None:
            self._cache.close()


def _modules_under(folder: Path) -> list[ModuleType]:
    """Imported modules whose file is in ``folder`` (a suite's own plugins), never referee or installed ones."""
    try:
        root = folder.resolve()
    except OSError:
        return []
    found = []
    for name, mod in list(sys.modules.items()):
        file = getattr(mod, "__file__", None)
        if not file or name.split(".")[0] == "referee" or "-packages" in file:
            continue
        try:
            if Path(file).resolve().is_relative_to(root):
                found.append(mod)
        except (OSError, ValueError):
            continue
    return found


# -- on the driver ----------------------------------------------------------------------------------------

class RayEngine(Engine):
    """Shard cases over a Ray cluster.

    ``address``: ``None`` starts a local cluster (or joins the one ``RAY_ADDRESS`` names), ``"auto"`` joins
    the cluster ``ray start`` runs on this machine, ``"HOST:PORT"`` a head's address. A Ray already
    initialised in this process (``ray.init`` by the caller) is used as it is. ``num_cpus`` sizes a local
    cluster; ``workers`` caps the worker actors (default: one per CPU). ``rpm``: provider call starts
    per minute per provider, across the cluster; ``concurrency`` (the run's) bounds provider calls in flight.
    """

    name = "ray"

    def __init__(self, address: str | None = None, *, rpm: float | None = None, num_cpus: int | None = None,
                 workers: int | None = None) -> None:
        _check_rpm(rpm)
        if address and address.startswith("ray://"):
            raise UserError(f"--engine ray={address}: Ray client addresses (ray://) are not supported; run referee "
                            "on a node of the cluster with ray=auto or ray=HOST:PORT")
        if workers is not None and workers < 1:
            raise UserError(f"workers must be >= 1, not {workers}")
        self.address = address
        self.rpm = rpm
        self.num_cpus = num_cpus
        self.workers = workers
        self._watchdog: list[Any] = []

    def describe(self) -> str:
        return f"ray={self.address}" if self.address else "ray"

    def _connect(self, ray: Any) -> bool:
        """Connect (or start a local cluster); True when this engine owns the connection."""
        address = self.address or os.environ.get("RAY_ADDRESS") or None
        if address:
            check_reachable(address)
        if ray.is_initialized():
            return False
        from ._ray_local import LOOPBACK, enable_token_auth_for_address, loopback_node, tracking_new_children

        kwargs: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.ERROR}
        local = address in (None, "local")
        if local:
            # A cluster of this machine alone: every process on loopback, none outliving referee (_ray_local).
            kwargs.update(num_cpus=self.num_cpus, include_dashboard=False, _node_ip_address=LOOPBACK,
                          dashboard_host=LOOPBACK)
        else:
            enable_token_auth_for_address()
        try:
            if local:
                # "local" always starts a cluster of our own: with None, Ray joins whatever cluster another
                # program (a `ray start --head`, another checkout's run) left on this machine.
                with tracking_new_children() as self._watchdog, loopback_node():
                    ray.init(address="local", **kwargs)
            else:
                ray.init(address=address, **kwargs)
        except Exception as exc:  # noqa: BLE001 - whatever Ray raises, the user sees one line
            where = f"the Ray cluster at {address}" if address else "a local Ray cluster"
            raise UserError(f"cannot connect to {where}: {_first_line(exc)}") from None
        return True

    @contextlib.contextmanager
    def start(self, suite: Any, *, client: JudgeClient | None, concurrency: int) -> Iterator[EngineRun]:
        with self.start_many({None: (suite, client)}, concurrency=concurrency) as runs:
            yield runs[None]

    @contextlib.contextmanager
    def start_many(self, suites: dict[Any, tuple[Any, JudgeClient | None]], *,
                   concurrency: int) -> Iterator[dict[Any, EngineRun]]:
        """One cluster session for several suites at once (a suite's targets side by side, each with its suite
        bound to its own judge client): one set of workers holding every suite, one permit actor, so
        ``concurrency`` and ``rpm`` bound the calls of all of them together. Each key gets its own
        :class:`EngineRun`; each judge client gets its own call counters back from the workers."""
        clients_given = [c for _, c in suites.values() if c is not None]
        if any(getattr(c, "batch", None) is not None for c in clients_given):
            # A batch job is submitted and polled from one place, and its cases wait on the provider, not on CPU.
            raise UserError("--batch runs on the local engine: drop --engine ray (or --batch)")
        client = next((c for c in clients_given if c.cache is not None), None)
        n_cases = sum(len(s.cases) for s, _ in suites.values())
        ray = import_ray()
        owned = self._connect(ray)
        actors: list[Any] = []
        hub = None
        try:
            cpus = int(ray.cluster_resources().get("CPU", 0))
            if cpus < 1:
                raise UserError("the Ray cluster has no CPU for referee's workers")
            # One worker per CPU of the cluster (the CPUs an earlier run's workers held free up as they exit).
            n = max(1, min(self.workers or cpus, cpus, n_cases or 1))
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            here = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=False)
            cache_path = (str(Path(client.cache.path).resolve())
                          if client is not None and client.cache is not None else None)
            run_id = uuid.uuid4().hex
            # Named, so the workers look it up (a handle inside their constructor arguments would make Ray keep
            # those arguments in its object store, and warn about restarts on every run).
            hub_name = f"referee-hub-{run_id}"
            hub = ray.remote(_Hub).options(num_cpus=0, max_concurrency=100_000, scheduling_strategy=here,
                                           name=hub_name).remote(cache_path, concurrency, self.rpm)
            clients: dict[str, JudgeClient] = {}

            def recipe(c: JudgeClient) -> dict[str, Any]:
                token = f"{run_id}:{id(c)}"
                clients[token] = c
                return {"token": token, "provider": c.provider, "retry": c.retry, "cache": c.cache is not None,
                        "input_price": c.input_price, "output_price": c.output_price, "hub": hub_name}

            ray.util.register_serializer(JudgeClient, serializer=recipe, deserializer=_rebuild_client)
            # Plugin modules beside the suite file travel with it (workers elsewhere do not have that folder).
            beside = list({m.__name__: m for s, _ in suites.values()
                           for m in _modules_under(Path(s.base_dir))}.values())
            for mod in beside:
                ray.cloudpickle.register_pickle_by_value(mod)
            # A worker whose process dies (a plugin that exits, a lost node) is restarted (with the suite it was
            # created with: sent with each creation, not kept in the object store where a restart could lose it).
            worker = ray.remote(_CaseWorker).options(num_cpus=1, max_restarts=MAX_RESTARTS, max_task_retries=0)
            shipped = {key: dataclasses.replace(s, cases=[]) for key, (s, _) in suites.items()}
            try:
                actors = [worker.remote(shipped, run_id) for _ in range(n)]
            except Exception as exc:  # noqa: BLE001
                raise UserError(f"the suite cannot be sent to the Ray workers: {_first_line(exc)}") from None
            finally:
                ray.util.deregister_serializer(JudgeClient)
                for mod in beside:
                    with contextlib.suppress(Exception):
                        ray.cloudpickle.unregister_pickle_by_value(mod)
            try:
                answers = ray.get([a.ready.remote() for a in actors], timeout=START_TIMEOUT_S)
            except ray.exceptions.GetTimeoutError:
                raise UserError(f"the Ray workers did not start within {START_TIMEOUT_S:.0f}s "
                                "(is the cluster busy?)") from None
            except ray.exceptions.RayError as exc:
                cause = getattr(exc, "cause", None) or exc
                raise UserError(f"the Ray workers could not load the suite: {_first_line(cause)} (plugins and "
                                "files the suite uses must be importable/readable on every node)") from None
            odd = [a for a in answers if not isinstance(a, dict) or a.get("wire") != WIRE]
            if odd:
                from ..._version import __version__

                theirs = odd[0].get("referee", "an older version") if isinstance(odd[0], dict) else "an older version"
                raise UserError(f"the Ray workers run another referee ({theirs}) than this one ({__version__}): "
                                "install the same referee on every node of the cluster")
            for_key = self._evaluator(ray, actors, clients)
            yield {key: EngineRun(evaluate=for_key(key), concurrency=max(concurrency, 2 * n)) for key in suites}
        finally:
            self._stop(ray, actors, hub, owned)

    @staticmethod
    def _evaluator(ray: Any, actors: list[Any], clients: dict[str, JudgeClient]) -> Any:
        """``for_key(key)``: the per-case coroutine of one suite of the session; the workers, their load and the
        call counters are shared by every key."""
        inflight = [0] * len(actors)
        latest: dict[str, tuple[int, dict[str, dict[str, Any]]]] = {}
        # A panel's judges have clients of their own (``JudgeClient.members``) whose calls count in the run
        # client's totals: their workers' counters are folded into it, from zero (their stats object was the
        # run client's, so its starting counts are the run client's already).
        token_of = {id(c): t for t, c in clients.items()}
        members = {t: [token_of[id(m)] for m in c.members if id(m) in token_of] for t, c in clients.items()}
        member_tokens = {m for ms in members.values() for m in ms}
        base = {t: CallStats() if t in member_tokens else dataclasses.replace(c.stats) for t, c in clients.items()}

        def add_stats() -> None:
            # Each worker's counters are cumulative: the driver's client shows its own plus every worker's.
            for token, client in clients.items():
                if token in member_tokens:
                    continue
                total = dataclasses.replace(base[token])
                for t in (token, *members[token]):
                    for _, snap in latest.values():
                        s = snap.get(t)
                        if s is None:
                            continue
                        for f in dataclasses.fields(CallStats):
                            setattr(total, f.name, getattr(total, f.name) + s[f.name])
                total.cost_usd = round(total.cost_usd, COST_DECIMALS)
                client.stats = total
                for t in members[token]:
                    clients[t].stats = total  # as in a local run: one set of counts for the run

        reserved: set[int] = set()
        dead: set[int] = set()
        died = getattr(ray.exceptions, "ActorDiedError", ())  # for good, as opposed to restarting

        async def pick() -> int:
            while True:
                free = [k for k in range(len(actors)) if k not in reserved and k not in dead]
                if free:
                    return min(free, key=inflight.__getitem__)
                if len(dead) == len(actors):
                    raise RuntimeError("every Ray worker of this run has died")
                await asyncio.sleep(0.05)

        async def idle_and_alive(i: int) -> bool:
            """Wait until worker ``i`` has nothing in flight and answers (a restart takes a moment)."""
            while inflight[i]:
                await asyncio.sleep(0.05)
            deadline = time.monotonic() + START_TIMEOUT_S
            while True:
                try:
                    await actors[i].ready.remote()
                    return True
                except died:
                    dead.add(i)
                    return False
                except ray.exceptions.RayActorError:
                    if time.monotonic() > deadline:
                        dead.add(i)
                        return False
                    await asyncio.sleep(0.2)

        async def evaluate(case: Any, key: Any) -> Any:
            # A case whose worker died is tried once more, alone on a live worker: if it was the case that
            # killed its worker, it takes no other case down with it; if it only shared it, it gets its row.
            alone = False
            while True:
                i = await pick()
                mine = alone  # this attempt holds worker i for itself
                if mine:
                    reserved.add(i)
                try:
                    if alone and not await idle_and_alive(i):
                        continue
                    inflight[i] += 1
                    try:
                        row, instance, seq, stats = await actors[i].evaluate.remote(case, key)
                        break
                    finally:
                        inflight[i] -= 1
                except ray.exceptions.RayTaskError as exc:
                    cause = getattr(exc, "cause", None)
                    # The worker's own exception, so a fatal provider error stops the run as it does locally.
                    raise (cause if isinstance(cause, BaseException) else RuntimeError(_first_line(exc))) from None
                except ray.exceptions.RayActorError as exc:
                    if alone:
                        raise RuntimeError("the Ray worker evaluating this case died, also with the case alone "
                                           f"on it: {_first_line(exc)}") from None
                    alone = True
                finally:
                    if mine:
                        reserved.discard(i)
            if seq > latest.get(instance, (0, {}))[0]:
                latest[instance] = (seq, stats)
                add_stats()
            return row

        def for_key(key: Any) -> Any:
            async def evaluate_one(case: Any) -> Any:
                return await evaluate(case, key)

            return evaluate_one

        return for_key

    def _stop(self, ray: Any, actors: list[Any], hub: Any, owned: bool) -> None:
        with contextlib.suppress(Exception):
            ray.get([a.close.remote() for a in actors], timeout=10)
        for a in actors:
            with contextlib.suppress(Exception):
                ray.kill(a)
        if hub is not None:
            with contextlib.suppress(Exception):
                ray.get(hub.close.remote(), timeout=10)
            with contextlib.suppress(Exception):
                ray.kill(hub)
        if owned:
            with contextlib.suppress(Exception):
                ray.shutdown()
            from ._ray_local import stop_watchdog

            stop_watchdog(self._watchdog)
