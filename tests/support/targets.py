"""Helpers for target tests: a user module written beside the suite (unique name per test, so sys.modules never
serves another test's module) and a small HTTP service on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web


@pytest.fixture(autouse=True)
def _no_step_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests run inside GitHub Actions must not write into the job's own step summary."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


@pytest.fixture
def user_module(tmp_path: Path) -> Callable[[str], str]:
    """Write ``source`` as a module in tmp_path; returns its (unique) name."""

    def write(source: str) -> str:
        name = f"user_mod_{uuid.uuid4().hex[:10]}"
        (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
        return name

    return write


class Service:
    """An HTTP service under test: ``handler(body) -> (status, reply)`` decides each answer."""

    def __init__(self, handler: Callable[[Any], tuple[int, Any]]) -> None:
        self.handler = handler
        self.requests: list[Any] = []
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.json() if request.can_read_body else None
        self.requests.append({"body": body, "headers": dict(request.headers), "path": request.path_qs})
        status, reply = self.handler(body)
        text = reply if isinstance(reply, str) else json.dumps(reply)
        return web.Response(status=status, text=text, content_type="application/json")

    def start(self) -> Service:
        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            app = web.Application()
            app.router.add_route("*", "/{tail:.*}", self._handle)
            runner = web.AppRunner(app, access_log=None)
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

        threading.Thread(target=run, daemon=True).start()
        assert self._ready.wait(10)
        return self

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture
def service() -> Iterator[Callable[[Callable[[Any], tuple[int, Any]]], Service]]:
    started: list[Service] = []

    def make(handler: Callable[[Any], tuple[int, Any]]) -> Service:
        s = Service(handler).start()
        started.append(s)
        return s

    yield make
    for s in started:
        s.stop()
