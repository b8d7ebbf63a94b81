"""The judge of a run: :class:`Judge` (which provider and model, and how to call it), :func:`as_judge`, the one
rule binding evaluators to it (:meth:`Judge.settings`), and :func:`sync_twin`, the one bridge from an async entry
point to its synchronous twin. Every entry point in ``run/`` configures its judge through here."""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from .._util._numbers import whole_number
from ..errors import JudgeNeedsModel, KeyMissing, ProviderAuthError, UserError
from ..providers._base import Provider
from ..runner._client import JudgeClient

if TYPE_CHECKING:
    from ..evaluators._base import JudgeSettings
    from ..results._manifest import JudgeConfig

P = ParamSpec("P")
T = TypeVar("T")


def sync_twin(async_fn: Callable[P, Coroutine[Any, Any, T]], doc: str) -> Callable[P, T]:
    """The synchronous twin of ``async_fn`` (same signature; ``doc`` its docstring): it runs ``async_fn`` to
    completion in a plain script and inside a running event loop alike (see
    :func:`~referee.runner._session.run_sync`). One implementation serves both."""

    @functools.wraps(async_fn)
    def twin(*args: P.args, **kwargs: P.kwargs) -> T:
        from ..runner._session import run_sync

        return run_sync(async_fn(*args, **kwargs))

    twin.__name__ = async_fn.__name__.removesuffix("_async")
    twin.__qualname__ = async_fn.__qualname__.removesuffix("_async")
    twin.__doc__ = doc
    return twin


# Local servers that route by model name (llama.cpp serves its one loaded model whatever the name).
_SERVERS_NEEDING_A_MODEL = ("ollama", "vllm", "lmstudio")




_SUITE_JUDGE_FIELDS = ("provider", "model", "base_url", "max_tokens", "temperature", "seed", "timeout",
                       "max_retries", "concurrency", "input_price_per_mtok", "output_price_per_mtok")
"""The settings of a suite's ``judge:`` block that configure its judge (the template and rubric are the
evaluators')."""


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
            from ..providers import provider_class

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
        from ..providers._fake import FakeProvider

        settings.setdefault("cache", False)
        return cls(FakeProvider(replies), **settings)

    @classmethod
    def from_env(cls) -> Judge:
        """The judge ``referee`` commands use by default: ``REFEREE_PROVIDER`` (else anthropic),
        ``REFEREE_MODEL`` and ``REFEREE_BASE_URL``."""
        return cls.for_suite(None)

    @classmethod
    def for_suite(cls, defaults: Any | None, *, given: Mapping[str, Any] | None = None,
                  concurrency: int | None = None) -> Judge:
        """The judge a suite runs with, by the one precedence rule, field by field: ``given`` (what the caller set
        explicitly: ``referee run``'s flags and their environment variables), then ``REFEREE_PROVIDER``,
        ``REFEREE_MODEL`` and ``REFEREE_BASE_URL``, then the suite's top-level ``concurrency`` (``concurrency``),
        then its ``judge:`` settings (``defaults``), then referee's defaults."""
        fields: dict[str, Any] = {}
        if defaults is not None:
            for name in _SUITE_JUDGE_FIELDS:
                value = getattr(defaults, name, None)
                if value is not None:
                    fields[name] = value
        if concurrency is not None:
            fields["concurrency"] = concurrency
        for name, var in (("provider", "REFEREE_PROVIDER"), ("model", "REFEREE_MODEL"),
                          ("base_url", "REFEREE_BASE_URL")):
            if os.environ.get(var):
                fields[name] = os.environ[var]
        fields.update(given or {})
        fields.setdefault("provider", "anthropic")
        return cls(**fields)

    @property
    def provider_name(self) -> str:
        return self.provider if isinstance(self.provider, str) else self.provider.name

    def client(self) -> JudgeClient:
        """A new client (provider + cache + retries + prices); the runner closes it when the run ends."""
        from ..runner import ResponseCache, RetryPolicy

        if isinstance(self.provider, Provider):
            provider = self.provider
        else:
            from ..providers import get_provider

            if self.provider in _SERVERS_NEEDING_A_MODEL and not self.model:
                raise JudgeNeedsModel(self.provider)
            try:
                provider = get_provider(self.provider, self.model, base_url=self.base_url, timeout=self.timeout)
            except ProviderAuthError as exc:
                raise KeyMissing(str(exc)) from None  # the message says it all; the chain is noise
        return JudgeClient(provider, cache=ResponseCache() if self.cache else None,
                           retry=RetryPolicy(max_retries=self.max_retries),
                           input_price_per_mtok=self.input_price_per_mtok,
                           output_price_per_mtok=self.output_price_per_mtok, batch=self.batch)

    def config(self, model: str, repeat: int = 1) -> JudgeConfig:
        """What the manifest records of this judge (never a key, nor credentials in the URL)."""
        from .._util._redact import bare_url
        from ..results._manifest import JudgeConfig

        return JudgeConfig(provider=self.provider_name, model=model, base_url=bare_url(self.base_url), repeat=repeat,
                           temperature=self.temperature, max_tokens=self.max_tokens, seed=self.seed,
                           concurrency=self.concurrency, timeout_s=self.timeout, max_retries=self.max_retries,
                           input_price_per_mtok=self.input_price_per_mtok,
                           output_price_per_mtok=self.output_price_per_mtok, batch=self.batch)

    def settings(self, client: JudgeClient | None) -> JudgeSettings:
        """The settings a run binds its LLM evaluators to: this judge's sampling and cache choices, calling through
        ``client`` (the one binding rule of every entry point)."""
        from ..evaluators._base import JudgeSettings

        return JudgeSettings(client=client, max_tokens=self.max_tokens, temperature=self.temperature,
                             seed=self.seed, use_cache=self.cache)


def as_judge(judge: Judge | str | Provider | None) -> Judge:
    """A :class:`Judge` from what a user passes (None: :meth:`Judge.from_env`)."""
    if judge is None:
        return Judge.from_env()
    if isinstance(judge, Judge):
        return judge
    if isinstance(judge, str | Provider):
        return Judge(judge)
    raise UserError(f"judge: expected a Judge, a 'provider:model' string or a Provider, got {type(judge).__name__}")
