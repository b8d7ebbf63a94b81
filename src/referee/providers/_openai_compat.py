"""OpenAI chat-completions wire format: OpenAI itself and every compatible server by ``base_url``
(vLLM, Ollama, LM Studio, llama.cpp's server, gateways).

Structured output degrades step by step, because "compatible" servers differ: ``json_schema`` first; if the
server rejects it (llama-cpp-python accepts only ``json_object``) then ``json_object``; then no
``response_format`` at all. The level that worked is remembered for the rest of the run.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar
from urllib.parse import urlsplit

from .._util._redact import redact_url
from ..errors import ProviderAuthError, ProviderError, UserError, setting, setting_with
from ._base import Completion, JudgeRequest, Message, Provider
from ._http import HttpClient
from ._vision import content_list, openai_part

OPENAI_BASE_URL = "https://api.openai.com/v1"
_LEVELS = ("json_schema", "json_object", "none")


class OpenAICompatProvider(Provider):
    name: ClassVar[str] = "openai"
    default_model: ClassVar[str] = "gpt-4o-mini"
    key_env_vars: ClassVar[tuple[str, ...]] = ("OPENAI_API_KEY",)
    price_provider: ClassVar[str | None] = "openai"

    def __init__(self, model: str | None = None, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 60.0) -> None:
        base = (base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL).rstrip("/")
        super().__init__(model, base_url=base, api_key=api_key, timeout=timeout)
        self._official = base.startswith(OPENAI_BASE_URL)
        if self._official and not api_key:
            raise ProviderAuthError(f"no OpenAI API key: set OPENAI_API_KEY (or use {setting('base_url')} for a local "
                                    "OpenAI-compatible server)")
        if api_key and urlsplit(base).username:
            # aiohttp would refuse at the first call: both want the one Authorization header.
            raise UserError(f"{setting_with('base_url', redact_url(base))} holds credentials (user:password@) and "
                            f"{self.key_env_vars[0]} is set; both go in the Authorization header: use one")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = HttpClient(timeout=timeout, headers=headers, label=f"openai-compatible server {base}")
        self._level = 0
        self._max_tokens_field = "max_completion_tokens" if self._official else "max_tokens"

    def price_id(self) -> str | None:
        # A compatible server at another URL (vLLM, Ollama, a gateway) is not billed at OpenAI's prices.
        return self.price_provider if self._official else None

    def _chat_url(self) -> str:
        return f"{self.base_url}/chat/completions"

    async def _auth_headers(self) -> dict[str, str] | None:
        """Per-request credentials (refreshed tokens); the key of a static setup is a session header."""
        return None

    def _payload(self, request: JudgeRequest, level: str) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": _content(request, m)} for m in request.messages],
        }
        # The official API deprecates max_tokens for max_completion_tokens; compatible servers know max_tokens.
        payload[self._max_tokens_field] = request.max_tokens
        if request.temperature is not None:
            payload["temperature"] = request.temperature
        if request.seed is not None:
            payload["seed"] = request.seed
        if request.response_schema is not None:
            if level == "json_schema":
                payload["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": request.schema_name, "schema": request.response_schema,
                                    "strict": False},
                }
            elif level == "json_object":
                payload["response_format"] = {"type": "json_object"}
        return payload

    async def complete(self, request: JudgeRequest) -> Completion:
        url = self._chat_url()
        while True:
            level = _LEVELS[self._level]
            try:
                data, latency = await self._http.post_json(url, self._payload(request, level),
                                                           headers=await self._auth_headers())
                break
            except ProviderError as exc:
                if (exc.status in (400, 422, 500) and request.response_schema is not None
                        and self._level < len(_LEVELS) - 1 and _mentions_format(str(exc))):
                    self._level += 1
                    continue
                raise
        return self.parse_reply(data, latency)

    def parse_reply(self, data: dict[str, Any], latency: float = 0.0, *, batch: bool = False) -> Completion:
        """A chat.completion body (a live reply or one line of a batch's output file) -> Completion."""
        try:
            choice = data["choices"][0]
            text = choice["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ProviderError(f"openai-compatible server {redact_url(self.base_url or '')}: reply has no "
                                "choices[0].message",
                                retryable=True) from exc
        usage = data.get("usage") or {}
        details = usage.get("prompt_tokens_details") or {}
        cached = details.get("cached_tokens") if isinstance(details, dict) else None
        return Completion(text=text, input_tokens=usage.get("prompt_tokens"),
                          output_tokens=usage.get("completion_tokens"), model=data.get("model") or self.model,
                          latency_ms=latency, raw=data,
                          cache_read_tokens=cached if isinstance(cached, int) else None, batch=batch)

    async def aclose(self) -> None:
        await self._http.aclose()


def _content(request: JudgeRequest, m: Message) -> str | list[dict[str, Any]]:
    pieces = request.parts(m)
    if len(pieces) == 1 and isinstance(pieces[0], str):
        return pieces[0]
    return content_list(pieces, lambda t: {"type": "text", "text": t}, openai_part)


def _mentions_format(message: str) -> bool:
    m = message.lower()
    return any(w in m for w in ("response_format", "json_schema", "json schema", "response format", "grammar"))
