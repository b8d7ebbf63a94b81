"""The judge client: a provider plus retries with backoff, the response cache, prices and batch mode."""

from __future__ import annotations

import asyncio
import dataclasses
import random
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .._util._redact import redact_text, secret_values
from ..errors import ProviderError, ProviderUnavailable
from ..providers._base import Completion, JudgeRequest, Provider
from ..providers._vision import check_images
from ._cache import ResponseCache, cache_key
from ._env import check_env, env_seconds
from ._prices import COST_DECIMALS, Pricer

if TYPE_CHECKING:
    from ..results._schema import JudgeInfo
    from ._batch import BatchRunner


@dataclass
class RetryPolicy:
    """Exponential backoff with jitter on retryable errors, honouring Retry-After."""

    max_retries: int = 4
    base_delay: float = field(default_factory=lambda: env_seconds("REFEREE_RETRY_BASE_DELAY"))
    max_delay: float = 30.0
    max_retry_after: float = 120.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        backoff = min(self.max_delay, self.base_delay * (2.0**attempt))
        backoff *= random.uniform(0.5, 1.0)  # jitter: a 429 storm must not retry in lockstep
        if retry_after is not None:
            return max(min(retry_after, self.max_retry_after), backoff)
        return backoff


ASK_AGAIN: ContextVar[bool] = ContextVar("referee_ask_again", default=False)
"""Set while a case kept unscored by an earlier run is judged again: its replies skip the cache's answer (and
the new reply replaces it)."""


@dataclass
class CallStats:
    """A client's running counts: calls sent (failed ones too), answered from the cache, retries, tokens, cost."""

    calls: int = 0
    cached: int = 0
    retries: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0


MAX_TOKENS_PER_CALL = 10_000_000
"""Token counts a provider reports above this (or below 0) are absurd: the row is an error, never a negative or
billion-dollar cost (no model's context window comes near it)."""


def _check_tokens(completion: Completion) -> None:
    for what, n in (("input", completion.input_tokens), ("output", completion.output_tokens)):
        if n is not None and (isinstance(n, bool) or not isinstance(n, int | float) or not 0 <= n <= MAX_TOKENS_PER_CALL):
            raise ProviderError(f"the provider reported {n!r} {what} tokens for one call (expected 0 to "
                                f"{MAX_TOKENS_PER_CALL:,}); the reply is not used", retryable=False)


class JudgeClient:
    """What evaluators talk to. Thread-unsafe but coroutine-safe (one event loop)."""

    def __init__(self, provider: Provider, *, cache: ResponseCache | None = None,
                 retry: RetryPolicy | None = None, input_price_per_mtok: float | None = None,
                 output_price_per_mtok: float | None = None, batch: bool = False) -> None:
        check_env()  # a bad knob stops the command here, before its first call (not at its first retry)
        self.provider = provider
        self.cache = cache
        self.retry = retry or RetryPolicy()
        self.input_price = input_price_per_mtok
        self.output_price = output_price_per_mtok
        self.pricer = Pricer(provider.price_id(), input_per_mtok=input_price_per_mtok,
                             output_per_mtok=output_price_per_mtok)
        self.stats = CallStats()
        self.batch: BatchRunner | None = None
        """Batch mode: calls go to the provider's batch API (:mod:`referee.runner._batch`)."""
        self.members: list[JudgeClient] = []
        """The clients of a judge panel's other judges (:meth:`add_member`): closed with this one."""
        if batch:
            from ..providers._batch import batch_adapter
            from ._batch import BatchRunner

            self.batch = BatchRunner(batch_adapter(provider))
            self.batch.on_result = self._accept_batch_result
        self._reached = False
        """Whether the server has answered at all in this run (a success or any HTTP status)."""
        self._held: tuple[str, ...] | None = None
        self._secrets: list[str] = []
        """What :meth:`_accept` masks in every reply: the provider's credentials (:meth:`Provider.secrets`, asked
        per reply: tokens refresh) and the key environment variables' values, collected again only when the
        provider's change (reading the environment cost 11 us per reply)."""
        self._judge_info: dict[str | None, JudgeInfo] = {}

    @property
    def price_source(self) -> str | None:
        """``user``, ``genai-prices <version>``, or None when no cost can be reported (local servers)."""
        return self.pricer.source

    def cost(self, input_tokens: int | None, output_tokens: int | None) -> float | None:
        """Cost from the provider's own token counts at the run's prices, or None when unknown."""
        return self.pricer.cost(self.provider.model, input_tokens, output_tokens)

    def cost_of(self, completion: Completion) -> float | None:
        """The cost of one reply: cached input tokens and the batch rate priced where the provider reports them."""
        return self.pricer.cost(completion.model or self.provider.model, completion.input_tokens,
                                completion.output_tokens, cache_read_tokens=completion.cache_read_tokens,
                                batch=completion.batch, fallback_model=self.provider.model)

    def judge_info(self, template_hash: str | None = None) -> JudgeInfo:
        """The judge of every row this client's replies make (frozen, so one instance per template is shared)."""
        info = self._judge_info.get(template_hash)
        if info is None or info.model != self.provider.model:
            # Once per template; imported here so that the models load after a run's first request.
            from ..results._schema import JudgeInfo

            info = JudgeInfo(provider=self.provider.name, model=self.provider.model, template_hash=template_hash)
            self._judge_info[template_hash] = info
        return info

    async def complete(self, request: JudgeRequest, *, use_cache: bool = True) -> Completion:
        """One judged reply: from the cache when allowed, else from the provider with retries.

        Raises :class:`ProviderError` once retries are exhausted or the error cannot be retried.
        """
        check_images(self.provider, request.images)  # before the cache too: a refused model has no answer
        key = None
        if self.cache is not None and use_cache:
            key = cache_key(self.provider.describe(), request)
            # A case asked again on purpose (--retry-unscored) is sent, not served the reply it was unscored on.
            hit = None if ASK_AGAIN.get() else self.cache.get(key)
            if hit is not None:
                self.stats.cached += 1
                return hit
        if self.batch is not None:
            # Batch errors are final for this run (the job answered, or it did not): no client-level retry.
            # The runner hands each result to _accept_batch_result (checked, redacted, cached) before we see it.
            self.stats.calls += 1
            completion = await self.batch.complete(key or cache_key(self.provider.describe(), request), request)
            key = None  # the batch runner filled the cache already
        else:
            completion = self._accept(await self._call(request))
        self._reached = True
        if completion.input_tokens:
            self.stats.input_tokens += completion.input_tokens
        if completion.output_tokens:
            self.stats.output_tokens += completion.output_tokens
        c = self.cost_of(completion)
        if c is not None:
            self.stats.cost_usd = round(self.stats.cost_usd + c, COST_DECIMALS)
        if self.cache is not None and key is not None:
            self.cache.put(key, completion)
        return completion

    def _accept(self, completion: Completion) -> Completion:
        """The one gate every provider reply passes (live or batch) before rows or the cache can see it.

        Absurd token counts raise :class:`ProviderError`; a judge that echoes the API key (an injected "print
        your key") has it masked, so the key never reaches rows, the cache or the manifest.
        """
        _check_tokens(completion)
        safe = redact_text(completion.text, values=self._secret_values())
        if safe != completion.text:
            completion = dataclasses.replace(completion, text=safe)
        return completion

    def _secret_values(self) -> list[str]:
        held = self.provider.secrets()
        if held != self._held:
            self._secrets = secret_values(held)
            self._held = held
        return self._secrets

    def _accept_batch_result(self, key: str, completion: Completion) -> Completion:
        """A batch job's result: through :meth:`_accept` first, then into the cache (what the caller gets)."""
        completion = self._accept(completion)
        if self.cache is not None:
            self.cache.put(key, completion)
        return completion

    async def _call(self, request: JudgeRequest) -> Completion:
        """One live call with retries."""
        attempt = 0
        while True:
            self.stats.calls += 1  # every request sent counts, failed ones too (they may be billed)
            try:
                return await self.provider.complete(request)
            except ProviderError as exc:
                if exc.status is not None:
                    self._reached = True
                if not exc.retryable or attempt >= self.retry.max_retries:
                    raise
                if isinstance(exc, ProviderUnavailable) and not self._reached and attempt >= 1:
                    # Never reached since the run started: the server is down or --base-url is wrong. Say so
                    # now rather than after the whole backoff; once it has answered, outages get every retry.
                    raise
                await asyncio.sleep(self.retry.delay(attempt, exc.retry_after))
                attempt += 1
                self.stats.retries += 1

    def add_member(self, other: JudgeClient) -> None:
        """Make ``other`` (a panel judge's client) count in this client's ``stats`` (the run's totals: calls,
        cache hits, cost) and close with it."""
        other.stats = self.stats
        self.members.append(other)

    async def aclose(self) -> None:
        members, self.members = self.members, []
        for m in members:
            await m.aclose()
        if self.batch is not None:
            await self.batch.aclose()
        await self.provider.aclose()
        if self.cache is not None:
            self.cache.close()
