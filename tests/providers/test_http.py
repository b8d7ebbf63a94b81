"""The judges' HTTP layer against hostile servers: a key never follows a redirect to another origin, and a reply
is read under a size bound (a huge or endless body is an error, not the machine's memory)."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from referee.errors import ProviderError, ProviderUnavailable, UserError
from referee.providers import JudgeRequest, Message, get_provider
from tests.support.http import RawServer, endless_body, raw_server, record_only, redirect_to
from tests.support.judging import make_cases, write_cases

REQ = JudgeRequest(messages=(Message("user", "grade this"),), response_schema=None, max_tokens=50, temperature=0.0)
SECRET = "sk-redirect-0123456789abcdefSECRET"
# provider -> (the environment variable of its key, the header that carries it)
PROVIDERS = {"openai": ("OPENAI_API_KEY", "authorization"), "anthropic": ("ANTHROPIC_API_KEY", "x-api-key"),
             "gemini": ("GEMINI_API_KEY", "x-goog-api-key"), "azure": ("AZURE_OPENAI_API_KEY", "api-key")}


@pytest.fixture(autouse=True)
def _only_this_tests_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "AZURE_OPENAI_API_KEY",
                "AZURE_OPENAI_AD_TOKEN", "AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_DEPLOYMENT", "REFEREE_MAX_REPLY_BYTES"):
        monkeypatch.delenv(var, raising=False)


def _provider(name: str, base_url: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv(PROVIDERS[name][0], SECRET)
    base = base_url + "/v1" if name == "openai" else base_url
    return get_provider(name, "m", base_url=base, timeout=20)


async def _complete(p: Any) -> Any:
    try:
        return await p.complete(REQ)
    finally:
        await p.aclose()


@pytest.mark.parametrize("status", [307, 302])
@pytest.mark.parametrize("name", sorted(PROVIDERS))
async def test_a_key_never_follows_a_redirect_to_another_origin(name: str, status: int,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    with raw_server(record_only) as other:
        with raw_server(redirect_to(lambda: other.url, status)) as front:
            p = _provider(name, front.url, monkeypatch)
            with pytest.raises(ProviderUnavailable) as err:
                await _complete(p)
    assert front.requests and front.requests[0]["headers"][PROVIDERS[name][1]].endswith(SECRET)
    assert other.requests == []  # not even without the key: the run stops at the first call
    msg = str(err.value)
    assert f"HTTP {status} redirect to another origin (http://127.0.0.1:{other.port})" in msg
    assert "not followed" in msg and SECRET not in msg


async def test_a_redirect_within_the_origin_is_followed_with_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    async def handle(srv: RawServer, request: web.Request) -> web.StreamResponse:
        if not request.path.startswith("/moved/"):
            return web.Response(status=308, headers={"Location": "/moved" + request.path_qs})
        return web.json_response({"choices": [{"message": {"content": "fine"}, "finish_reason": "stop"}],
                                  "usage": {"prompt_tokens": 3, "completion_tokens": 1}})

    with raw_server(handle) as srv:
        c = await _complete(_provider("openai", srv.url, monkeypatch))
    assert c.text == "fine"
    assert [r["path"] for r in srv.requests] == ["/v1/chat/completions", "/moved/v1/chat/completions"]
    assert all(r["method"] == "POST" and r["headers"]["authorization"] == f"Bearer {SECRET}" for r in srv.requests)


async def test_endless_redirects_within_the_origin_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    async def handle(srv: RawServer, request: web.Request) -> web.StreamResponse:
        return web.Response(status=307, headers={"Location": f"/hop{len(srv.requests)}"})

    with raw_server(handle) as srv:
        with pytest.raises(ProviderError, match="more than 5 redirects"):
            await _complete(_provider("anthropic", srv.url, monkeypatch))
    assert len(srv.requests) == 6


@pytest.mark.parametrize("name", ["openai", "anthropic"])
async def test_a_reply_over_the_bound_is_an_error_not_read_whole(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFEREE_MAX_REPLY_BYTES", "1000000")
    with raw_server(endless_body(chunk=64 * 1024)) as srv:
        with pytest.raises(ProviderError, match="reply larger than 1000000 bytes") as err:
            await _complete(_provider(name, srv.url, monkeypatch))
    assert not err.value.retryable  # the same request would get the same body


async def test_a_declared_length_over_the_bound_is_refused_before_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    async def handle(srv: RawServer, request: web.Request) -> web.StreamResponse:
        return web.Response(body=b"{" + b" " * 5000 + b"}", content_type="application/json")

    monkeypatch.setenv("REFEREE_MAX_REPLY_BYTES", "4096")
    with raw_server(handle) as srv:
        with pytest.raises(ProviderError, match="reply larger than 4096 bytes"):
            await _complete(_provider("gemini", srv.url, monkeypatch))


@pytest.mark.parametrize("bad", ["abc", "nan", "inf", "-1", "0", "1.5"])
def test_the_reply_bound_must_be_a_whole_positive_number(bad: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from referee.providers._http import DEFAULT_MAX_REPLY_BYTES, max_reply_bytes

    monkeypatch.setenv("REFEREE_MAX_REPLY_BYTES", bad)
    with pytest.raises(UserError, match="REFEREE_MAX_REPLY_BYTES"):
        max_reply_bytes()
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with pytest.raises(UserError, match="REFEREE_MAX_REPLY_BYTES"):
        get_provider("openai", "m", base_url="http://127.0.0.1:9/v1")
    monkeypatch.setenv("REFEREE_MAX_REPLY_BYTES", "2_000_000")
    assert max_reply_bytes() == 2_000_000
    monkeypatch.delenv("REFEREE_MAX_REPLY_BYTES")
    assert max_reply_bytes() == DEFAULT_MAX_REPLY_BYTES == 32 * 1024 * 1024


def _one_gib_of_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def test_an_endless_judge_reply_under_a_memory_cap_is_an_error_row(tmp_path: Path) -> None:
    cases = write_cases(tmp_path / "cases.jsonl", make_cases(2))
    tmpl = tmp_path / "t.md"
    tmpl.write_text("Grade {output}", encoding="utf-8")
    out = tmp_path / "r.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(PYTHONPATH=os.pathsep.join(sys.path), REFEREE_CACHE_DIR=str(tmp_path / "cache"),
               OPENAI_API_KEY=SECRET)
    env.pop("REFEREE_MAX_REPLY_BYTES", None)
    with raw_server(endless_body()) as srv:  # the default bound (32 MiB) under a 1 GiB address space
        done = subprocess.run(
            [sys.executable, "-m", "referee", "judge", str(cases), "-t", str(tmpl), "-o", str(out),
             "--provider", "openai", "--base-url", srv.url + "/v1", "--model", "m", "--concurrency", "2"],
            env=env, capture_output=True, text=True, timeout=180, preexec_fn=_one_gib_of_memory,
            start_new_session=True)
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr, done.stderr[-2000:]
    assert done.returncode == 1, done.stderr[-2000:]  # nothing graded
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 2 and {r["status"] for r in rows} == {"error"}
    assert all(f"reply larger than {32 * 1024 * 1024} bytes" in r["error"] for r in rows)
