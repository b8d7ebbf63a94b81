"""Hostile HTTP servers on 127.0.0.1 for tests of every HTTP client referee has (judges, HTTP targets): each
answers with whatever its aiohttp handler does (a redirect, an endless body) and records what it was sent."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, Self

from aiohttp import web

Handler = Callable[["RawServer", web.Request], Awaitable[web.StreamResponse]]


class RawServer:
    """A server in its own thread and loop; ``requests`` holds (method, path, headers) of every request."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[dict[str, Any]] = []
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append({"method": request.method, "path": request.path_qs,
                              "headers": {k.lower(): v for k, v in request.headers.items()}})
        return await self.handler(self, request)

    def start(self) -> Self:
        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            app = web.Application()
            app.router.add_route("*", "/{tail:.*}", self._handle)
            runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
            loop.run_until_complete(runner.setup())
            site = web.TCPSite(runner, "127.0.0.1", 0)
            loop.run_until_complete(site.start())
            server = site._server
            assert server is not None
            self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
            self._ready.set()
            loop.run_forever()
            loop.run_until_complete(runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextmanager
def raw_server(handler: Handler) -> Iterator[RawServer]:
    srv = RawServer(handler).start()
    try:
        yield srv
    finally:
        srv.stop()


def redirect_to(other: Callable[[], str], status: int = 307) -> Handler:
    """Every request redirected to the same path on ``other()`` (a base URL)."""

    async def handle(_srv: RawServer, request: web.Request) -> web.StreamResponse:
        return web.Response(status=status, headers={"Location": other() + request.path_qs})

    return handle


async def record_only(_srv: RawServer, _request: web.Request) -> web.StreamResponse:
    return web.json_response({"error": {"message": "this host only records what it was sent"}}, status=418)


def endless_body(chunk: int = 1 << 20, content_type: str = "application/json") -> Handler:
    """A 200 whose chunked body never ends (until the client hangs up)."""

    async def handle(_srv: RawServer, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(status=200, headers={"Content-Type": content_type})
        await resp.prepare(request)
        block = b'{"pad": "' + b"x" * chunk
        try:
            while True:
                await resp.write(block)
        except (ConnectionError, RuntimeError, asyncio.CancelledError):
            pass
        return resp

    return handle
