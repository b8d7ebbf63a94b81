"""``referee collect``: an OTLP/HTTP receiver for traces (OpenTelemetry protocol specification, OTLP/HTTP).

- ``POST /v1/traces`` with ``application/x-protobuf`` or ``application/json``, optionally
  ``Content-Encoding: gzip``: spans are decoded, redacted, and written to the sink before the reply, so a reply
  of 200 means stored. Spans rejected (bounds, bad ids) are named in ``partial_success``.
- ``POST /v1/logs`` and ``/v1/metrics``: a stated reply, every item rejected in ``partial_success`` with the
  message that referee receives traces only (the exporter does not retry a partial success).
- Bounds: the body (``max_body_bytes``, compressed as sent) and its decompressed size (``max_decoded_bytes``) give
  413; a span or an attribute value over its bound is rejected. At most ``max_inflight`` requests are decoded
  and stored at once: the next one gets 503 with ``Retry-After`` (back-pressure, never a growing queue), and
  connections past ``max_connections`` get 429 with ``Retry-After``. Memory is therefore bounded by about
  ``max_inflight * max_decoded_bytes`` whatever the sender does.
- Listens on 127.0.0.1 unless ``allow_remote``; another address needs a bearer ``token`` (checked on every
  request) and, since the token must not travel in clear, either TLS (``certfile``/``keyfile``) or
  ``behind_proxy`` (a TLS-terminating proxy on the same host).
"""

from __future__ import annotations

import errno
import hmac
import ipaddress
import logging
import math
import re
import socket
import ssl
import sys
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .._util._redact import redact_text
from ..errors import UserError
from ._ingest import DEFAULT_MAX_DECODED_BYTES, ingest
from ._otlp import (
    DEFAULT_MAX_ATTRIBUTE_BYTES,
    DEFAULT_MAX_SPAN_BYTES,
    OTLPDecodeError,
    decode_traces,
    other_signal_response,
    trace_response,
)
from ._redact import Redactor
from ._sink import TraceSink

log = logging.getLogger(__name__)

STORE_WARNING_EVERY_S = 60.0
"""While the store keeps failing, the operator is told again at most this often (with the count since)."""

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 4318
"""OTLP/HTTP's standard port."""
DEFAULT_MAX_BODY_BYTES = 16 << 20
DEFAULT_MAX_INFLIGHT = 4
DEFAULT_MAX_CONNECTIONS = 64
RETRY_AFTER_S = 1
HANDSHAKE_TIMEOUT_S = 10.0
"""A TLS client has this long to finish its handshake (in its connection's own thread)."""

_TYPES = {"application/x-protobuf": "application/x-protobuf", "application/protobuf": "application/x-protobuf",
          "application/json": "application/json"}


MIN_REMOTE_TOKEN_CHARS = 16
"""A token that guards a receiver reachable beyond this host is at least this long (not guessable)."""


@dataclass
class CollectorConfig:
    """Where the receiver listens, who may send, and its bounds (defaults in docs/monitoring.md)."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    allow_remote: bool = False
    token: str | None = None
    certfile: str | None = None
    keyfile: str | None = None
    behind_proxy: bool = False
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_decoded_bytes: int = DEFAULT_MAX_DECODED_BYTES
    max_span_bytes: int = DEFAULT_MAX_SPAN_BYTES
    max_attribute_bytes: int = DEFAULT_MAX_ATTRIBUTE_BYTES
    max_inflight: int = DEFAULT_MAX_INFLIGHT
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    redactor: Redactor = field(default_factory=Redactor)
    sample_rate: float | None = None
    """Sampling at ingest: only traces whose id hashes under this rate (:func:`~referee.traces.trace_fraction`,
    the monitor's own rule) are stored; the others are counted, never kept. None: every trace is stored."""

    def check(self) -> None:
        if self.token is not None:
            # A header carries visible ASCII: a space or a control character cannot arrive intact, and a non-ASCII
            # token is compared as its UTF-8 bytes against a header read as Latin-1, so no request would match.
            if not self.token or not all("!" <= ch <= "~" for ch in self.token):
                raise UserError("--token (REFEREE_COLLECT_TOKEN) must be visible ASCII characters without spaces "
                                "(e.g. the output of `openssl rand -hex 32`)")
            if not _is_loopback(self.host) and len(self.token) < MIN_REMOTE_TOKEN_CHARS:
                raise UserError(f"--token is {len(self.token)} characters: listening beyond loopback it must be at "
                                f"least {MIN_REMOTE_TOKEN_CHARS} (e.g. the output of `openssl rand -hex 32`)")
        if not _is_loopback(self.host):
            if not self.allow_remote:
                raise UserError(f"referee collect listens on loopback unless told otherwise: --host {self.host} "
                                "needs --allow-remote (and --token, with --tls-cert/--tls-key or --behind-proxy)")
            if not self.token:
                raise UserError("--allow-remote needs --token (or REFEREE_COLLECT_TOKEN): every request must "
                                "carry 'Authorization: Bearer <token>'")
            if not (self.certfile or self.behind_proxy):
                raise UserError("--allow-remote needs TLS (--tls-cert and --tls-key) or --behind-proxy (a "
                                "TLS-terminating proxy in front): the token must not travel in clear")
        if bool(self.certfile) != bool(self.keyfile):
            raise UserError("--tls-cert and --tls-key go together")
        for name in ("max_body_bytes", "max_decoded_bytes", "max_span_bytes", "max_attribute_bytes",
                     "max_inflight", "max_connections"):
            if int(getattr(self, name)) < 1:
                raise UserError(f"{name} must be at least 1")
        if self.sample_rate is not None and not (isinstance(self.sample_rate, int | float)
                                                 and math.isfinite(self.sample_rate) and 0 <= self.sample_rate <= 1):
            raise UserError(f"the sampling rate must be a number from 0 to 1, got {self.sample_rate!r}")


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass
class CollectorStats:
    """Counts since start, by what happened (read with :meth:`Collector.stats`)."""

    requests: int = 0
    spans_received: int = 0
    spans_stored: int = 0
    duplicates: int = 0
    rejected: dict[str, int] = field(default_factory=dict)
    busy_replies: int = 0
    refused_requests: dict[str, int] = field(default_factory=dict)


class _TooLarge(Exception):
    pass


def _gunzip(body: bytes, limit: int) -> bytes:
    """Decompressed gzip with a bound: past ``limit`` bytes it stops (a gzip bomb costs ``limit``, not more).
    A body of several gzip members (RFC 1952) is their concatenation: reading the first alone dropped the spans of
    the others with a reply of 200, and bytes after the last member that are not one are a malformed body."""
    parts: list[bytes] = []
    size = 0
    while True:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out = d.decompress(body, limit + 1 - size)  # never 0 (no bound to zlib): size is at most limit here
        except zlib.error as exc:
            raise OTLPDecodeError(f"malformed gzip: {exc}") from None
        size += len(out)
        if size > limit or d.unconsumed_tail:
            raise _TooLarge(f"decompressed body over {limit} bytes")
        if not d.eof:
            raise OTLPDecodeError("truncated gzip body")
        parts.append(out)
        body = d.unused_data
        if not body:
            return parts[0] if len(parts) == 1 else b"".join(parts)


_CHUNK_SIZE = re.compile(rb"[0-9a-fA-F]{1,16}")


def _read_chunked(read: Callable[[int], bytes], readline: Callable[[int], bytes], limit: int) -> bytes:
    """A chunked body (RFC 9112, section 7.1) with a bound: past ``limit`` bytes it stops (413), and a body that
    ends before its last chunk is malformed (400), as one cut short of its Content-Length is."""
    parts: list[bytes] = []
    size = 0
    while True:
        line = readline(1024)
        m = _CHUNK_SIZE.match(line.split(b";", 1)[0].strip())
        if not line.endswith(b"\n") or m is None or m.end() != len(line.split(b";", 1)[0].strip()):
            raise OTLPDecodeError("malformed chunked body" if line else "the body ended before its last chunk")
        n = int(m.group(), 16)
        if n == 0:
            break
        size += n
        if size > limit:
            raise _TooLarge(f"body over {limit} bytes")
        data = read(n)
        if len(data) < n or read(2) != b"\r\n":
            raise OTLPDecodeError("the body ended before its last chunk" if len(data) < n else
                                  "malformed chunked body")
        parts.append(data)
    for _ in range(100):  # trailer fields, ignored, up to the empty line
        line = readline(8192)
        if line in (b"\r\n", b"\n"):
            return b"".join(parts)
        if not line.endswith(b"\n"):
            break
    raise OTLPDecodeError("malformed chunked body")


class Collector:
    """The receiver: ``start()`` serves in a thread (``serve_forever()`` in the caller's), ``stop()`` ends it.
    ``clock_ns`` stamps the arrival of each batch (the monitor's quiet period is measured from it)."""

    def __init__(self, sink: TraceSink, config: CollectorConfig | None = None, *,
                 clock_ns: Callable[[], int] = time.time_ns) -> None:
        self.config = config or CollectorConfig()
        self.config.check()
        self.sink = sink
        self._clock_ns = clock_ns
        self._inflight = threading.BoundedSemaphore(self.config.max_inflight)
        self._connections = 0
        self._lock = threading.Lock()
        self._stats = CollectorStats()
        self._changed = threading.Condition(self._lock)
        try:
            self._server = _Server((self.config.host, self.config.port), _handler_for(self), self)
        except OSError as exc:  # the bare "[Errno 98] Address already in use" named neither the address nor the port
            hint = " (another program listens there: choose another with --port)" \
                if exc.errno == errno.EADDRINUSE else ""
            raise UserError(f"cannot listen on {self.config.host} port {self.config.port}: "
                            f"{exc.strerror or exc}{hint}") from None
        if self.config.certfile:
            ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ctx.load_cert_chain(self.config.certfile, self.config.keyfile)
            # Each connection is wrapped in its own thread, not the listening socket: wrapped there, accept()
            # runs the handshake in the one thread that accepts, and a client that connects and says nothing
            # stops every other client.
            self._server.tls = ctx
        self._thread: threading.Thread | None = None
        self.last_error: str | None = None
        """The last failure to store (its type and message), for the operator."""
        self._store_failures = 0  # since the operator was last told
        self._store_told_at = -math.inf

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def endpoint(self) -> str:
        scheme = "https" if self.config.certfile else "http"
        return f"{scheme}://{self.config.host}:{self.port}"

    def start(self) -> Collector:
        self._thread = threading.Thread(target=self._server.serve_forever, name="referee-collect", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._server.serve_forever()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> Collector:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stats(self) -> CollectorStats:
        with self._lock:
            s = self._stats
            return CollectorStats(s.requests, s.spans_received, s.spans_stored, s.duplicates, dict(s.rejected),
                                  s.busy_replies, dict(s.refused_requests))

    def wait_for(self, predicate: Callable[[CollectorStats], bool], timeout: float = 30.0) -> CollectorStats:
        """Block until ``predicate(stats)`` holds (woken by each request, never polling); raises TimeoutError."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                snap = CollectorStats(self._stats.requests, self._stats.spans_received, self._stats.spans_stored,
                                      self._stats.duplicates, dict(self._stats.rejected), self._stats.busy_replies,
                                      dict(self._stats.refused_requests))
                if predicate(snap):
                    return snap
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"collector did not reach the expected state: {snap}")
                self._changed.wait(left)

    def _update(self, fn: Callable[[CollectorStats], None]) -> None:
        with self._changed:
            fn(self._stats)
            self._changed.notify_all()

    # -- one request ----------------------------------------------------------------------------------------

    def handle(self, path: str, headers: Any, body_reader: Callable[[int], bytes],
               line_reader: Callable[[int], bytes] | None = None) -> tuple[int, dict[str, str], bytes]:
        """One request; ``line_reader`` (the connection's ``readline``) reads a chunked body."""
        cfg = self.config

        def refuse(code: int, reason: str, message: str, extra: dict[str, str] | None = None) -> \
                tuple[int, dict[str, str], bytes]:
            def bump(s: CollectorStats) -> None:
                s.requests += 1
                s.refused_requests[reason] = s.refused_requests.get(reason, 0) + 1
            self._update(bump)
            return code, {"Content-Type": "text/plain; charset=utf-8", **(extra or {})}, message.encode()

        if cfg.token is not None:
            # The scheme's name is case-insensitive (RFC 9110, section 11.1): "bearer" is "Bearer"; the token is not.
            scheme, _, given = (headers.get("Authorization") or "").strip().partition(" ")
            if not (hmac.compare_digest(given.strip().encode("utf-8", "replace"), cfg.token.encode())
                    and scheme.lower() == "bearer"):
                return refuse(401, "unauthorized", "missing or wrong bearer token",
                              {"WWW-Authenticate": "Bearer"})
        if path not in ("/v1/traces", "/v1/logs", "/v1/metrics"):
            return refuse(404, "not_found", "POST OTLP traces to /v1/traces")
        ctype = _TYPES.get((headers.get("Content-Type") or "").split(";")[0].strip().lower())
        if ctype is None:
            return refuse(415, "unsupported_media_type",
                          "Content-Type must be application/x-protobuf or application/json")
        transfer = (headers.get("Transfer-Encoding") or "").strip().lower()
        # An exporter that streams its body (OpenTelemetry JS on Node.js pipes every request) has no length to
        # give: its body is chunked, read within the same bound. A length beside it is refused, as HTTP/1.1 asks
        # of a server that cannot tell which one frames the body.
        chunked = transfer == "chunked" and line_reader is not None
        if transfer and not chunked:
            return refuse(501, "unsupported_transfer_encoding", f"Transfer-Encoding {transfer[:40]} is not supported")
        if chunked and headers.get("Content-Length") is not None:
            return refuse(400, "malformed", "both Content-Length and Transfer-Encoding: chunked")
        try:
            length = -1 if chunked else int(headers.get("Content-Length") or "")
        except ValueError:
            return refuse(411, "no_length", "Content-Length (or Transfer-Encoding: chunked) is required")
        if length < 0 and not chunked:
            return refuse(400, "malformed", "bad Content-Length")
        if length > cfg.max_body_bytes:
            return refuse(413, "too_large", f"body over {cfg.max_body_bytes} bytes")
        if not self._inflight.acquire(blocking=False):
            def busy(s: CollectorStats) -> None:
                s.requests += 1
                s.busy_replies += 1
            self._update(busy)
            # The body is not read (a flood costs no memory); the connection is closed after the reply.
            return 503, {"Retry-After": str(RETRY_AFTER_S), "Content-Type": "text/plain; charset=utf-8"}, \
                b"busy: retry later"
        try:
            try:
                if line_reader is not None and chunked:
                    body = _read_chunked(body_reader, line_reader, cfg.max_body_bytes)
                else:
                    body = body_reader(length)
            except TimeoutError:  # the sender stalled mid-body: not the store's fault, and nothing was kept
                return refuse(408, "timeout", "the body stopped arriving before its end")
            if len(body) < length:  # the connection ended early: a part of a request is not decoded as one
                return refuse(400, "malformed", "the body ended before its Content-Length")
            encoding = (headers.get("Content-Encoding") or "identity").strip().lower()
            if encoding == "gzip":
                body = _gunzip(body, cfg.max_decoded_bytes)
            elif encoding not in ("identity", ""):
                return refuse(415, "unsupported_encoding", f"Content-Encoding {encoding} is not supported (gzip is)")
            if path != "/v1/traces":
                reply = other_signal_response(path, body, ctype)
                self._update(lambda s: setattr(s, "requests", s.requests + 1))
                return 200, {"Content-Type": ctype}, reply
            decoded = decode_traces(body, ctype, max_span_bytes=cfg.max_span_bytes,
                                    max_attribute_bytes=cfg.max_attribute_bytes)
            received = len(decoded.spans) + decoded.rejected
            added = ingest(self.sink, decoded, cfg.redactor, received_ns=self._clock_ns(),
                           sample_rate=cfg.sample_rate)

            def done(s: CollectorStats) -> None:
                s.requests += 1
                s.spans_received += received
                s.spans_stored += added.stored
                s.duplicates += added.duplicates
                for reason, n in decoded.reasons.items():
                    s.rejected[reason] = s.rejected.get(reason, 0) + n
            self._update(done)
            return 200, {"Content-Type": ctype}, trace_response(decoded.rejected, decoded.error_message, ctype)
        except _TooLarge as exc:
            return refuse(413, "too_large", str(exc))
        except OTLPDecodeError as exc:
            return refuse(400, "malformed", str(exc))
        except Exception as exc:  # noqa: BLE001 - the store is down or locked: nothing was kept, so ask for a retry
            self.last_error = redact_text(f"{type(exc).__name__}: {str(exc)[:300]}")
            self._tell_store_failure()
            return refuse(503, "store_unavailable", "spans could not be stored: retry later",
                          {"Retry-After": str(RETRY_AFTER_S)})
        finally:
            self._inflight.release()

    def _tell_store_failure(self) -> None:
        """Say that the store refused a request (the exporter is told to retry, and the operator would otherwise
        see nothing until the counts at exit): the first time, then at most every ``STORE_WARNING_EVERY_S``."""
        now = time.monotonic()
        with self._lock:
            self._store_failures += 1
            if now - self._store_told_at < STORE_WARNING_EVERY_S:
                return
            n, self._store_failures, self._store_told_at = self._store_failures, 0, now
        log.warning("the store could not take %d request(s) of spans (%s); replied 503, so the exporters send them "
                    "again", n, self.last_error)

    def _connection_opened(self) -> bool:
        with self._lock:
            if self._connections >= self.config.max_connections:
                return False
            self._connections += 1
            return True

    def _connection_closed(self) -> None:
        with self._lock:
            self._connections -= 1


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 64
    tls: ssl.SSLContext | None = None

    def __init__(self, addr: tuple[str, int], handler: type[BaseHTTPRequestHandler], owner: Collector) -> None:
        self.owner = owner
        if ":" in addr[0]:
            self.address_family = socket.AF_INET6
        super().__init__(addr, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.owner._connection_opened():
            try:  # over the connection cap: a short 429 without a thread (over TLS, only closed: no handshake here)
                if self.tls is None:
                    request.sendall(f"HTTP/1.1 429 Too Many Requests\r\nRetry-After: {RETRY_AFTER_S}\r\n"
                                    "Content-Length: 0\r\nConnection: close\r\n\r\n".encode())
            except OSError:
                pass
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """An exporter that left mid-reply (its timeout, its process ended) is no error to print."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            if self.tls is not None:
                request.settimeout(HANDSHAKE_TIMEOUT_S)
                try:
                    request = self.tls.wrap_socket(request, server_side=True)
                except OSError:  # a failed or abandoned handshake (SSLError is an OSError): nothing to answer
                    self.shutdown_request(request)
                    return
            super().process_request_thread(request, client_address)
        finally:
            self.owner._connection_closed()


def _handler_for(owner: Collector) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "referee-collect"
        timeout = 30

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
            pass  # request lines could carry what a user would not want in a log; counts are in stats()

        def _reply(self, code: int, headers: dict[str, str], body: bytes) -> None:
            self.send_response(code)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
            code, headers, body = owner.handle(self.path.split("?")[0], self.headers, self.rfile.read,
                                               self.rfile.readline)
            if code >= 400:  # a body may be left unread: the connection cannot carry another request
                self.close_connection = True
            self._reply(code, headers, body)

        def do_GET(self) -> None:  # noqa: N802
            self.close_connection = True
            self._reply(405, {"Allow": "POST", "Content-Type": "text/plain"}, b"OTLP/HTTP: POST to /v1/traces")

        # Every other method HTTP defines gets the same 405 naming POST (the stdlib answered them with a 501 page
        # of HTML); HEAD gets its headers alone.
        do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_TRACE = do_CONNECT = do_GET  # noqa: N815

        def do_HEAD(self) -> None:  # noqa: N802
            self.close_connection = True
            self.send_response(405)
            self.send_header("Allow", "POST")
            self.send_header("Content-Length", "0")
            self.end_headers()

    return Handler
