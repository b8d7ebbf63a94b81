"""A fake LLM server that counts the requests it is serving at once and when each arrived."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, Self

from aiohttp import web

from referee.testing import FakeLLMServer


class CountingServer(FakeLLMServer):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.in_flight = 0
        self.max_in_flight = 0
        self.arrivals: list[float] = []

    def _app(self) -> web.Application:
        app = super()._app()

        @web.middleware
        async def count(request: web.Request,
                        handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
            # One event loop serves every request, so these counters need no lock.
            self.arrivals.append(time.monotonic())
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            try:
                return await handler(request)
            finally:
                self.in_flight -= 1

        app.middlewares.append(count)
        return app

    def start(self) -> Self:  # a CountingServer, so its counters type-check where it is started
        super().start()
        return self

    def __enter__(self) -> Self:
        return self.start()
