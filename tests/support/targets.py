"""Helpers for target tests: a user module written beside the suite (unique name per test, so sys.modules never
serves another test's module) and a small HTTP service on 127.0.0.1."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from tests.support.http import RawServer


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


class Service(RawServer):
    """An HTTP service under test: ``handler(body) -> (status, reply)`` decides each answer; ``requests`` holds
    each request's body, headers and path."""

    def __init__(self, handler: Callable[[Any], tuple[int, Any]]) -> None:
        super().__init__(self._answer)
        self.answer = handler

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        return await self._answer(self, request)

    async def _answer(self, _srv: RawServer, request: web.Request) -> web.StreamResponse:
        body = await request.json() if request.can_read_body else None
        self.requests.append({"body": body, "headers": dict(request.headers), "path": request.path_qs})
        status, reply = self.answer(body)
        text = reply if isinstance(reply, str) else json.dumps(reply)
        return web.Response(status=status, text=text, content_type="application/json")


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
