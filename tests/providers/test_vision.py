"""Images on every wire format, through the real HTTP client against the local server (which checks each image
part as the real API would: base64 that decodes, a media type the bytes are), and the capability rule that
refuses a provider or model that cannot take images before any call."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from referee._util import _image
from referee.cases import load_cases
from referee.cases._templates import case_values
from referee.errors import ProviderError
from referee.evaluators._judge import TEMPLATE_REPLY_SCHEMA
from referee.evaluators._prompt_guard import fill_template, judge_request
from referee.providers import JudgeRequest, Message, Provider, get_provider
from referee.providers._anthropic import AnthropicProvider
from referee.providers._gemini import GeminiProvider
from referee.providers._openai_compat import OpenAICompatProvider
from referee.providers._vision import ImagesRefused, check_images, refusal
from referee.runner import JudgeClient
from referee.testing import FakeLLMServer, Reply
from tests.providers.test_cloud import _adc_file, _aws_env, _no_cloud_credentials  # noqa: F401 - the fixture
from tests.support.images import part, png
from tests.support.judging import verdict

PNG = png(3, 2)
TEMPLATE = "Look at the chart: {output}\nThe question was: {input}\nReply with JSON."


def _request(tmp: Path, output: Any = None) -> JudgeRequest:
    (tmp / "cases.jsonl").write_text(json.dumps({"id": "c1", "input": "How many bars?",
                                                 "output": output or part(PNG, name="chart.png")}) + "\n")
    case = load_cases(tmp / "cases.jsonl").cases[0]
    user, case_text = fill_template(TEMPLATE, case_values(case))
    return judge_request("SYS", user, case_text, response_schema=TEMPLATE_REPLY_SCHEMA, max_tokens=100)


async def _send(p: Provider, request: JudgeRequest, srv: FakeLLMServer) -> Any:
    srv.script(Reply(text=verdict(0.9)))
    try:
        return await p.complete(request)
    finally:
        await p.aclose()


def _checked(srv: FakeLLMServer) -> dict[str, Any]:
    (img,) = srv.requests[-1].images  # parsed and checked in the wire format's own shape
    assert img["bytes"] == PNG and img["media_type"] == "image/png"
    return srv.requests[-1].body


async def test_openai_sends_an_image_url_data_url_where_the_template_names_the_field(
        fake_server: FakeLLMServer, tmp_path: Path) -> None:
    c = await _send(OpenAICompatProvider("gpt-4o", base_url=fake_server.openai_base_url), _request(tmp_path),
                    fake_server)
    assert json.loads(c.text)["overall_score"] == 0.9
    content = _checked(fake_server)["messages"][1]["content"]
    assert [p["type"] for p in content] == ["text", "image_url", "text"]
    assert content[0]["text"] == "Look at the chart: "
    assert content[1]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert content[2]["text"].startswith("\nThe question was: How many bars?")


async def test_anthropic_sends_a_base64_image_block(fake_server: FakeLLMServer, tmp_path: Path) -> None:
    await _send(AnthropicProvider("claude-sonnet-4-6", base_url=fake_server.url, api_key="k"), _request(tmp_path),
                fake_server)
    content = _checked(fake_server)["messages"][0]["content"]
    assert content[1] == {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                      "data": base64.b64encode(PNG).decode()}}
    assert content[0] == {"type": "text", "text": "Look at the chart: "}


async def test_gemini_sends_inline_data(fake_server: FakeLLMServer, tmp_path: Path) -> None:
    await _send(GeminiProvider("gemini-2.5-flash", base_url=fake_server.url, api_key="k"), _request(tmp_path),
                fake_server)
    parts = _checked(fake_server)["contents"][0]["parts"]
    assert parts[1] == {"inline_data": {"mime_type": "image/png", "data": base64.b64encode(PNG).decode()}}
    assert parts[0] == {"text": "Look at the chart: "}


async def test_bedrock_converse_sends_an_image_block(fake_server: FakeLLMServer, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    _aws_env(monkeypatch, fake_server)
    p = get_provider("bedrock", "anthropic.claude-3-haiku-20240307-v1:0")
    await _send(p, _request(tmp_path), fake_server)
    content = _checked(fake_server)["messages"][0]["content"]
    assert content[1] == {"image": {"format": "png", "source": {"bytes": base64.b64encode(PNG).decode()}}}


async def test_vertex_sends_inline_data_at_its_endpoint(fake_server: FakeLLMServer, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("google.auth")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(_adc_file(tmp_path, fake_server)))
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "p")
    await _send(get_provider("vertex", "gemini-2.5-flash", base_url=fake_server.url), _request(tmp_path),
                fake_server)
    assert "/publishers/google/models/gemini-2.5-flash:generateContent" in fake_server.requests[-1].path
    assert _checked(fake_server)["contents"][0]["parts"][1]["inline_data"]["mime_type"] == "image/png"


async def test_azure_sends_the_openai_image_part(fake_server: FakeLLMServer, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-key")
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", fake_server.url)
    await _send(get_provider("azure", "my-vision-deployment"), _request(tmp_path), fake_server)
    assert _checked(fake_server)["messages"][1]["content"][1]["type"] == "image_url"


async def test_the_local_server_rejects_a_malformed_image_part(fake_server: FakeLLMServer) -> None:
    lying = _image.Image(media_type="image/jpeg", sha256="0" * 64, data=PNG)  # a part the loader never makes
    req = JudgeRequest(messages=(Message("user", f"see {_image.marker(lying)}"),))
    for p in (OpenAICompatProvider("gpt-4o", base_url=fake_server.openai_base_url),
              AnthropicProvider("claude-sonnet-4-6", base_url=fake_server.url, api_key="k"),
              GeminiProvider("gemini-2.5-flash", base_url=fake_server.url, api_key="k")):
        with pytest.raises(ProviderError, match="media type 'image/jpeg' but the bytes are image/png") as info:
            await _send(p, req, fake_server)
        assert info.value.status == 400


async def test_a_text_only_model_is_refused_before_any_call(fake_server: FakeLLMServer, tmp_path: Path) -> None:
    client = JudgeClient(OpenAICompatProvider("gpt-3.5-turbo", base_url=fake_server.openai_base_url))
    try:
        with pytest.raises(ImagesRefused, match="model 'gpt-3.5-turbo' \\(openai\\) takes text only"):
            await client.complete(_request(tmp_path))
        assert fake_server.requests == [] and client.stats.calls == 0
        await client.complete(judge_request("SYS", "text only", ()))  # text still goes
        assert len(fake_server.requests) == 1
    finally:
        await client.aclose()


def test_the_capability_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    inline = (_image.from_bytes(PNG),)
    remote = (_image.image_of({"type": "image", "url": "https://example.com/a.png"}),)

    class P:
        def __init__(self, name: str, model: str) -> None:
            self.name, self.model = name, model

    assert refusal(P("openai", "gpt-4o-mini"), inline) is None
    assert refusal(P("anthropic", "claude-3-5-haiku-20241022"), inline) == (
        "model 'claude-3-5-haiku-20241022' (anthropic) takes text only, not images")
    assert refusal(P("anthropic", "claude-opus-4-1"), remote) is None  # Anthropic fetches URLs itself
    assert "inline images only" in str(refusal(P("gemini", "gemini-2.5-pro"), remote))
    assert "inline images only" in str(refusal(P("bedrock", "anthropic.claude-3-haiku-v1:0"), remote))
    unknown = refusal(P("ollama", "llava:13b"), inline)
    assert unknown == ("model 'llava:13b' (ollama) is not known to take images; if it does, set "
                       "REFEREE_IMAGE_MODELS=llava:13b (comma-separated patterns)")
    assert "takes text only" in str(refusal(P("standin", "standin"), inline))  # it cannot see: never a score
    monkeypatch.setenv("REFEREE_IMAGE_MODELS", "llava*, qwen2-vl*")
    assert refusal(P("ollama", "llava:13b"), inline) is None
    with pytest.raises(ImagesRefused, match="1 image\\(s\\) refused before any call"):
        check_images(P("openai", "o3-mini"), inline)
    check_images(P("openai", "o3-mini"), ())  # no image: nothing to refuse


REMOTE = {"type": "image", "url": "https://images.example.invalid/chart.png"}


async def test_a_remote_image_goes_as_its_url_to_openai_and_anthropic_and_is_never_fetched(
        fake_server: FakeLLMServer, tmp_path: Path) -> None:
    await _send(OpenAICompatProvider("gpt-4o", base_url=fake_server.openai_base_url), _request(tmp_path, REMOTE),
                fake_server)
    content = fake_server.requests[-1].body["messages"][1]["content"]
    assert content[1] == {"type": "image_url", "image_url": {"url": REMOTE["url"]}}
    await _send(AnthropicProvider("claude-sonnet-4-6", base_url=fake_server.url, api_key="k"),
                _request(tmp_path, REMOTE), fake_server)
    blocks = fake_server.requests[-1].body["messages"][0]["content"]
    assert {"type": "image", "source": {"type": "url", "url": REMOTE["url"]}} in blocks
    # The local server read each as a remote part (its URL, no bytes): referee sent the link, fetched nothing.
    assert [(i["url"], i["bytes"]) for r in fake_server.requests for i in r.images] == [(REMOTE["url"], None)] * 2


async def test_a_remote_image_is_refused_before_any_call_where_the_api_takes_inline_bytes_only(
        fake_server: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _aws_env(monkeypatch, fake_server)
    for p in (GeminiProvider("gemini-2.5-flash", base_url=fake_server.url, api_key="k"),
              get_provider("bedrock", "anthropic.claude-3-haiku-20240307-v1:0")):
        client = JudgeClient(p)
        try:
            with pytest.raises(ImagesRefused, match="refused before any call") as info:
                await client.complete(_request(tmp_path, REMOTE))
            assert "path" in str(info.value) or "data" in str(info.value)
        finally:
            await client.aclose()
    assert fake_server.requests == []
