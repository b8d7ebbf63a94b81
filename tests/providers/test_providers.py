"""Each wire format through the real provider classes against FakeLLMServer (127.0.0.1)."""

from __future__ import annotations

import json
import socket

import pytest

from referee.errors import ProviderAuthError, ProviderError, ProviderUnavailable, UserError
from referee.evaluators._judge import TEMPLATE_REPLY_SCHEMA
from referee.providers import Completion, JudgeRequest, Message, Provider, get_provider
from referee.providers._anthropic import AnthropicProvider
from referee.providers._gemini import GeminiProvider
from referee.providers._openai_compat import OpenAICompatProvider
from referee.testing import FakeLLMServer, Reply
from tests.support.judging import KEY, verdict

REQ = JudgeRequest(messages=(Message("system", "SYS"), Message("user", "grade this")),
                   response_schema=TEMPLATE_REPLY_SCHEMA, max_tokens=300, temperature=0.0, seed=7)


async def complete_once(p: Provider, request: JudgeRequest) -> Completion:
    """One call through a real provider, closing its connections afterwards."""
    try:
        return await p.complete(request)
    finally:
        await p.aclose()


async def test_openai_request_shape_and_reply(fake_server: FakeLLMServer) -> None:
    fake_server.script(Reply(text=verdict(0.9), input_tokens=11, output_tokens=4))
    p = OpenAICompatProvider("m1", base_url=fake_server.openai_base_url, api_key=KEY)
    c = await complete_once(p, REQ)
    assert json.loads(c.text)["overall_score"] == 0.9
    assert (c.input_tokens, c.output_tokens, c.model) == (11, 4, "m1") and c.latency_ms > 0
    (req,) = fake_server.requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["Authorization"] == f"Bearer {KEY}"
    b = req.body
    assert b["model"] == "m1" and b["max_tokens"] == 300 and b["temperature"] == 0.0 and b["seed"] == 7
    assert b["messages"] == [{"role": "system", "content": "SYS"}, {"role": "user", "content": "grade this"}]
    rf = b["response_format"]
    assert rf["type"] == "json_schema" and rf["json_schema"]["schema"] == TEMPLATE_REPLY_SCHEMA
    assert rf["json_schema"]["name"] == "verdict"
    assert KEY not in req.path and not req.query


async def test_openai_degrades_json_schema_to_json_object_like_llama_cpp_python() -> None:
    with FakeLLMServer(openai_formats=("json_object", "none")) as srv:
        p = OpenAICompatProvider("m", base_url=srv.openai_base_url)
        try:
            await p.complete(REQ)
            await p.complete(REQ)
        finally:
            await p.aclose()
        kinds = [(r.body.get("response_format") or {}).get("type", "none") for r in srv.requests]
    # One rejected json_schema attempt, then json_object, remembered for the next call.
    assert kinds == ["json_schema", "json_object", "json_object"]


async def test_openai_degrades_to_no_response_format() -> None:
    with FakeLLMServer(openai_formats=("none",)) as srv:
        p = OpenAICompatProvider("m", base_url=srv.openai_base_url)
        c = await complete_once(p, REQ)
        kinds = [(r.body.get("response_format") or {}).get("type", "none") for r in srv.requests]
        assert "Authorization" not in srv.requests[0].headers  # no key configured: no header at all
    assert kinds == ["json_schema", "json_object", "none"] and json.loads(c.text)["overall_score"] == 0.8


def test_official_openai_needs_a_key_but_local_servers_do_not() -> None:
    with pytest.raises(ProviderAuthError, match="OPENAI_API_KEY"):
        OpenAICompatProvider("m")
    assert OpenAICompatProvider("m", base_url="http://127.0.0.1:9/v1").base_url == "http://127.0.0.1:9/v1"
    assert get_provider("ollama").base_url == "http://localhost:11434/v1"


async def test_anthropic_request_shape_and_tool_use(fake_server: FakeLLMServer) -> None:
    fake_server.script(Reply(text=verdict(0.3), input_tokens=21, output_tokens=9))
    p = AnthropicProvider("claude-x", base_url=fake_server.url, api_key=KEY)
    c = await complete_once(p, REQ)
    assert json.loads(c.text)["overall_score"] == 0.3 and (c.input_tokens, c.output_tokens) == (21, 9)
    (req,) = fake_server.requests
    assert req.path == "/v1/messages"
    assert req.headers["x-api-key"] == KEY and req.headers["anthropic-version"] == "2023-06-01"
    assert "Authorization" not in req.headers and KEY not in req.path and not req.query
    b = req.body
    assert b["system"] == "SYS" and b["messages"] == [{"role": "user", "content": "grade this"}]
    assert b["max_tokens"] == 300 and b["model"] == "claude-x"
    assert b["tools"][0]["name"] == "verdict" and b["tools"][0]["input_schema"] == TEMPLATE_REPLY_SCHEMA
    assert b["tool_choice"] == {"type": "tool", "name": "verdict"}


async def test_anthropic_text_reply_without_tool_use(fake_server: FakeLLMServer) -> None:
    fake_server.script("plain words, no JSON")  # the fake only wraps JSON objects in tool_use
    p = AnthropicProvider("claude-x", base_url=fake_server.url, api_key=KEY)
    c = await complete_once(p, REQ)
    assert c.text == "plain words, no JSON"


async def test_gemini_request_shape_key_in_header_never_in_url(fake_server: FakeLLMServer) -> None:
    fake_server.script(Reply(text=verdict(0.6), input_tokens=5, output_tokens=3))
    p = GeminiProvider("gemini-x", base_url=fake_server.url, api_key=KEY)
    c = await complete_once(p, REQ)
    assert json.loads(c.text)["overall_score"] == 0.6 and (c.input_tokens, c.output_tokens) == (5, 3)
    (req,) = fake_server.requests
    assert req.path == "/v1beta/models/gemini-x:generateContent"
    assert req.headers["x-goog-api-key"] == KEY
    assert req.query == {} and KEY not in req.path
    b = req.body
    assert b["systemInstruction"] == {"parts": [{"text": "SYS"}]}
    assert b["contents"] == [{"role": "user", "parts": [{"text": "grade this"}]}]
    cfg = b["generationConfig"]
    assert cfg["responseMimeType"] == "application/json" and cfg["maxOutputTokens"] == 300
    assert cfg["seed"] == 7 and cfg["temperature"] == 0.0
    # The template judge's schema is an open-ended map of criteria, which Gemini's schema subset cannot express:
    # sending only its fixed part would forbid the criteria, so plain JSON mode is used instead.
    assert "responseSchema" not in cfg


async def test_gemini_sends_a_response_schema_when_every_field_is_known(fake_server: FakeLLMServer) -> None:
    fixed = {"type": "object", "required": ["winner"],
             "properties": {"winner": {"type": "string", "enum": ["response_1", "response_2", "tie"]},
                            "quotes": {"type": "array", "items": {"type": "string"}}}}
    fake_server.script(Reply(text='{"winner": "tie"}'))
    p = GeminiProvider("gemini-x", base_url=fake_server.url, api_key=KEY)
    await complete_once(p, JudgeRequest(messages=(Message("user", "pick"),), response_schema=fixed))
    schema = fake_server.requests[0].body["generationConfig"]["responseSchema"]
    assert schema["type"] == "OBJECT" and schema["required"] == ["winner"]
    assert schema["properties"]["winner"] == {"type": "STRING", "enum": ["response_1", "response_2", "tie"]}
    assert schema["properties"]["quotes"]["items"]["type"] == "STRING"


async def test_gemini_thinking_tokens_are_billed_as_output(fake_server: FakeLLMServer) -> None:
    body = {"candidates": [{"content": {"role": "model", "parts": [{"text": verdict(0.5)}]}}],
            "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 30, "thoughtsTokenCount": 500,
                              "totalTokenCount": 630}}
    fake_server.script(Reply(body=body))
    p = GeminiProvider("gemini-2.5-flash", base_url=fake_server.url, api_key=KEY)
    c = await complete_once(p, REQ)
    assert (c.input_tokens, c.output_tokens) == (100, 530)


def test_anthropic_and_gemini_need_keys() -> None:
    with pytest.raises(ProviderAuthError, match="ANTHROPIC_API_KEY"):
        AnthropicProvider("m")
    with pytest.raises(ProviderAuthError, match="GEMINI_API_KEY"):
        GeminiProvider("m")


def _openai(srv: FakeLLMServer, timeout: float = 5.0) -> OpenAICompatProvider:
    return OpenAICompatProvider("m", base_url=srv.openai_base_url, api_key=KEY, timeout=timeout)


@pytest.mark.parametrize(("reply", "status", "retryable"), [
    (Reply(status=429, retry_after="3"), 429, True),
    (Reply(status=503), 503, True),
    (Reply(status=500), 500, True),
    (Reply(status=400), 400, False),
    (Reply(status=404), 404, False),
    (Reply(body="<html>502 bad gateway</html>"), 200, True),
])
async def test_http_errors_are_mapped(fake_server: FakeLLMServer, reply: Reply, status: int,
                                      retryable: bool) -> None:
    fake_server.script(reply)
    p = _openai(fake_server)
    try:
        with pytest.raises(ProviderError) as ei:
            await p.complete(REQ)
    finally:
        await p.aclose()
    assert ei.value.status == status and ei.value.retryable is retryable
    if reply.retry_after:
        assert ei.value.retry_after == 3.0


@pytest.mark.parametrize("status", [401, 403])
async def test_auth_errors(fake_server: FakeLLMServer, status: int) -> None:
    fake_server.script(Reply(status=status, body={"error": {"message": f"Incorrect API key provided: {KEY}"}}))
    p = _openai(fake_server)
    try:
        with pytest.raises(ProviderAuthError) as ei:
            await p.complete(REQ)
    finally:
        await p.aclose()
    assert not ei.value.retryable and "check the API key" in str(ei.value)
    assert KEY not in str(ei.value)  # a server echoing the key never puts it in our messages


@pytest.mark.parametrize("reply", [Reply(drop=True), Reply(truncate=True, text=verdict())])
async def test_dropped_and_truncated_connections_are_retryable(fake_server: FakeLLMServer, reply: Reply) -> None:
    fake_server.script(reply)
    p = _openai(fake_server)
    try:
        with pytest.raises(ProviderError) as ei:
            await p.complete(REQ)
    finally:
        await p.aclose()
    assert ei.value.retryable and "connection dropped" in str(ei.value)


async def test_timeout_is_retryable(fake_server: FakeLLMServer) -> None:
    fake_server.script(Reply(text=verdict(), delay=2.0))
    p = _openai(fake_server, timeout=0.2)
    try:
        with pytest.raises(ProviderError, match="timed out after 0.2s") as ei:
            await p.complete(REQ)
    finally:
        await p.aclose()
    assert ei.value.retryable


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_server_down_names_base_url_and_hides_credentials() -> None:
    url = f"http://user:pa55word@127.0.0.1:{_free_port()}/v1"
    p = AnthropicProvider("m", base_url=url, api_key=KEY)
    try:
        with pytest.raises(ProviderUnavailable) as ei:
            await p.complete(REQ)
    finally:
        await p.aclose()
    msg = str(ei.value)
    assert "base_url=" in msg and "cannot connect" in msg and "pa55word" not in msg and KEY not in msg


def test_url_credentials_and_openai_key_conflict_is_a_user_error() -> None:
    with pytest.raises(UserError, match="holds credentials") as ei:
        OpenAICompatProvider("m", base_url="http://u:secretpw@127.0.0.1:9/v1", api_key=KEY)
    assert "secretpw" not in str(ei.value)


def test_repr_and_describe_never_hold_the_key(fake_server: FakeLLMServer) -> None:
    p = AnthropicProvider("m", base_url=fake_server.url, api_key=KEY)
    assert KEY not in repr(p) and KEY not in json.dumps(p.describe())
