"""Anthropic Messages wire format. Structured output through tool use: one tool whose ``input_schema`` is the
verdict schema, forced with ``tool_choice``; the tool input is the verdict."""

from __future__ import annotations

import json
import os
from typing import Any, ClassVar

from .._util._redact import redact_url
from ..errors import ProviderAuthError, ProviderError
from ._base import Completion, JudgeRequest, Message, Provider
from ._http import HttpClient
from ._vision import anthropic_part, content_list

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"


class AnthropicProvider(Provider):
    name: ClassVar[str] = "anthropic"
    default_model: ClassVar[str] = "claude-sonnet-4-6"
    key_env_vars: ClassVar[tuple[str, ...]] = ("ANTHROPIC_API_KEY",)
    price_provider: ClassVar[str | None] = "anthropic"

    def __init__(self, model: str | None = None, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 60.0) -> None:
        base = (base_url or os.environ.get("ANTHROPIC_BASE_URL") or ANTHROPIC_BASE_URL).rstrip("/")
        super().__init__(model, base_url=base, api_key=api_key, timeout=timeout)
        if not api_key:
            raise ProviderAuthError("no Anthropic API key: set ANTHROPIC_API_KEY")
        self._http = HttpClient(timeout=timeout, label=f"Anthropic API {base}", headers={
            "x-api-key": api_key, "anthropic-version": ANTHROPIC_VERSION})

    def _payload(self, request: JudgeRequest) -> dict[str, Any]:
        system = "\n\n".join(m.content for m in request.messages if m.role == "system")
        payload: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "messages": [{"role": m.role, "content": _content(request, m)} for m in request.messages
                         if m.role != "system"],
        }
        if system:
            payload["system"] = system
        if request.temperature is not None:
            payload["temperature"] = request.temperature
        if request.response_schema is not None:
            payload["tools"] = [{
                "name": request.schema_name,
                "description": "Submit the verdict. Call this tool exactly once with every field filled in.",
                "input_schema": request.response_schema,
            }]
            payload["tool_choice"] = {"type": "tool", "name": request.schema_name}
        return payload

    async def complete(self, request: JudgeRequest) -> Completion:
        data, latency = await self._http.post_json(f"{self.base_url}/v1/messages", self._payload(request))
        return self.parse_reply(data, latency)

    def parse_reply(self, data: dict[str, Any], latency: float = 0.0, *, batch: bool = False) -> Completion:
        """A Messages API message (live, or the ``result.message`` of a batch) -> Completion."""
        blocks = data.get("content")
        if not isinstance(blocks, list):
            raise ProviderError(f"Anthropic API {redact_url(self.base_url or '')}: reply has no content list",
                                retryable=True)
        text = ""
        for block in blocks:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                text = json.dumps(block.get("input"), ensure_ascii=False)
                break
        else:
            text = "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
        usage = data.get("usage") or {}
        # Anthropic's input_tokens excludes cache reads and writes: the total is their sum.
        parts = [usage.get(k) for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")]
        total_in = sum(p for p in parts if isinstance(p, int)) if isinstance(parts[0], int) else None
        cached = usage.get("cache_read_input_tokens")
        return Completion(text=text, input_tokens=total_in,
                          output_tokens=usage.get("output_tokens"), model=data.get("model") or self.model,
                          latency_ms=latency, raw=data, cache_read_tokens=cached if isinstance(cached, int) else None,
                          batch=batch)

    async def aclose(self) -> None:
        await self._http.aclose()


def _content(request: JudgeRequest, m: Message) -> str | list[dict[str, Any]]:
    pieces = request.parts(m)
    if len(pieces) == 1 and isinstance(pieces[0], str):
        return pieces[0]
    return content_list(pieces, lambda t: {"type": "text", "text": t}, anthropic_part)
