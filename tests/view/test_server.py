"""The viewer's HTTP server: what a client that stalls, or sends what is refused, gets."""

from __future__ import annotations

import socket

import pytest

from referee.view._server import MAX_BODY, _Handler
from tests.view.conftest import Served


def _exchange(served: Served, sent: bytes, timeout: float = 60) -> bytes:
    """What the server sends back on one connection until it closes it (a hang ends in socket.timeout)."""
    data = b""
    with socket.create_connection((served.server.host, served.server.port), timeout=timeout) as s:
        s.sendall(sent)
        while chunk := s.recv(4096):
            data += chunk
    return data


def _post(served: Served, length: int, body: bytes) -> bytes:
    host = f"{served.server.host}:{served.server.port}".encode()
    return (b"POST /api/labels HTTP/1.1\r\nHost: " + host + b"\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + str(length).encode() + b"\r\n\r\n" + body)


def test_a_connection_that_goes_silent_is_closed(served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each connection holds a thread: one opened and left silent (or a request stopped halfway through its body)
    # held it for as long as the client liked. It is now closed after the idle bound (1 s here).
    assert _Handler.timeout is not None and 0 < _Handler.timeout <= 600
    monkeypatch.setattr("referee.view._server._Handler.timeout", 1.0)
    assert _exchange(served, b"") == b""
    reply = _exchange(served, _post(served, 100, b"{"))
    assert reply.startswith(b"HTTP/1.1 408 "), reply  # nothing was made of half a body


def test_a_refused_body_ends_the_connection(served: Served) -> None:
    # A body refused unread (over the bound) stays in the stream: the connection was kept open, and its bytes
    # would have been read as the next request. The reply now closes it (the idle bound is 120 s; the client
    # gives up after 30).
    reply = _exchange(served, _post(served, MAX_BODY + 1, b""), timeout=30)
    assert reply.startswith(b"HTTP/1.1 413 "), reply


@pytest.mark.parametrize("path", ["/static/app.js", "/api/runs"])
def test_a_client_that_leaves_mid_reply_prints_no_traceback(served: Served, path: str,
                                                            capfd: pytest.CaptureFixture[str]) -> None:
    # A page navigated away from closes its connections while replies are being written: each printed a
    # BrokenPipeError traceback to the viewer's terminal (and the API's tried to write a 500 after it).
    mine, theirs = socket.socketpair()
    host = f"{served.server.host}:{served.server.port}".encode()
    theirs.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: " + host + b"\r\n\r\n")
    theirs.close()  # gone before the reply: writing it fails at once
    served.server.process_request_thread(mine, ("127.0.0.1", 1))  # what the connection's thread runs
    assert "Traceback" not in capfd.readouterr().err
    assert _exchange(served, b"GET /api/runs HTTP/1.1\r\nHost: " + host + b"\r\nConnection: close\r\n\r\n") \
        .startswith(b"HTTP/1.1 200 ")
