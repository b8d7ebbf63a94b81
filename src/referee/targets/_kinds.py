"""Running one target on one case: a model with a prompt (and its tool loop), an HTTP service, a Python callable or
a command. Every failure becomes ``Generation(error=...)``: the case gets an ``error`` row for that target, never
an empty output judged as bad.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import inspect
import json
import math
import os
import re
import shlex
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .._util._redact import redact_text
from ..cases._case import Case
from ..cases._templates import PLACEHOLDER_RE, case_values, fill
from ..errors import ProviderError, RefereeError, UserError
from ..providers._base import JudgeRequest, Message
from ..runner._client import COST_DECIMALS, JudgeClient
from ..trajectories._model import Step, Trajectory
from ._model import TargetSpec

if TYPE_CHECKING:
    from ..results._schema import Usage


class GenerationFailed(RefereeError):
    """One case could not be generated; the message is the reason recorded in its error row."""


@dataclass
class Generation:
    """What a target produced for one case, with its own cost (never the judge's)."""

    output: Any = None
    error: str | None = None
    latency_ms: float | None = None
    cost_usd: float | None = None
    usage: Usage | None = None
    trajectory: list[dict[str, Any]] | None = None
    """Tool calls made: the seed's step shape, or any recording ``trajectory_of`` reads (OpenAI / Anthropic
    messages, spans) when a callable or command returns one."""
    trajectory_format: str | None = None
    """The recording's format when known (``seed`` for referee's own tool loop); None: detected when read."""
    turns: list[dict[str, Any]] | None = None
    """The replayed conversation of a ``turns:`` case (user turns and the target's replies)."""
    reused: bool = False
    """Taken from an earlier run's outputs file: nothing was generated."""

    def trajectory_model(self) -> Trajectory | None:
        """The tool calls as referee's :class:`~referee.trajectories.Trajectory` (what the trajectory checks read),
        with the run's own tokens, cost and latency."""
        if self.trajectory is None:
            return None
        from ..trajectories import import_trajectory

        t = import_trajectory(self.trajectory, self.trajectory_format)
        t.final_output = self.output
        t.source_format = "target"
        if self.usage is not None:
            t.input_tokens, t.output_tokens = self.usage.input_tokens, self.usage.output_tokens
        t.cost_usd, t.latency_ms = self.cost_usd, self.latency_ms
        return t

    def to_record(self) -> dict[str, Any]:
        rec: dict[str, Any] = {}
        for k in ("output", "error", "latency_ms", "cost_usd", "trajectory", "turns"):
            v = getattr(self, k)
            if v is not None:
                rec[k] = v
        if self.usage is not None:
            rec["usage"] = self.usage.model_dump(exclude_defaults=True)
        return rec


# -- shared helpers ----------------------------------------------------------------------------------------

def import_attr(ref: str, what: str) -> Any:
    """``module:attr`` (attr may be dotted), as plugins are named; a failure is a UserError naming the reference."""
    from ..evaluators._plugins import import_dotted

    try:
        obj = import_dotted(ref)
    except UserError as exc:
        raise UserError(f"{what} {exc}") from exc
    if not callable(obj):
        raise UserError(f"{what} {ref}: is a {type(obj).__name__}, not a function")
    return obj


def file_sha256(path: Path) -> str:
    """A file's SHA-256, read 1 MiB at a time (a model file named in a command may be many GB)."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def source_sha256(fn: Any) -> str:
    """Identity of a callable: the code that runs (its code objects, defaults, closure values and the functions
    and constants of its module it names), and its source file when it has one. Code without a file (a notebook
    cell, ``exec``) is covered too, so a redefined function is a new version and never served old outputs."""
    h = hashlib.sha256()
    try:
        src = inspect.getsourcefile(fn)
        if src and Path(src).is_file():
            h.update(file_sha256(Path(src)).encode())
    except (TypeError, OSError):
        pass
    _digest_callable(fn, h, set(), 0)
    return h.hexdigest()


_PLAIN = (type(None), bool, int, float, complex, str, bytes)


def _digest_value(v: Any, h: Any, seen: set[int], depth: int) -> None:
    """A value the code reads: plain values by content, functions by their code, anything else by its type only
    (a repr may hold an address, which would make every run look like new code)."""
    if isinstance(v, _PLAIN):
        h.update(f"{type(v).__name__}:{v!r};".encode())
    elif isinstance(v, tuple | frozenset) and len(v) <= 1000:
        h.update(b"(")
        for item in (sorted(v, key=repr) if isinstance(v, frozenset) else v):
            _digest_value(item, h, seen, depth)
        h.update(b")")
    elif inspect.isfunction(v) or inspect.ismethod(v) or inspect.iscode(v):
        _digest_callable(v, h, seen, depth + 1)
    else:
        h.update(f"<{type(v).__module__}.{type(v).__qualname__}>;".encode())


def _digest_code(code: Any, h: Any, seen: set[int], depth: int, globs: dict[str, Any] | None,
                 module: str | None) -> None:
    h.update(code.co_code)
    h.update(repr((code.co_names, code.co_varnames, code.co_freevars, code.co_argcount,
                   code.co_kwonlyargcount, code.co_flags)).encode())
    for const in code.co_consts:
        if inspect.iscode(const):
            _digest_code(const, h, seen, depth, globs, module)  # nested functions, lambdas, comprehensions
        else:
            _digest_value(const, h, seen, depth)
    if globs is None or depth > 20:
        return
    for name in code.co_names:  # module-level helpers and constants it reads (a notebook's other cells)
        if name not in globs:
            continue
        g = globs[name]
        if isinstance(g, _PLAIN) or (inspect.isfunction(g) and getattr(g, "__module__", None) == module):
            h.update(f"global {name}=".encode())
            _digest_value(g, h, seen, depth)


def _digest_callable(fn: Any, h: Any, seen: set[int], depth: int) -> None:
    import functools

    if id(fn) in seen or depth > 20:
        return
    seen.add(id(fn))
    if isinstance(fn, functools.partial):
        _digest_callable(fn.func, h, seen, depth + 1)
        for a in (*fn.args, *sorted(fn.keywords.items())):
            _digest_value(a, h, seen, depth)
        return
    if inspect.ismethod(fn):
        fn = fn.__func__
    fn = inspect.unwrap(fn) if inspect.isfunction(fn) else fn
    if inspect.iscode(fn):
        _digest_code(fn, h, seen, depth, None, None)
        return
    if not inspect.isfunction(fn):
        call = inspect.getattr_static(type(fn), "__call__", None)  # a callable object: its class's __call__
        if inspect.isfunction(call):
            h.update(f"<{type(fn).__module__}.{type(fn).__qualname__}>".encode())
            _digest_callable(call, h, seen, depth + 1)
        else:
            h.update(f"<{type(fn).__module__}.{getattr(fn, '__qualname__', type(fn).__qualname__)}>".encode())
        return
    _digest_code(fn.__code__, h, seen, depth, fn.__globals__, fn.__module__)
    for v in (fn.__defaults__ or ()):
        _digest_value(v, h, seen, depth)
    for k, v in sorted((fn.__kwdefaults__ or {}).items()):
        h.update(k.encode())
        _digest_value(v, h, seen, depth)
    for cell in fn.__closure__ or ():
        try:
            v = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        _digest_value(v, h, seen, depth)


def missing_fields(template: str, values: dict[str, Any]) -> list[str]:
    return sorted({m.group(1) for m in PLACEHOLDER_RE.finditer(template)} - set(values))


def fill_strict(template: str, values: dict[str, Any], what: str, case: Case) -> str:
    miss = missing_fields(template, values)
    if miss:
        raise GenerationFailed(f"the {what} names field(s) {', '.join('{' + m + '}' for m in miss)} that case "
                               f"'{case.id}' does not have")
    return fill(template, values)


def case_inputs(case: Case) -> dict[str, Any]:
    """What a target sees of a case: never the recorded output it is about to replace."""
    values = case_values(case)
    for k in ("output", "final_output", "trajectory", "messages", "spans"):
        values.pop(k, None)
    return values


def user_turns(case: Case) -> list[str] | None:
    """The user turns of a ``turns:`` case, replayed in order (the recorded replies are the old system's)."""
    turns = case.turns
    if not turns:
        return None
    users = [t.get("content") for t in turns if t.get("role") == "user"]
    return [u if isinstance(u, str) else json.dumps(u, ensure_ascii=False) for u in users] or None


class Pacer:
    """Per-target concurrency and rate limit (generations started per second)."""

    def __init__(self, concurrency: int, rate: float | None) -> None:
        self._sem = asyncio.Semaphore(concurrency)
        self._interval = 1.0 / rate if rate else 0.0
        self._next = 0.0
        self._lock = asyncio.Lock()

    async def __aenter__(self) -> None:
        await self._sem.acquire()
        if self._interval:
            async with self._lock:
                now = time.monotonic()
                start = max(now, self._next)
                self._next = start + self._interval
            if start > now:
                await asyncio.sleep(start - now)

    async def __aexit__(self, *exc: object) -> None:
        self._sem.release()


# -- targets -----------------------------------------------------------------------------------------------

@dataclass
class Target(ABC):
    """A system under test built from its spec: ``generate(case)`` runs it on one case (paced by the run's
    concurrency and the spec's rate limit) and returns the output, or the failure as data."""

    spec: TargetSpec
    base_dir: Path = field(default_factory=Path)
    pacer: Pacer | None = None

    @property
    def id(self) -> str:
        return self.spec.id

    def identity(self) -> dict[str, Any]:
        """What decides the outputs (outputs generated under another identity are never reused)."""
        return self.spec.model_dump(mode="json", exclude={"description", "concurrency", "rate_limit", "timeout",
                                                          "max_retries"}, exclude_none=True)

    def info(self) -> dict[str, Any]:
        """target / prompt / model, recorded in every row and the manifest."""
        return {"id": self.id, "kind": self.spec.kind}

    def start(self, concurrency: int) -> None:
        """Called inside the run's event loop, before the first case."""
        client = getattr(self, "client", None)
        if client is not None and getattr(client, "batch", None) is not None:
            concurrency = 1 << 20  # batch mode: every case's request must reach the job; the provider paces
            self.pacer = Pacer(concurrency, self.spec.rate_limit)
            return
        self.pacer = Pacer(self.spec.concurrency or concurrency, self.spec.rate_limit)

    async def generate(self, case: Case) -> Generation:
        assert self.pacer is not None, "start() first"
        t0: float | None = None  # set once the pacer lets the call go: waiting in line is not the output's latency
        try:
            async with self.pacer:
                t0 = time.perf_counter()
                gen = await self._generate(case)
        except (GenerationFailed, ProviderError) as exc:
            return Generation(error=redact_text(str(exc), secrets=self.secrets()), latency_ms=_ms(t0))
        except (asyncio.CancelledError, KeyboardInterrupt, GeneratorExit):
            raise
        except BaseException as exc:  # noqa: BLE001 - the system under test failing (even exiting) is data
            return Generation(error=redact_text(f"{type(exc).__name__}: {exc}", secrets=self.secrets()),
                              latency_ms=_ms(t0))
        if gen.latency_ms is None:
            gen.latency_ms = _ms(t0)
        bad = non_finite_field(gen)
        if bad is not None:
            # Refused here, so a NaN or an Infinity is never judged, stored in an outputs file or reused.
            return Generation(error=f"the target returned a non-finite number (NaN or Infinity) in {bad}",
                              latency_ms=gen.latency_ms)
        if gen.error is None and (gen.output is None or gen.output == ""):
            gen.error = "the target produced no output"
        return gen

    @abstractmethod
    async def _generate(self, case: Case) -> Generation: ...

    def secrets(self) -> list[str]:
        """Values masked in every error this target records (credentials it sends)."""
        return []

    async def aclose(self) -> None:  # noqa: B027 - a hook with a safe default
        """Release connections."""


def non_finite_path(value: Any, path: str) -> str | None:
    """The path (``output.scores[1]``) of the first NaN or Infinity in a JSON-like value, else None."""
    stack = [(value, path)]
    while stack:
        v, p = stack.pop()
        if isinstance(v, float):
            if not math.isfinite(v):
                return p
        elif isinstance(v, dict):
            stack.extend((item, f"{p}.{k}") for k, item in reversed(list(v.items())))
        elif isinstance(v, list | tuple):
            stack.extend((item, f"{p}[{i}]") for i, item in reversed(list(enumerate(v))))
    return None


def non_finite_field(gen: Generation) -> str | None:
    """The first field of a generation holding a non-finite number (output, trajectory, turns, cost, latency)."""
    for k in ("cost_usd", "latency_ms", "output", "trajectory", "turns"):
        bad = non_finite_path(getattr(gen, k), k)
        if bad is not None:
            return bad
    if gen.usage is not None:
        return non_finite_path(gen.usage.model_dump(), "usage")
    return None


def _ms(t0: float | None) -> float | None:
    return None if t0 is None else round((time.perf_counter() - t0) * 1000, 3)


@dataclass
class ModelTarget(Target):
    """A model and a prompt template, through the shared judge client (retries, response cache, prices)."""

    client: JudgeClient | None = None
    template: str = ""
    system: str | None = None
    prompt_path: str | None = None
    tool_fn: Callable[..., Any] | None = None
    use_cache: bool = True

    def identity(self) -> dict[str, Any]:
        ident = super().identity()
        ident["template_sha256"] = hashlib.sha256(self.template.encode()).hexdigest()
        ident["system_sha256"] = hashlib.sha256((self.system or "").encode()).hexdigest()
        if self.tool_fn is not None:
            ident["tool_results_sha256"] = source_sha256(self.tool_fn)
        return ident

    def info(self) -> dict[str, Any]:
        assert self.client is not None
        return {**super().info(), "provider": self.client.provider.name, "model": self.client.provider.model,
                "prompt": self.prompt_path or "(inline template)"}

    async def _generate(self, case: Case) -> Generation:
        assert self.client is not None
        values = case_inputs(case)
        system = fill_strict(self.system, values, "system prompt", case) if self.system else None
        setup = case.get("setup")
        if isinstance(setup, dict) and isinstance(setup.get("system_prompt"), str):
            # A red-team case's setup: text the harness adds to the agent's system prompt (e.g. a secret).
            system = f"{system}\n\n{setup['system_prompt']}" if system else setup["system_prompt"]
        acc = _Acc(self.client)
        users = user_turns(case)
        conversation: list[dict[str, Any]] = []
        steps: list[dict[str, Any]] = []
        turns_out: list[dict[str, Any]] = []
        answer: Any = None
        for user in users if users is not None else [None]:
            vals = values if user is None else {**values, "input": user}
            text = fill_strict(self.template, vals, "prompt template", case)
            conversation.append({"role": "user", "content": text})
            answer = await self._reply(case, system, conversation, steps, acc)
            conversation.append({"role": "assistant", "content": answer})
            if user is not None:
                turns_out += [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]
        return Generation(output=answer, latency_ms=acc.latency(), cost_usd=acc.cost, usage=acc.usage(),
                          trajectory=steps if self.spec.tools else None,
                          trajectory_format="seed" if self.spec.tools else None, turns=turns_out or None)

    async def _reply(self, case: Case, system: str | None, conversation: list[dict[str, Any]],
                     steps: list[dict[str, Any]], acc: _Acc) -> str:
        assert self.client is not None
        sys_msgs = (Message("system", system),) if system else ()
        if not self.spec.tools:
            msgs = list(sys_msgs)
            for m in conversation:
                msgs.append(Message("user" if m["role"] == "user" else "assistant", str(m["content"])))
            req = JudgeRequest(messages=tuple(msgs), max_tokens=self.spec.max_tokens,
                               temperature=self.spec.temperature, seed=self.spec.seed)
            c = await self.client.complete(req, use_cache=self.use_cache)
            acc.add(c)
            return c.text
        from ._wire import ToolRequest

        tools = json.dumps([t.model_dump() for t in self.spec.tools], sort_keys=True)
        local = list(conversation)
        for _ in range(self.spec.max_steps):
            req = ToolRequest(messages=sys_msgs, max_tokens=self.spec.max_tokens, temperature=self.spec.temperature,
                              seed=self.spec.seed, conversation=json.dumps(local, ensure_ascii=False, sort_keys=True),
                              tools=tools)
            c = await self.client.complete(req, use_cache=self.use_cache)
            acc.add(c)
            turn = json.loads(c.text)
            calls = turn.get("tool_calls") or []
            if not calls:
                return str(turn.get("content") or "")
            local.append({"role": "assistant", "content": turn.get("content"), "tool_calls": calls})
            for call in calls:
                t0 = time.perf_counter()
                result, error = await self._tool_result(case, call)
                # Recorded as referee's own trajectory step (the seed shape it persists as), so every
                # trajectory check reads the run as it reads an imported one.
                steps.append(Step(
                    index=len(steps) + 1, tool=call["name"],
                    args=call["arguments"] if isinstance(call["arguments"], dict) else {},
                    result=None if error is not None else result, error=error, call_id=call["id"],
                    latency_ms=_ms(t0),
                    extra={} if isinstance(call["arguments"], dict) else {"raw_arguments": call["arguments"]},
                ).to_seed())
                local.append({"role": "tool", "tool_call_id": call["id"], "is_error": error is not None,
                              "content": {"error": error} if error is not None else result})
        raise GenerationFailed(f"the tool loop did not finish within max_steps={self.spec.max_steps} model calls "
                               f"({len(steps)} tool calls made)")

    async def _tool_result(self, case: Case, call: dict[str, Any]) -> tuple[Any, str | None]:
        name, args = call["name"], call["arguments"]
        if not isinstance(args, dict):
            return None, f"arguments are not a JSON object: {str(args)[:200]}"
        if self.tool_fn is not None:
            try:
                if inspect.iscoroutinefunction(self.tool_fn):
                    res = await self.tool_fn(name, args, dict(case.data))
                else:  # a tool that does I/O must not stall the other cases
                    res = await asyncio.to_thread(self.tool_fn, name, args, dict(case.data))
                    if inspect.isawaitable(res):
                        res = await res
            except Exception as exc:  # noqa: BLE001 - the tool failing is what the agent must handle
                return None, redact_text(f"{type(exc).__name__}: {exc}")
            return res, None
        return canned_result(case, name, args)


def canned_result(case: Case, name: str, args: dict[str, Any]) -> tuple[Any, str | None]:
    """The case's canned result for ``name`` called with ``args``.

    ``tool_results`` (or a red-team case's ``setup.tool_results``) maps a tool to its result for any arguments,
    or to a list of ``{args, result}`` (the entry whose ``args`` equal the call's, else one without ``args``).
    """
    table = case.get("tool_results")
    if table is None:
        setup = case.get("setup")
        table = setup.get("tool_results") if isinstance(setup, dict) else None
    if isinstance(table, dict) and name in table:
        value = table[name]
        if isinstance(value, list) and value and all(isinstance(e, dict) and "result" in e for e in value):
            want = json.dumps(args, sort_keys=True)
            default = None
            for e in value:
                given = e.get("args", e.get("arguments"))
                if given is None:
                    default = e
                elif json.dumps(given, sort_keys=True) == want:
                    return e["result"], None
            if default is not None:
                return default["result"], None
            return None, f"no canned result for {name} with arguments {want}"
        return value, None
    return None, f"no canned result for tool {name} in case '{case.id}' (tool_results)"


class _Acc:
    """Sums one generation's model calls: tokens, provider cost, the calls' own latencies (cache hits report the
    latency recorded when the reply was paid for, so a rerun's latency is the output's, not the cache's)."""

    def __init__(self, client: JudgeClient) -> None:
        self.client = client
        self.inp: int | None = None
        self.out: int | None = None
        self.calls = 0
        self.cached = 0
        self.lat = 0.0
        self.cost: float | None = None

    def add(self, c: Any) -> None:
        if c.input_tokens is not None:
            self.inp = (self.inp or 0) + c.input_tokens
        if c.output_tokens is not None:
            self.out = (self.out or 0) + c.output_tokens
        if c.cached:
            self.cached += 1
        else:
            self.calls += 1
        self.lat += c.latency_ms or 0.0
        cost = self.client.cost_of(c)
        if cost is not None:
            self.cost = round((self.cost or 0.0) + cost, COST_DECIMALS)

    def latency(self) -> float:
        return round(self.lat, 3)

    def usage(self) -> Usage:
        from ..results._schema import Usage

        return Usage(input_tokens=self.inp, output_tokens=self.out, calls=self.calls, cached_calls=self.cached)


def _call_args(fn: Callable[..., Any], case: dict[str, Any], inp: Any) -> tuple[Any, ...]:
    """(input), (case) or (input, case), by the callable's parameters: a first parameter named ``case`` gets the
    case, any other gets the input; a second positional parameter gets the case."""
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return (inp,)
    if not params:
        return ()
    if params[0].name == "case":
        return (case,)
    return (inp, case) if len(params) >= 2 else (inp,)


def _from_result(value: Any, what: str) -> Generation:
    """A callable's or command's result: text, a JSON value, or ``{"output": ..., trajectory?, cost_usd?,
    latency_ms?}`` (a mapping with an ``output`` key is a generation record)."""
    if value is None:
        raise GenerationFailed(f"{what} returned nothing (None)")
    if isinstance(value, dict) and "output" in value:
        gen = Generation(output=value["output"])
        for k in ("cost_usd", "latency_ms"):
            v = value.get(k)
            if isinstance(v, float) and not math.isfinite(v):
                raise GenerationFailed(f"{what} returned a non-finite {k} ({v!r}): expected a finite number")
            if isinstance(v, int | float) and not isinstance(v, bool) and v >= 0:
                setattr(gen, k, float(v))
        traj = value.get("trajectory", value.get("messages"))  # the agent's own recording, any known format
        if isinstance(traj, list):
            gen.trajectory = traj
        return gen
    return Generation(output=value)


def _in_thread(call: Callable[[], Any], name: str) -> asyncio.Future[Any]:
    """``call()`` on a daemon thread of its own: a call that hangs past its timeout is left behind without holding
    a pool's slot, and without keeping the interpreter from exiting (pool threads are joined at exit)."""
    import threading

    loop = asyncio.get_running_loop()
    fut: asyncio.Future[Any] = loop.create_future()

    def settle(value: Any, exc: BaseException | None) -> None:
        if not fut.done():
            if exc is not None:
                fut.set_exception(exc)
            else:
                fut.set_result(value)

    def run() -> None:
        try:
            value, exc = call(), None
        except BaseException as e:  # noqa: BLE001 - SystemExit too: it becomes the case's error
            value, exc = None, e
        try:
            loop.call_soon_threadsafe(settle, value, exc)
        except RuntimeError:
            pass  # the run ended (its loop closed) while this call was still going

    threading.Thread(target=run, name=name, daemon=True).start()
    return fut


async def _contained(call: Awaitable[Any], what: str) -> Any:
    """``await call``, with ``sys.exit()`` (or any BaseException that is not an interrupt or a cancellation)
    turned into the case's failure: it must not end the run, and asyncio re-raises it out of the event loop."""
    try:
        return await call
    except (Exception, KeyboardInterrupt, asyncio.CancelledError, GeneratorExit):
        raise
    except SystemExit as exc:
        raise GenerationFailed(f"{what} raised SystemExit ({exc.code!r}): a target must return, not exit") from exc
    except BaseException as exc:
        raise GenerationFailed(f"{what} raised {type(exc).__name__}: {exc}") from exc


@dataclass
class PythonTarget(Target):
    fn: Callable[..., Any] | None = None

    def identity(self) -> dict[str, Any]:
        return {**super().identity(), "source_sha256": source_sha256(self.fn)}

    def info(self) -> dict[str, Any]:
        return {**super().info(), "model": self.spec.python}

    async def _call(self, case_dict: dict[str, Any], inp: Any) -> Any:
        what = f"python target {self.spec.python}"
        limit = asyncio.timeout(self.spec.timeout)
        try:
            async with limit:
                return await _contained(self._call_once(case_dict, inp), what)
        except TimeoutError as exc:
            if not limit.expired():
                raise  # the callable's own TimeoutError: its message is the case's error
            raise GenerationFailed(f"{what} timed out after {self.spec.timeout:g} s") from exc

    async def _call_once(self, case_dict: dict[str, Any], inp: Any) -> Any:
        assert self.fn is not None
        args = _call_args(self.fn, case_dict, inp)
        if inspect.iscoroutinefunction(self.fn):
            return await self.fn(*args)
        import contextvars
        import functools

        call = functools.partial(contextvars.copy_context().run, self.fn, *args)
        res = await _in_thread(call, f"target-{self.id}")  # a blocking agent must not stall the other cases
        if inspect.isawaitable(res):
            res = await res
        return res

    async def _generate(self, case: Case) -> Generation:
        return await _replay(case, lambda d, i: self._call(d, i), f"python target {self.spec.python}")


async def _replay(case: Case, call: Callable[[dict[str, Any], Any], Any], what: str) -> Generation:
    """One call per case; for a ``turns:`` case one call per user turn, each seeing the conversation so far."""
    base = case_inputs(case)
    users = user_turns(case)
    if users is None:
        return _from_result(await call(base, case.input), what)
    history: list[dict[str, Any]] = []
    gen = Generation()
    cost = 0.0
    costs = False
    for u in users:
        res = _from_result(await call({**base, "input": u, "turns": [*history, {"role": "user", "content": u}]}, u),
                           what)
        if res.cost_usd is not None:
            cost += res.cost_usd
            costs = True
        reply = res.output if isinstance(res.output, str) else json.dumps(res.output, ensure_ascii=False)
        history += [{"role": "user", "content": u}, {"role": "assistant", "content": reply}]
        gen.output = res.output
    gen.turns = history
    gen.cost_usd = round(cost, COST_DECIMALS) if costs else None
    return gen


MAX_COMMAND_OUTPUT = 64 * 2**20
"""A command printing more than this many bytes on stdout is stopped (its process group killed) and the case is an
error row: a runaway printer must not take referee's memory with it."""
_STDERR_TAIL = 64 * 1024
"""Of stderr only the last bytes are kept (the error row shows its tail)."""
_PIPE_GRACE_S = 0.5
"""Once the command has exited, how long its pipes may stay open (held by a child it left running) before what it
printed is taken as its output."""


class _OutputTooLarge(Exception):
    pass


class _ExitWatch(asyncio.subprocess.SubprocessStreamProtocol):
    """asyncio's protocol for a subprocess, telling when the process exits: ``Process.wait()`` also waits for
    every pipe to close, which a grandchild may hold open forever."""

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self.exited: asyncio.Future[None] = loop.create_future()

    def process_exited(self) -> None:
        super().process_exited()
        if not self.exited.done():
            self.exited.set_result(None)


async def _exchange(proc: asyncio.subprocess.Process, exited: asyncio.Future[None], data: bytes,
                    limit: int) -> tuple[bytes, bytes]:
    """Feed stdin, read stdout (at most ``limit`` bytes, else :class:`_OutputTooLarge`) and the tail of stderr
    until the command exits; never waits for pipes a leftover child holds open."""
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    stdin, stdout, stderr = proc.stdin, proc.stdout, proc.stderr
    out = bytearray()
    err = bytearray()

    async def feed() -> None:
        try:
            stdin.write(data)
            await stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the command did not read its input: its exit status and output say the rest
        finally:
            stdin.close()

    async def read_out() -> None:
        while chunk := await stdout.read(1 << 16):
            if len(out) + len(chunk) > limit:
                raise _OutputTooLarge
            out.extend(chunk)

    async def read_err() -> None:
        while chunk := await stderr.read(1 << 16):
            err.extend(chunk)
            if len(err) > _STDERR_TAIL:
                del err[:-_STDERR_TAIL]

    loop = asyncio.get_running_loop()
    feeder = asyncio.ensure_future(feed())
    ex = asyncio.ensure_future(asyncio.shield(exited))
    pending: set[asyncio.Future[None]] = {asyncio.ensure_future(read_out()), asyncio.ensure_future(read_err()), ex}
    deadline: float | None = None
    try:
        while pending:
            wait = None if deadline is None else max(0.0, deadline - loop.time())
            done, pending = await asyncio.wait(pending, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
            for t in done:
                if t.exception() is not None:
                    raise t.exception()  # type: ignore[misc]
            if ex.done() and deadline is None:
                deadline = loop.time() + _PIPE_GRACE_S
            if deadline is not None and loop.time() >= deadline:
                break
    finally:
        for t in (*pending, feeder):
            t.cancel()
    return bytes(out), bytes(err)


async def _end(proc: asyncio.subprocess.Process, transport: asyncio.BaseTransport,
               exited: asyncio.Future[None]) -> None:
    """Kill what is left of the command's process group, reap the command, and close referee's ends of its
    pipes."""
    import signal

    try:
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)
        elif proc.returncode is None:
            proc.kill()  # no process groups on this platform
    except (ProcessLookupError, PermissionError):
        pass  # the group is gone already
    if not exited.done():  # killed just now (a timeout, a flood): reaped, not left behind as a zombie
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(exited), _PIPE_GRACE_S * 10)
    transport.close()  # pipes a child outside the group still holds: nothing more is read from them


@dataclass
class ExecTarget(Target):
    argv: list[str] = field(default_factory=list)

    def identity(self) -> dict[str, Any]:
        # Scripts named in the command are part of what it is: changed code is never served old outputs.
        files = [file_sha256(self.base_dir / a) for a in self.argv
                 if (self.base_dir / a).is_file() and not a.startswith("/usr")]
        return {**super().identity(), "files_sha256": files}

    def info(self) -> dict[str, Any]:
        from .._util._redact import redact_argv

        # Recorded in every row: a URL with user:password@ or a token in the command is masked.
        return {**super().info(), "model": shlex.join(redact_argv(self.argv))}

    async def _run(self, case_dict: dict[str, Any], _inp: Any) -> Any:
        try:
            data = json.dumps(case_dict, ensure_ascii=False, allow_nan=False).encode()
        except ValueError as exc:  # a bare NaN is not JSON: the command's parser may refuse it, or misread it
            raise GenerationFailed("the case holds a NaN or an Infinity, which JSON cannot carry to the "
                                   "command") from exc
        limit = MAX_COMMAND_OUTPUT
        loop = asyncio.get_running_loop()
        pipe = asyncio.subprocess.PIPE
        try:
            # Its own process group: a timeout or a flood kills the wrapper (sh -c, uv run, npm start) and what it
            # started, not just the direct child.
            transport, protocol = await loop.subprocess_exec(
                lambda: _ExitWatch(1 << 16, loop), *self.argv, stdin=pipe, stdout=pipe, stderr=pipe,
                cwd=str(self.base_dir), start_new_session=True)
        except OSError as exc:
            raise GenerationFailed(f"cannot start {self.argv[0]}: {exc.strerror or exc}") from exc
        proc = asyncio.subprocess.Process(transport, protocol, loop)
        try:
            out, err = await asyncio.wait_for(_exchange(proc, protocol.exited, data, limit),
                                              timeout=self.spec.timeout)
        except TimeoutError as exc:
            raise GenerationFailed(f"the command timed out after {self.spec.timeout:g}s") from exc
        except _OutputTooLarge as exc:
            raise GenerationFailed(f"the command's output larger than {limit} bytes (stopped)") from exc
        finally:
            await _end(proc, transport, protocol.exited)
        if proc.returncode != 0:
            tail = err.decode("utf-8", "replace").strip()[-300:]
            raise GenerationFailed(f"the command exited {proc.returncode}" + (f": {tail}" if tail else ""))
        text = out.decode("utf-8", "replace").strip()
        if not text:
            raise GenerationFailed("the command printed nothing on stdout")
        if text[:1] == "{":
            try:
                obj = json.loads(text)
            except json.JSONDecodeError:
                return text
            if isinstance(obj, dict) and "output" in obj:
                return obj
        return text

    async def _generate(self, case: Case) -> Generation:
        return await _replay(case, self._run, "the command")


_ENV_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _fill_json(value: Any, values: dict[str, Any], case: Case) -> Any:
    """Every string of a JSON body is a template; a string that is exactly ``{field}`` takes the field's value
    with its JSON type (a list stays a list)."""
    if isinstance(value, str):
        m = PLACEHOLDER_RE.fullmatch(value)
        if m:
            if m.group(1) not in values:
                fill_strict(value, values, "http body", case)
            return values[m.group(1)]
        return fill_strict(value, values, "http body", case)
    if isinstance(value, dict):
        return {k: _fill_json(v, values, case) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill_json(v, values, case) for v in value]
    return value


def dig(data: Any, path: str) -> Any:
    """``reply.text`` / ``choices.0.message.content`` in a JSON value; raises GenerationFailed naming the step."""
    cur = data
    done: list[str] = []
    for part in path.split(".") if path else []:
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.lstrip("-").isdigit() and -len(cur) <= int(part) < len(cur):
            cur = cur[int(part)]
        else:
            where = ".".join(done) or "the reply"
            raise GenerationFailed(f"the reply has no '{path}' ({where} has no '{part}')")
        done.append(part)
    return cur


@dataclass
class HttpTarget(Target):
    headers: dict[str, str] = field(default_factory=dict)
    _session: Any = None

    def info(self) -> dict[str, Any]:
        from .._util._redact import redact_url

        assert self.spec.http is not None
        return {**super().info(), "model": redact_url(self.spec.http.url)}

    async def _generate(self, case: Case) -> Generation:
        return await _replay(case, self._call, "the HTTP target")

    def secrets(self) -> list[str]:
        # A service that echoes the credentials it was sent (a 401 body) must not put them in an error row.
        from .._util._redact import url_secrets

        out = []
        for v in self.headers.values():
            out.append(v)
            out += [part for part in v.split() if len(part) >= 6]
        assert self.spec.http is not None
        return out + url_secrets(self.spec.http.url)  # user:password@ is sent as a Basic header

    async def _call(self, case_dict: dict[str, Any], _inp: Any) -> Any:
        import aiohttp

        from ..providers._http import (
            _RETRYABLE_STATUS,
            RedirectRefused,
            ReplyTooLarge,
            fetch,
            max_reply_bytes,
            parse_retry_after,
        )
        from ..runner._client import RetryPolicy

        http = self.spec.http
        assert http is not None
        c = Case(id=str(case_dict.get("id", "")), data=case_dict)
        # URL placeholders are filled percent-encoded: a case value cannot add a path, a query or a host.
        fill_strict(http.url, case_dict, "http url", c)  # a field the case lacks: an error row
        url = PLACEHOLDER_RE.sub(lambda m: quote(str(case_dict[m.group(1)]), safe=""), http.url)
        body = _fill_json(http.body, case_dict, c) if http.body is not None else None
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=http.timeout),
                                                  headers=self.headers)
        policy = RetryPolicy(max_retries=http.max_retries)
        attempt = 0
        while True:
            retry_after = None
            try:
                # The service's headers carry the user's ${VAR} secrets: a redirect to another origin (an SSO
                # gateway's login host, another private address) is an error row, never followed with them.
                reply = await fetch(self._session, http.method, url, limit=max_reply_bytes(), json=body)
                text = reply.text()
                status = reply.status
                retry_after = parse_retry_after(reply.headers.get("Retry-After"))
            except (ReplyTooLarge, RedirectRefused) as exc:
                raise GenerationFailed(f"{http.method} {self.info()['model']}: {exc}") from None
            except (TimeoutError, aiohttp.ClientError) as exc:
                problem = ("timed out" if isinstance(exc, TimeoutError)
                           else f"cannot reach the service ({type(exc).__name__}: {exc})")
                status, text = None, problem
            if status is not None and status < 400:
                break
            retryable = status is None or status in _RETRYABLE_STATUS
            if not retryable or attempt >= policy.max_retries:
                what = f"HTTP {status}: {text[:200]}" if status is not None else text
                raise GenerationFailed(f"{http.method} {self.info()['model']}: {what}")
            await asyncio.sleep(policy.delay(attempt, retry_after))
            attempt += 1
        if not http.output:
            try:
                return json.loads(text)
            except json.JSONDecodeError:
                return text
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise GenerationFailed(f"the reply is not JSON, so it has no '{http.output}': {text[:120]!r}") from exc
        return dig(data, http.output)

    async def aclose(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None


def env_headers(headers: dict[str, str]) -> dict[str, str]:
    """``${VAR}`` in header values from the environment; an unset variable is a usage error (before any call)."""
    out = {}
    for k, v in headers.items():
        missing = [n for n in _ENV_RE.findall(v) if n not in os.environ]
        if missing:
            raise UserError(f"http header {k}: environment variable {missing[0]} is not set")
        out[k] = _ENV_RE.sub(lambda m: os.environ[m.group(1)], v)
    return out
