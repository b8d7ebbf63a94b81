"""A minimal OpenAI chat-completions server for benchmarks: raw asyncio protocol, HTTP/1.1 keep-alive, one
fixed valid verdict per request after a fixed latency.

:class:`~referee.testing._server.FakeLLMServer` is built for scripting (aiohttp, every wire format, recorded
requests) and spends about a CPU-millisecond per request; on a 2-core machine that distorts a throughput
measurement of the client. This server answers with ``loop.call_later`` (no task per request) and spends a
small fraction of that. Run with ``python -m referee.testing --fast --latency 0.2``.

``GET /_stats`` returns, and then resets, what the server saw since the last such call: the number of requests,
the wall-clock time (``time.time()``) of the first one's arrival and of the last answer sent. A benchmark splits a
client's run with it into start-up (its start to the first request), the requests, and the tail (the last answer
to its exit).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

_VERDICT = json.dumps({"quality": {"score": 0.8, "rationale": "clear and correct"}, "overall_score": 0.8})
_ANSWER = "Go to Settings > Security > Reset password and follow the link we email you."
"""What a system under test says: a request without ``response_format`` is a generation, not a judge call
(``bench/bench_targets.py``)."""
_PATHS = (b"/v1/chat/completions", b"/chat/completions")


def _response(status: int, body: bytes) -> bytes:
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}.get(status, "Error")
    head = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: keep-alive\r\n\r\n")
    return head.encode("ascii") + body


def _completion(model: str, text: str = _VERDICT) -> bytes:
    return json.dumps({
        "id": "chatcmpl-fast", "object": "chat.completion", "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 40, "total_tokens": 160},
    }).encode()


class _Stats:
    """What ``GET /_stats`` reports (then resets): requests seen, first arrival, last answer sent."""

    def __init__(self) -> None:
        self.requests = 0
        self.first_request_at: float | None = None
        self.last_response_at: float | None = None

    def take(self) -> bytes:
        body = json.dumps({"requests": self.requests, "first_request_at": self.first_request_at,
                           "last_response_at": self.last_response_at}).encode()
        self.requests, self.first_request_at, self.last_response_at = 0, None, None
        return body


class _Protocol(asyncio.Protocol):
    def __init__(self, latency: float, stats: _Stats) -> None:
        self.latency = latency
        self.stats = stats
        self.buf = b""
        self.transport: asyncio.Transport | None = None
        self.loop = asyncio.get_running_loop()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buf[:end]
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            if len(self.buf) < end + 4 + length:
                return
            body = self.buf[end + 4 : end + 4 + length]
            self.buf = self.buf[end + 4 + length :]
            self._answer(head.split(b" ", 2), body)

    def _answer(self, request_line: list[bytes], body: bytes) -> None:
        if request_line[:2] == [b"GET", b"/_stats"]:
            self._send(_response(200, self.stats.take()))
            return
        self.stats.requests += 1
        if self.stats.first_request_at is None:
            self.stats.first_request_at = time.time()
        if len(request_line) < 2 or request_line[0] != b"POST" or request_line[1] not in _PATHS:
            self._reply(_response(404, b'{"error": {"message": "not found"}}'))
            return
        try:
            payload: Any = json.loads(body)
            model = str(payload["model"])
            if not isinstance(payload["messages"], list):
                raise TypeError
        except (ValueError, KeyError, TypeError):
            self._reply(_response(400, b'{"error": {"message": "expected a chat.completions request"}}'))
            return
        data = _response(200, _completion(model, _VERDICT if "response_format" in payload else _ANSWER))
        if self.latency > 0:
            self.loop.call_later(self.latency, self._reply, data)
        else:
            self._reply(data)

    def _reply(self, data: bytes) -> None:
        self._send(data)
        self.stats.last_response_at = time.time()

    def _send(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None


async def serve(host: str = "127.0.0.1", port: int = 0, latency: float = 0.2,
                started: asyncio.Future[str] | None = None) -> None:
    """Serve until cancelled; ``started`` receives the base URL once listening."""
    loop = asyncio.get_running_loop()
    stats = _Stats()
    server = await loop.create_server(lambda: _Protocol(latency, stats), host, port, backlog=1024)
    sock_port = server.sockets[0].getsockname()[1]
    url = f"http://{host}:{sock_port}"
    if started is not None:
        started.set_result(url)
    else:
        print(url, flush=True)
    async with server:
        await server.serve_forever()
