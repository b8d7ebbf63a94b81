"""The judge client: a provider plus retries with backoff, the response cache and prices."""

from __future__ import annotations

import asyncio
import os
import random
from dataclasses import dataclass, field

from ..errors import ProviderError, ProviderUnavailable
from ..providers.base import Completion, JudgeRequest, Provider
from ..results.schema import JudgeInfo
from .cache import ResponseCache, cache_key

COST_DECIMALS = 10


@dataclass
class RetryPolicy:
    """Exponential backoff with jitter on retryable errors, honouring Retry-After."""

    max_retries: int = 4
    base_delay: float = field(default_factory=lambda: float(os.environ.get("REFEREE_RETRY_BASE_DELAY", "0.5")))
    max_delay: float = 30.0
    max_retry_after: float = 120.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        backoff = min(self.max_delay, self.base_delay * (2.0**attempt))
        backoff *= random.uniform(0.5, 1.0)  # jitter: a 429 storm must not retry in lockstep
        if retry_after is not None:
            return max(min(retry_after, self.max_retry_after), backoff)
        return backoff


@dataclass
class CallStats:
    calls: int = 0
    cached: int = 0
    retries: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0


class JudgeClient:
    """What evaluators talk to. Thread-unsafe but coroutine-safe (one event loop)."""

    def __init__(self, provider: Provider, *, cache: ResponseCache | None = None,
                 retry: RetryPolicy | None = None, input_price_per_mtok: float | None = None,
                 output_price_per_mtok: float | None = None) -> None:
        self.provider = provider
        self.cache = cache
        self.retry = retry or RetryPolicy()
        self.input_price = input_price_per_mtok
        self.output_price = output_price_per_mtok
        self.stats = CallStats()
        self._reached = False
        """Whether the server has answered at all in this run (a success or any HTTP status)."""

    @property
    def prices_given(self) -> bool:
        return self.input_price is not None and self.output_price is not None

    def cost(self, input_tokens: int | None, output_tokens: int | None) -> float | None:
        """Cost from the provider's own token counts, only when both prices are given (the seed's rule)."""
        if not self.prices_given or input_tokens is None or output_tokens is None:
            return None
        assert self.input_price is not None and self.output_price is not None
        # Rounded: float noise (0.0009600000000000001) must not reach result files; 1e-10 USD is far below
        # the cost of one token at any real price.
        return round(input_tokens / 1e6 * self.input_price + output_tokens / 1e6 * self.output_price,
                     COST_DECIMALS)

    def judge_info(self, template_hash: str | None = None) -> JudgeInfo:
        return JudgeInfo(provider=self.provider.name, model=self.provider.model, template_hash=template_hash)

    async def complete(self, request: JudgeRequest, *, use_cache: bool = True) -> Completion:
        """One judged reply: from the cache when allowed, else from the provider with retries.

        Raises :class:`ProviderError` once retries are exhausted or the error cannot be retried.
        """
        key = None
        if self.cache is not None and use_cache:
            key = cache_key(self.provider.describe(), request)
            hit = self.cache.get(key)
            if hit is not None:
                self.stats.cached += 1
                return hit
        attempt = 0
        while True:
            try:
                completion = await self.provider.complete(request)
                break
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
        self._reached = True
        self.stats.calls += 1
        if completion.input_tokens:
            self.stats.input_tokens += completion.input_tokens
        if completion.output_tokens:
            self.stats.output_tokens += completion.output_tokens
        c = self.cost(completion.input_tokens, completion.output_tokens)
        if c is not None:
            self.stats.cost_usd = round(self.stats.cost_usd + c, COST_DECIMALS)
        if self.cache is not None and key is not None:
            self.cache.put(key, completion)
        return completion

    async def aclose(self) -> None:
        await self.provider.aclose()
        if self.cache is not None:
            self.cache.close()
