"""The HTTP layer shared by every wire format: one aiohttp session per provider, errors mapped at the boundary.

aiohttp rather than the official SDKs: the SDKs spend several CPU-milliseconds per call, which dominates a
judge run at high concurrency on small machines (bench/bench_judge.py measures it).
"""

from __future__ import annotations

import json
import time
from typing import Any

import aiohttp
from yarl import URL

from .._util._fastjson import dumps_bytes, loads
from .._util._redact import redact_text
from ..errors import ProviderAuthError, ProviderError, ProviderUnavailable

_RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 529}
_JSON_HEADERS = {"Content-Type": "application/json"}


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
                      headers: dict[str, str] | None = None) -> tuple[str, float]:
        """Any method; returns (body text, latency ms). Errors as in :meth:`post_json`."""
        body, latency, _ = await self._request(method, url, data=data, headers=headers)
        return body, latency

    async def _request(self, method: str, url: str | URL, *, data: str | bytes | aiohttp.FormData | None,
                       headers: dict[str, str] | None) -> tuple[str, float, int]:
        try:
            return await self._send(method, url, data, headers or {})
        except ProviderError as exc:
            extra = [v.removeprefix("Bearer ") for k, v in (headers or {}).items() if _is_secret_header(k)]
            msg = redact_text(str(exc), secrets=[*self._secrets, *extra])
            if msg != str(exc):
                exc.args = (msg,)
            raise

    async def get_json(self, url: str, *, headers: dict[str, str] | None = None) -> dict[str, Any]:
        body, _, status = await self._request("GET", url, data=None, headers=headers)
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
                    headers: dict[str, str]) -> tuple[str, float, int]:
        session = self._get_session()
        t0 = time.perf_counter()
        try:
            async with session.request(method, url, data=data, headers=headers) as resp:
                body = await resp.text(errors="replace")
                status = resp.status
                retry_after = parse_retry_after(resp.headers.get("Retry-After"))
                if retry_after is None and resp.headers.get("retry-after-ms"):  # OpenAI's finer-grained hint
                    ms = parse_retry_after(resp.headers.get("retry-after-ms"))
                    retry_after = None if ms is None else ms / 1000
        except TimeoutError as exc:
            raise ProviderError(f"{self._label}: timed out after {self._timeout:g}s", retryable=True) from exc
        except aiohttp.ClientConnectorError as exc:
            raise ProviderUnavailable(
                f"{self._label}: cannot connect to {exc.host}:{exc.port} (is the server running? check "
                "--base-url)", retryable=True) from exc
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError, aiohttp.ClientOSError) as exc:
            raise ProviderError(f"{self._label}: connection dropped ({type(exc).__name__})",
                                retryable=True) from exc
        except aiohttp.InvalidURL as exc:
            raise ProviderUnavailable(f"{self._label}: invalid URL {exc} (check --base-url)") from exc
        except aiohttp.ClientError as exc:
            raise ProviderError(f"{self._label}: {type(exc).__name__}: {exc}", retryable=True) from exc
        latency = (time.perf_counter() - t0) * 1000
        if status >= 400:
            msg = f"{self._label}: HTTP {status}: {_error_message(body)}"
            if status in (401, 403):
                raise ProviderAuthError(msg + " (check the API key)", status=status)
            if status == 404:
                raise ProviderError(msg + " (unknown model or wrong --base-url?)", status=status)
            raise ProviderError(msg, status=status, retryable=status in _RETRYABLE_STATUS,
                                retry_after=retry_after)
        return body, latency, status

    async def aclose(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
