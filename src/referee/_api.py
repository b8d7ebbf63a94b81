"""The Python API: :func:`evaluate` / :func:`evaluate_async`, :class:`Judge` and the :class:`EvalResult`.

One call runs every evaluator on every case through the same runner as ``referee run`` (concurrency, the
response cache, resume with ``out=``, the manifest), aggregates the rows with the same ``summarize`` as
``referee score`` and applies the same gates. **Usage**::

    import referee

    result = referee.evaluate(
        [{"input": "2+2?", "output": "4", "reference": "4"}],
        evaluators=["equals", {"regex": {"pattern": "^\\\\d+$"}}, lambda output: len(output) < 10],
    )
    result.passed, result.summary.overall.pass_rate, result.to_pandas()
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import os
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from ._cases import Case, CaseSet, cases_from
from .errors import MissingExtraError, ProviderAuthError, UserError
from .evaluators._base import Evaluator, function_evaluator
from .providers._base import Provider
from .runner._client import JudgeClient

if TYPE_CHECKING:
    from ._gates import GateResult
    from .aggregate import Summary
    from .engines import Engine
    from .results._manifest import JudgeConfig, RunManifest
    from .results._schema import ResultRow
    from .suites import Gates, Suite

P = ParamSpec("P")
T = TypeVar("T")


def sync_twin(async_fn: Callable[P, Coroutine[Any, Any, T]], doc: str) -> Callable[P, T]:
    """The synchronous twin of ``async_fn`` (same signature; ``doc`` its docstring): it runs ``async_fn`` to
    completion in a plain script and inside a running event loop alike (see
    :func:`~referee.runner._session.run_sync`). One implementation serves both."""

    @functools.wraps(async_fn)
    def twin(*args: P.args, **kwargs: P.kwargs) -> T:
        from .runner._session import run_sync

        return run_sync(async_fn(*args, **kwargs))

    twin.__name__ = async_fn.__name__.removesuffix("_async")
    twin.__qualname__ = async_fn.__qualname__.removesuffix("_async")
    twin.__doc__ = doc
    return twin


# Local servers that route by model name (llama.cpp serves its one loaded model whatever the name).
_SERVERS_NEEDING_A_MODEL = ("ollama", "vllm", "lmstudio")


class JudgeNeedsModel(UserError):
    """A local server that routes by model name was given no model (raised before any call)."""

    def __init__(self, provider: str) -> None:
        self.provider = provider
        super().__init__(f"provider {provider} needs a model: the name of a model the server serves, "
                         f"e.g. Judge('{provider}:llama3.1')")


def whole_number(value: Any, what: str, *, minimum: int = 1) -> int:
    """``value`` when it is a whole number >= ``minimum`` (not a bool, a float or NaN); else UserError naming it."""
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise UserError(f"{what} must be a whole number >= {minimum}, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class Judge:
    """The LLM judge of a run: which provider and model, and how to call it.

    ``Judge("openai", model="gpt-4o-mini")``, ``Judge("openai:gpt-4o-mini")`` or, anywhere a judge is
    accepted, the string ``"openai:gpt-4o-mini"``. ``provider`` is a provider name (``anthropic``,
    ``openai``, ``gemini``, a cloud: ``azure``, ``bedrock``, ``vertex``, or a local OpenAI-compatible server:
    ``ollama``, ``vllm``, ``lmstudio``, ``llamacpp``) or a :class:`~referee.Provider` instance such as ``FakeProvider([...])`` for tests. Keys come
    from the provider's usual environment variables, never from arguments that could be logged.
    """

    provider: str | Provider = "anthropic"
    model: str | None = None
    base_url: str | None = None
    max_tokens: int = 1024
    temperature: float | None = None
    seed: int | None = None
    timeout: float = 60.0
    max_retries: int = 4
    concurrency: int = 8
    """Judge calls (cases) in flight at once."""
    cache: bool = True
    """Read and write the response cache (``.referee/cache.sqlite``, or ``REFEREE_CACHE_DIR``)."""
    input_price_per_mtok: float | None = None
    output_price_per_mtok: float | None = None
    batch: bool = False
    """Judge through the provider's batch API (OpenAI, Anthropic, Gemini, Azure): half price, answers within 24 h
    (docs/scale.md)."""

    def __post_init__(self) -> None:
        if isinstance(self.provider, str):
            name, sep, model = self.provider.partition(":")
            if sep:
                if self.model is not None and model and model != self.model:
                    raise UserError(f"Judge({self.provider!r}, model={self.model!r}): two different models")
                object.__setattr__(self, "provider", name)
                object.__setattr__(self, "model", self.model or model or None)
            from .providers import provider_class

            provider_class(str(self.provider))  # an unknown name fails here, not at the first case
        elif not isinstance(self.provider, Provider):
            raise UserError(f"Judge(provider=...): expected a provider name or a Provider, got "
                            f"{type(self.provider).__name__}")
        whole_number(self.concurrency, "Judge: concurrency")
        whole_number(self.max_tokens, "Judge: max_tokens")
        whole_number(self.max_retries, "Judge: max_retries", minimum=0)
        for name in ("timeout", "temperature", "input_price_per_mtok", "output_price_per_mtok"):
            v = getattr(self, name)
            if v is None and name != "timeout":
                continue
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0 or (
                    name == "timeout" and v == 0):
                need = "> 0" if name == "timeout" else ">= 0"
                raise UserError(f"Judge: {name} must be a finite number {need}, got {v!r}")

    @classmethod
    def fake(cls, replies: Any = ('{"overall_score": 1.0}',), **settings: Any) -> Judge:
        """A judge answering from ``replies`` (a list, or a function of the request) with no network and no
        cache: for tests and examples (see :class:`referee.testing.FakeProvider`)."""
        from .providers._fake import FakeProvider

        settings.setdefault("cache", False)
        return cls(FakeProvider(replies), **settings)

    @classmethod
    def from_env(cls) -> Judge:
        """The judge ``referee`` commands use by default: ``REFEREE_PROVIDER`` (else anthropic),
        ``REFEREE_MODEL`` and ``REFEREE_BASE_URL``."""
        return cls(os.environ.get("REFEREE_PROVIDER") or "anthropic", model=os.environ.get("REFEREE_MODEL") or None,
                   base_url=os.environ.get("REFEREE_BASE_URL") or None)

    @property
    def provider_name(self) -> str:
        return self.provider if isinstance(self.provider, str) else self.provider.name

    def client(self) -> JudgeClient:
        """A new client (provider + cache + retries + prices); the runner closes it when the run ends."""
        from .runner import ResponseCache, RetryPolicy

        if isinstance(self.provider, Provider):
            provider = self.provider
        else:
            from .providers import get_provider

            if self.provider in _SERVERS_NEEDING_A_MODEL and not self.model:
                raise JudgeNeedsModel(self.provider)
            try:
                provider = get_provider(self.provider, self.model, base_url=self.base_url, timeout=self.timeout)
            except ProviderAuthError as exc:
                raise UserError(str(exc)) from exc
        return JudgeClient(provider, cache=ResponseCache() if self.cache else None,
                           retry=RetryPolicy(max_retries=self.max_retries),
                           input_price_per_mtok=self.input_price_per_mtok,
                           output_price_per_mtok=self.output_price_per_mtok, batch=self.batch)

    def config(self, model: str, repeat: int = 1) -> JudgeConfig:
        """What the manifest records of this judge (never a key, nor credentials in the URL)."""
        from ._redact import bare_url
        from .results._manifest import JudgeConfig

        return JudgeConfig(provider=self.provider_name, model=model, base_url=bare_url(self.base_url), repeat=repeat,
                           temperature=self.temperature, max_tokens=self.max_tokens, seed=self.seed,
                           concurrency=self.concurrency, timeout_s=self.timeout, max_retries=self.max_retries,
                           input_price_per_mtok=self.input_price_per_mtok,
                           output_price_per_mtok=self.output_price_per_mtok, batch=self.batch)


def as_judge(judge: Judge | str | Provider | None) -> Judge:
    """A :class:`Judge` from what a user passes (None: :meth:`Judge.from_env`)."""
    if judge is None:
        return Judge.from_env()
    if isinstance(judge, Judge):
        return judge
    if isinstance(judge, str | Provider):
        return Judge(judge)
    raise UserError(f"judge: expected a Judge, a 'provider:model' string or a Provider, got {type(judge).__name__}")


def as_evaluator(fn: Callable[..., Any], name: str | None = None) -> Evaluator:
    """A plain function as an evaluator: ``fn(output)``, ``fn(output, case)`` (or, as plugins are written,
    ``fn(case, output)`` when its first parameter is named ``case``), sync or async, returning a bool (pass
    or fail), a number 0-1 (a score) or a :class:`~referee.CheckResult`. A function that raises gives an
    ``error`` result for that case; the run goes on."""
    label = name or str(getattr(fn, "__name__", "") or type(fn).__name__)
    if label == "<lambda>":
        label = "lambda"
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    n = len(params)
    if n == 0 and not _takes_varargs(fn):
        raise UserError(f"evaluator {label}: a function evaluator takes (output) or (output, case)")
    case_first = n >= 2 and params[0].name == "case"

    def args(case: Case, output: Any) -> tuple[Any, ...]:
        if n == 1:
            return (output,)
        return (case, output) if case_first else (output, case)

    if inspect.iscoroutinefunction(fn):
        async def call_async(case: Case, output: Any) -> Any:
            return await fn(*args(case, output))

        return function_evaluator(call_async, label)

    def call(case: Case, output: Any) -> Any:
        return fn(*args(case, output))

    return function_evaluator(call, label)


def _takes_varargs(fn: Callable[..., Any]) -> bool:
    try:
        return any(p.kind == p.VAR_POSITIONAL for p in inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False


def _entry(e: Any) -> Any:
    if isinstance(e, str | dict | Evaluator):
        return e
    if callable(e):
        return as_evaluator(e)
    raise UserError(f"evaluators: expected a name, a {{name: options}} mapping, an Evaluator or a function, got "
                    f"{type(e).__name__}")


@dataclass
class EvalResult:
    """The outcome of :func:`evaluate`: one row per case, the summary ``referee score`` prints, the gates."""

    rows: list[ResultRow]
    """One :class:`~referee.ResultRow` per case (in case order); each evaluator is one of its ``criteria``."""
    manifest: RunManifest
    """What was run, with what, and the totals (cost, tokens, calls, wall time)."""
    cases: list[Case] = field(repr=False, default_factory=list)
    path: Path | None = None
    """Where the rows were written (``out=``), if anywhere."""
    new_rows: list[ResultRow] = field(default_factory=list, repr=False)
    """The rows this call produced (``rows`` also holds those kept from an earlier run on ``out``)."""
    resume_note: str | None = field(default=None, repr=False)
    """What became of an earlier run's ``out`` file: rows kept (resumed), or the file set aside."""
    threshold: float = field(default=0.7, repr=False)
    """A case passes at this score (without a suite: :func:`grade`)."""
    gate_options: dict[str, Any] | None = field(default=None, repr=False)
    """The gates (without a suite), by their suite names."""
    _suite: Suite | None = field(default=None, repr=False)

    @cached_property
    def _gated(self) -> tuple[Summary, list[GateResult]]:
        from .suites import Gates
        from .suites._gating import gate_summary

        if self._suite is None:
            return gate_summary(self.rows, Gates(**_gates_of(self.gate_options)), threshold=self.threshold,
                                base_dir=Path("."))
        return gate_summary(self.rows, self._suite.gates, threshold=self._suite.scoring.threshold,
                            base_dir=self._suite.base_dir)

    @property
    def summary(self) -> Summary:
        """Pass rate and mean with intervals, per category, unscored and errors counted (``referee score``)."""
        return self._gated[0]

    @property
    def gates(self) -> list[GateResult]:
        """Each gate's verdict (``flag``, ``failed``, ``message``)."""
        return self._gated[1]

    @property
    def passed(self) -> bool:
        """True when no gate failed."""
        return not any(g.failed for g in self.gates)

    def records(self) -> list[dict[str, Any]]:
        """One plain dict per case x evaluator (what :meth:`to_pandas` tabulates)."""
        outputs = {c.id: c.output for c in self.cases}
        out: list[dict[str, Any]] = []
        for r in self.rows:
            base = {"id": r.id, "repeat": r.repeat, "category": r.category, "output": outputs.get(r.id),
                    "case_status": r.status, "case_score": r.score, "case_passed": r.passed}
            crits = r.criteria or []
            if not crits:
                out.append({**base, "evaluator": r.evaluator, "status": r.status, "score": r.score,
                            "passed": r.passed, "rationale": r.rationale, "error": r.error})
            for c in crits:
                out.append({**base, "evaluator": c.id, "status": c.status, "score": c.score, "passed": c.passed,
                            "rationale": c.rationale, "error": c.error})
        return out

    def to_pandas(self) -> Any:
        """A pandas DataFrame, one row per case x evaluator (needs the extra ``pandas``)."""
        try:
            import pandas as pd
        except ImportError:
            raise MissingExtraError("pandas", "pandas", "EvalResult.to_pandas()") from None
        return pd.DataFrame.from_records(self.records(), columns=_COLUMNS)

    def to_polars(self) -> Any:
        """A polars DataFrame, one row per case x evaluator (needs the extra ``polars``)."""
        try:
            import polars as pl
        except ImportError:
            raise MissingExtraError("polars", "polars", "EvalResult.to_polars()") from None
        recs = self.records()
        return pl.DataFrame({k: [r[k] for r in recs] for k in _COLUMNS}, strict=False)

    def save(self, path: str | Path) -> Path:
        """Write the rows and the manifest beside them (``x.jsonl`` + ``x.manifest.json``): the files
        ``referee run`` writes, which ``referee score`` and ``referee report`` read. A file already there is
        moved aside to ``x.prev.jsonl`` (results already paid for are never overwritten); the cases file
        itself is refused."""
        from .results._io import ResultWriter
        from .results._manifest import manifest_path
        from .runner._session import _free_prev_name

        p = Path(path)
        src = self._suite.cases_path if self._suite is not None else None
        if src and p.resolve() == Path(src).resolve():
            raise UserError(f"save({p}): that is the cases file; write results to a file of their own")
        if p.is_dir():
            raise UserError(f"save({p}): is a directory; give a results file such as {p / 'results.jsonl'}")
        if self.path is not None and p.resolve() == self.path.resolve():
            return p  # already written there, as the run went
        if p.exists():
            prev = _free_prev_name(p)
            os.replace(p, prev)
            if manifest_path(p).exists():
                os.replace(manifest_path(p), manifest_path(prev))
        with ResultWriter(p, append=False) as w:
            w.write_all(self.rows)
        self.manifest.write(p)
        return p

    def __repr__(self) -> str:
        t = self.manifest.totals
        text = f"EvalResult({len(self.rows)} rows: {t.scored} scored, {t.unscored} unscored, {t.error} error"
        if self.rows:
            pr = self.summary.overall.pass_rate.estimate
            if pr is not None:
                text += f"; pass rate {pr:.1%}"
            text += "; gates " + ("passed" if self.passed else "FAILED")
        return text + ")"


_COLUMNS = ["id", "repeat", "category", "evaluator", "status", "score", "passed", "rationale", "error", "output",
            "case_status", "case_score", "case_passed"]


def _gates_of(gates: Gates | dict[str, Any] | None) -> dict[str, Any]:
    if gates is None:
        return {"fail_under": 1.0}  # no gate given: every case must pass (as assert_eval)
    if isinstance(gates, dict):
        return dict(gates)
    dump: dict[str, Any] = gates.model_dump(exclude_defaults=True)
    return dump


async def evaluate_async(
    cases: Any,
    evaluators: Sequence[Any],
    judge: Judge | str | Provider | None = None,
    *,
    threshold: float = 0.7,
    scoring: str = "weighted_mean",
    gates: Gates | dict[str, Any] | None = None,
    out: str | Path | None = None,
    concurrency: int | None = None,
    progress: bool | None = None,
    name: str = "evaluate",
    base_dir: str | Path = ".",
    target: Any = None,
    engine: Engine | str | None = None,
) -> EvalResult:
    """:func:`evaluate` for async code (``await referee.evaluate_async(...)``)."""
    from .engines import get_engine
    from .runner._session import error_row, execute_async
    from .suites._loader import suite_from_dict
    from .suites._runner import EVALUATOR_LABEL, bind_settings, build_manifest

    if concurrency is not None:
        concurrency = whole_number(concurrency, "evaluate(concurrency=...)")
    case_set: CaseSet = cases_from(cases)
    if isinstance(evaluators, str | dict) or callable(evaluators):
        evaluators = [evaluators]
    data: dict[str, Any] = {
        "name": name, "cases": [c.data for c in case_set.cases], "evaluators": [_entry(e) for e in evaluators],
        "scoring": {"mode": scoring, "threshold": threshold}, "gates": _gates_of(gates),
    }
    suite = suite_from_dict(data, base_dir=base_dir, name=name)
    from_file = case_set.path if Path(case_set.path).is_file() else None
    suite = dataclasses.replace(suite, cases=case_set.cases, cases_path=from_file)
    client = None
    judge_config = None
    j: Judge | None = None
    if suite.llm_specs:
        from .evaluators._base import JudgeSettings

        j = as_judge(judge)
        client = j.client()
        suite = bind_settings(suite, JudgeSettings(client=client, max_tokens=j.max_tokens, temperature=j.temperature,
                                                seed=j.seed, use_cache=j.cache))
        judge_config = j.config(client.provider.model)
    manifest = build_manifest(suite, command=["referee.evaluate", name], judge_config=judge_config)
    out_path = Path(out) if out is not None else None
    if out_path is not None:
        out_path.parent.mkdir(parents=True, exist_ok=True)
    run_concurrency = concurrency or (j.concurrency if j else 8)
    run = None
    if target is not None:
        # The system under test generates each case's output first (targets: docs/targets.md); its outputs are
        # kept beside ``out`` (``x.outputs.jsonl``) so a rerun generates nothing again.
        from .targets import as_target
        from .targets._run import TargetRun, config_sha256, target_info

        t = as_target(target, base_dir=base_dir)
        outputs = out_path.with_name(out_path.name.removesuffix(".jsonl") + ".outputs.jsonl") if out_path else None
        run = TargetRun.open(t, None, run_concurrency, outputs=outputs)
        info = target_info(t)
        manifest.extra["target"] = {**info.model_dump(exclude_none=True), "config_sha256": config_sha256(t)}
        manifest.extra["config_hash"] = f"{manifest.extra.get('config_hash', '')}+{config_sha256(t)}"
        manifest.system_under_test = info.model
    # Where the cases are evaluated (this process, or a Ray cluster; generation stays here); rows come back to
    # this one writer.
    with get_engine(engine).start(suite, client=client, concurrency=run_concurrency) as where:
        evaluate_case: Callable[[Case], Any] = where.evaluate
        if run is not None:
            evaluate_case = run.evaluator(where.evaluate, EVALUATOR_LABEL)
        outcome = await execute_async(
            out=out_path, manifest=manifest, items=suite.cases, key=lambda c: (c.id, None, None),
            evaluate=evaluate_case,
            on_error=lambda c, exc: error_row(c.id, exc, evaluator=EVALUATOR_LABEL, category=c.category),
            client=client, concurrency=max(run_concurrency, where.concurrency), label="evaluating",
            show_progress=progress, cleanup=run.aclose if run is not None else None,
        )
    order = {c.id: i for i, c in enumerate(suite.cases)}
    rows = sorted(outcome.rows, key=lambda r: order.get(r.id, len(order)))
    cases_out = [run.generated.get(c.id, c) for c in suite.cases] if run is not None else list(suite.cases)
    return EvalResult(rows=rows, manifest=outcome.manifest, cases=cases_out, path=out_path,
                      new_rows=outcome.new_rows, resume_note=outcome.resume_note, _suite=suite)


evaluate = sync_twin(
    evaluate_async,
    """Run ``evaluators`` on ``cases`` and return an :class:`EvalResult`.

    Args:
        cases: a list of dicts (``id`` optional), of strings (outputs), a path to a JSONL / YAML / JSON / CSV /
            Parquet file, or a pandas or polars DataFrame.
        evaluators: names (``"is_json"``), ``{name: options}`` mappings as in a suite file (with ``weight``,
            ``threshold``, ``critical``, ``id``, ``field``), :class:`~referee.Evaluator` instances (such as
            ``referee.judges.LLMJudge(rubric=...)``) or plain functions (see :func:`as_evaluator`).
        judge: the LLM judge of the LLM evaluators: a :class:`Judge`, ``"provider:model"`` or a Provider;
            default :meth:`Judge.from_env`. Not used (and not needed) without LLM evaluators.
        threshold: a case passes when its combined score >= threshold.
        scoring: how evaluators combine into a case's score: ``weighted_mean``, ``all_pass`` or ``min``.
        gates: ``referee score``'s gates by their suite names (``{"fail_under": 0.9,
            "fail_if_unscored_above": 0}``); default: every case must pass.
        out: also write the rows and manifest here as they complete; rerunning with the same ``out`` resumes.
        concurrency: cases in flight at once, a whole number >= 1 (default: the judge's, 8); anything else is a
            UserError.
        progress: None/True show progress (terminal or notebook) for runs over a second; False hides it.
        target: the system under test, run on each case before the evaluators (its output replaces the case's):
            a function ``(input) -> str | dict`` (or ``(case)``, ``(input, case)``), sync or async, or a target
            mapping as in a suite's ``targets:`` (a model and a prompt, ``http``, ``python``, ``exec``). A failed
            generation is an ``error`` row; rows carry ``target`` and the output's own ``cost_usd``/``latency_ms``.
        engine: where the cases are evaluated: ``"local"`` (default, this process), ``"ray"`` (a local Ray
            cluster, or the Ray this program already initialised), ``"ray=HOST:PORT"``, or an engine such as
            ``referee.engines.RayEngine(rpm=600)`` (extra ``ray``; see docs/scale.md).

    Works in a script and inside a running event loop (Jupyter, an async web handler): there the run goes on
    a loop of its own in a worker thread. Use :func:`evaluate_async` from async code to stay on your loop.
    """,
)
