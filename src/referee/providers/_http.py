"""The HTTP layer shared by every wire format: one aiohttp session per provider, errors mapped at the boundary.

aiohttp rather than the official SDKs: the SDKs spend several CPU-milliseconds per call, which dominates a
judge run at high concurrency on small machines (bench/bench_judge.py measures it).
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass
from typing import Any

import aiohttp
from multidict import CIMultiDictProxy
from yarl import URL

from .._util._fastjson import dumps_bytes, loads
from .._util._redact import redact_text, url_secrets
from ..errors import ProviderAuthError, ProviderError, ProviderUnavailable, RefereeError, UserError, setting

_RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 529}
_JSON_HEADERS = {"Content-Type": "application/json"}

MAX_REPLY_ENV = "REFEREE_MAX_REPLY_BYTES"
DEFAULT_MAX_REPLY_BYTES = 32 * 1024 * 1024
"""The largest reply body read (a judge's, an HTTP target's): a larger one is an error, never read into memory."""
BATCH_RESULTS_FACTOR = 64
"""A batch job's results (a file, or the inlined replies of a Gemini job) may be this many replies' bound."""
MAX_REDIRECTS = 5
_REDIRECT_STATUS = {301, 302, 303, 307, 308}


def max_reply_bytes() -> int:
    """``REFEREE_MAX_REPLY_BYTES`` (a whole number of bytes above 0), else the default; anything else is a
    usage error naming the variable."""
    raw = os.environ.get(MAX_REPLY_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_REPLY_BYTES
    try:
        value = float(raw.replace("_", ""))
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 1 or value != int(value):
        raise UserError(f"{MAX_REPLY_ENV}={raw!r}: expected a whole number of bytes above 0 "
                        f"(default {DEFAULT_MAX_REPLY_BYTES})")
    return int(value)


class ReplyTooLarge(RefereeError):  # noqa: N818 - reads as the condition it names
    def __init__(self, limit: int) -> None:
        super().__init__(f"reply larger than {limit} bytes (the limit; {MAX_REPLY_ENV} raises it)")
        self.limit = limit


class RedirectRefused(RefereeError):  # noqa: N818
    """A redirect referee does not follow (another origin, too many hops, an upload to re-send)."""

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status


def _origin(url: URL) -> tuple[str, str, int | None]:
    return (url.scheme.lower(), (url.host or "").lower(), url.port)


def _origin_text(url: URL) -> str:
    # Only scheme, host and port: never the redirect's path, query or user info (they may carry tokens).
    host = url.host or "?"
    if ":" in host:
        host = f"[{host}]"
    return redact_text(f"{url.scheme}://{host}" + (f":{url.port}" if url.explicit_port else ""))


@dataclass(frozen=True)
class Reply:
    status: int
    headers: CIMultiDictProxy[str]
    body: bytes
    charset: str | None

    def text(self) -> str:
        try:
            return self.body.decode(self.charset or "utf-8", errors="replace")
        except LookupError:  # a charset Python does not know
            return self.body.decode("utf-8", errors="replace")


async def read_limited(resp: aiohttp.ClientResponse, limit: int) -> bytes:
    """The body, read in chunks and refused past ``limit`` bytes (decoded size: a compressed body counts as
    what it expands to); the connection is dropped, not drained, when refused."""
    encoding = resp.headers.get("Content-Encoding", "identity").strip().lower()
    length = resp.content_length
    if length is not None and encoding in ("", "identity"):
        if length > limit:
            raise ReplyTooLarge(limit)
        return await resp.read()  # exactly Content-Length bytes: aiohttp stops there
    buf = bytearray()
    async for chunk in resp.content.iter_any():
        buf += chunk
        if len(buf) > limit:
            raise ReplyTooLarge(limit)
    return bytes(buf)


async def fetch(session: aiohttp.ClientSession, method: str, url: str | URL, *, limit: int,
                headers: dict[str, str] | None = None, **kwargs: Any) -> Reply:
    """One request whose reply is read under ``limit``. Redirects within the request's origin are followed
    (with its headers); a redirect to another origin is refused with :class:`RedirectRefused`: headers carry
    credentials (``x-api-key``, ``api-key``, a target's ``${VAR}`` headers), and aiohttp would forward every one
    of them but ``Authorization`` to whatever host a 307 names."""
    target = url if isinstance(url, URL) else URL(url)
    start = _origin(target)
    for _hop in range(MAX_REDIRECTS + 1):
        async with session.request(method, target, headers=headers, allow_redirects=False, **kwargs) as resp:
            status = resp.status
            location = resp.headers.get("Location")
            if status not in _REDIRECT_STATUS or not location:
                return Reply(status, resp.headers, await read_limited(resp, limit), resp.charset)
            try:
                nxt = resp.url.join(URL(location))
            except ValueError:
                raise RedirectRefused(f"HTTP {status} redirect to an invalid address, not followed",
                                      status=status) from None
        if _origin(nxt) != start:
            raise RedirectRefused(
                f"HTTP {status} redirect to another origin ({_origin_text(nxt)}), not followed: requests keep "
                "their credentials to the address they were given", status=status)
        if isinstance(kwargs.get("data"), aiohttp.FormData):
            raise RedirectRefused(f"HTTP {status} redirect of an upload, not followed", status=status)
        if status == 303 or (status in (301, 302) and method.upper() == "POST"):
            method = "GET"  # what those statuses mean (and what clients do): the body is not re-sent
            kwargs.pop("data", None)
            kwargs.pop("json", None)
        target = nxt
    raise RedirectRefused(f"more than {MAX_REDIRECTS} redirects, not followed", status=status)


def parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        from email.utils import parsedate_to_datetime

        dt = parsedate_to_datetime(value)
        return max(0.0, dt.timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _is_secret_header(name: str) -> bool:
    n = name.lower()
    return "key" in n or "token" in n or n == "authorization"


def _error_message(body: str) -> str:
    try:
        data = json.loads(body)
    except ValueError:
        return body[:200]
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            return str(err.get("message") or err.get("type") or err)[:300]
        return str(err)[:300]
    return body[:200]


class HttpClient:
    def __init__(self, *, timeout: float, headers: dict[str, str], label: str, limit: int = 0) -> None:
        self._timeout = timeout
        self.max_bytes = max_reply_bytes()
        self._headers = headers
        # Header values are credentials (keys, bearer tokens): masked in every message this client builds.
        self._secrets = [v.removeprefix("Bearer ") for k, v in headers.items() if _is_secret_header(k)]
        self._label = redact_text(label)
        self._limit = limit
        """Connections at once (0: no limit here; the runner bounds calls in flight by --concurrency, and a pool
        smaller than that would queue requests inside aiohttp while the run waits)."""
        self._session: aiohttp.ClientSession | None = None

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                headers=self._headers,
                timeout=aiohttp.ClientTimeout(total=self._timeout),
                connector=aiohttp.TCPConnector(limit=self._limit, limit_per_host=self._limit),
                json_serialize=json.dumps,
            )
        return self._session

    async def post_json(self, url: str, payload: dict[str, Any], *,
                        headers: dict[str, str] | None = None) -> tuple[dict[str, Any], float]:
        """POST and return (decoded JSON body, latency ms); raises ProviderError subclasses (messages are
        redacted: no key or URL credentials). ``headers`` are per-request (signatures, refreshed tokens)."""
        body, latency, status = await self._request(
            "POST", url, data=dumps_bytes(payload), headers={**_JSON_HEADERS, **headers} if headers else _JSON_HEADERS)
        return self.decode(body, status), latency

    async def request(self, method: str, url: str | URL, *, data: str | bytes | aiohttp.FormData | None = None,
                      headers: dict[str, str] | None = None, max_bytes: int | None = None) -> tuple[str, float]:
        """Any method; returns (body text, latency ms). Errors as in :meth:`post_json`. ``max_bytes``: the
        body's bound when not a reply's (a batch's results file)."""
        body, latency, _ = await self._request(method, url, data=data, headers=headers, max_bytes=max_bytes)
        return body, latency

    async def _request(self, method: str, url: str | URL, *, data: str | bytes | aiohttp.FormData | None,
                       headers: dict[str, str] | None, max_bytes: int | None = None) -> tuple[str, float, int]:
        try:
            return await self._send(method, url, data, headers or {}, max_bytes or self.max_bytes)
        except ProviderError as exc:
            extra = [v.removeprefix("Bearer ") for k, v in (headers or {}).items() if _is_secret_header(k)]
            # Credentials in the URL travel too (aiohttp sends user:password@ as a Basic header): an endpoint
            # that echoes its request must not put them in a message.
            extra += url_secrets(str(url))
            msg = redact_text(str(exc), secrets=[*self._secrets, *extra])
            if msg != str(exc):
                exc.args = (msg,)
            raise

    async def get_json(self, url: str, *, headers: dict[str, str] | None = None,
                       max_bytes: int | None = None) -> dict[str, Any]:
        body, _, status = await self._request("GET", url, data=None, headers=headers, max_bytes=max_bytes)
        return self.decode(body, status)

    def decode(self, body: str, status: int | None = None) -> dict[str, Any]:
        """A JSON object body, or a retryable ProviderError (a proxy's HTML page, a truncated reply)."""
        try:
            data = loads(body)
        except ValueError as exc:
            raise ProviderError(f"{self._label}: the server sent a body that is not JSON: {body[:120]!r}",
                                status=status, retryable=True) from exc
        if not isinstance(data, dict):
            raise ProviderError(f"{self._label}: unexpected response body", status=status, retryable=True)
        return data

    async def _send(self, method: str, url: str | URL, data: str | bytes | aiohttp.FormData | None,
                    headers: dict[str, str], max_bytes: int) -> tuple[str, float, int]:
        session = self._get_session()
        t0 = time.perf_counter()
        try:
            reply = await fetch(session, method, url, limit=max_bytes, data=data, headers=headers)
            body = reply.text()
            status = reply.status
            retry_after = parse_retry_after(reply.headers.get("Retry-After"))
            if retry_after is None and reply.headers.get("retry-after-ms"):  # OpenAI's finer-grained hint
                ms = parse_retry_after(reply.headers.get("retry-after-ms"))
                retry_after = None if ms is None else ms / 1000
        except ReplyTooLarge as exc:
            raise ProviderError(f"{self._label}: {exc}") from None
        except RedirectRefused as exc:
            # Every later call would be redirected the same way: the run stops (exit 2) instead of failing each.
            raise ProviderUnavailable(f"{self._label}: {exc} (check {setting('base_url')})", status=exc.status) from None
        except TimeoutError as exc:
            raise ProviderError(f"{self._label}: timed out after {self._timeout:g}s", retryable=True) from exc
        except aiohttp.ClientConnectorError as exc:
            raise ProviderUnavailable(
                f"{self._label}: cannot connect to {exc.host}:{exc.port} (is the server running? check "
                f"{setting('base_url')})", retryable=True) from exc
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError, aiohttp.ClientOSError) as exc:
            raise ProviderError(f"{self._label}: connection dropped ({type(exc).__name__})",
                                retryable=True) from exc
        except aiohttp.InvalidURL as exc:
            raise ProviderUnavailable(f"{self._label}: invalid URL {exc} (check {setting('base_url')})") from exc
        except aiohttp.ClientError as exc:
            raise ProviderError(f"{self._label}: {type(exc).__name__}: {exc}", retryable=True) from exc
        latency = (time.perf_counter() - t0) * 1000
        if status >= 400:
            msg = f"{self._label}: HTTP {status}: {_error_message(body)}"
            if status in (401, 403):
                raise ProviderAuthError(msg + " (check the API key)", status=status)
            if status == 404:
                raise ProviderError(msg + f" (unknown model or wrong {setting('base_url')}?)", status=status)
            raise ProviderError(msg, status=status, retryable=status in _RETRYABLE_STATUS,
                                retry_after=retry_after)
        return body, latency, status

    async def aclose(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
