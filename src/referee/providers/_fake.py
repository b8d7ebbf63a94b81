"""A fake provider for tests of logic above the provider layer (shipped for users' own tests too).

**Usage**::

    FakeProvider(['{"overall_score": 0.9}'])              # replies in order, then the last one repeats
    FakeProvider(lambda req: '{"overall_score": 0.5}')    # computed from the request
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import ClassVar

from ..errors import ProviderError
from ._base import Completion, JudgeRequest, Provider

Reply = str | ProviderError


class FakeProvider(Provider):
    """A provider that calls nothing: it answers from ``replies`` in turn, the last one repeating (or from a
    function of the request), with the given token counts, and keeps every request in ``requests``. For tests and the example."""

    name: ClassVar[str] = "fake"
    default_model: ClassVar[str] = "fake-judge"
    accepts_images: ClassVar[bool | None] = True

    def __init__(self, replies: Sequence[Reply] | Callable[[JudgeRequest], Reply] = ('{"overall_score": 1.0}',),
                 model: str | None = None, *, latency_s: float = 0.0, input_tokens: int | None = 10,
                 output_tokens: int | None = 5) -> None:
        super().__init__(model)
        self._replies = replies
        self._latency = latency_s
        self._in = input_tokens
        self._out = output_tokens
        self.requests: list[JudgeRequest] = []

    async def complete(self, request: JudgeRequest) -> Completion:
        index = len(self.requests)
        self.requests.append(request)
        if self._latency:
            await asyncio.sleep(self._latency)
        if callable(self._replies):
            reply = self._replies(request)
        else:
            reply = self._replies[min(index, len(self._replies) - 1)]
        if isinstance(reply, ProviderError):
            raise reply
        return Completion(text=reply, input_tokens=self._in, output_tokens=self._out, model=self.model,
                          latency_ms=self._latency * 1000)
