"""Gemini generateContent wire format. The key travels in the ``x-goog-api-key`` header, never in the URL
(the seed put it in the query string, where it leaks into logs). Structured output through
``responseMimeType: application/json`` plus ``responseSchema`` (the OpenAPI subset Gemini accepts)."""

from __future__ import annotations

import os
from typing import Any, ClassVar

from ..errors import ProviderAuthError, ProviderError
from ._base import Completion, JudgeRequest, Provider
from ._http import HttpClient
from ._vision import content_list, gemini_part

GEMINI_BASE_URL = "https://generativelanguage.googleapis.com"
_SCHEMA_KEYS = {"type", "format", "description", "nullable", "enum", "properties", "required", "items",
                "minimum", "maximum", "minItems", "maxItems", "propertyOrdering"}


def to_gemini_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """Convert a JSON Schema to Gemini's subset; None when it cannot be expressed (open-ended maps)."""
    if schema.get("type") == "object" and not schema.get("properties"):
        return None
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict) and extra:
        # Gemini's subset has no open-ended maps: sending only the fixed properties would forbid the rest
        # (the template judge's criteria), so fall back to plain JSON mode.
        return None
    out: dict[str, Any] = {}
    for k, v in schema.items():
        if k not in _SCHEMA_KEYS:
            continue
        if k == "type":
            if isinstance(v, list):  # ["string", "null"] -> nullable string
                types = [t for t in v if t != "null"]
                out["nullable"] = len(types) < len(v)
                v = types[0] if types else "string"
            out["type"] = str(v).upper()
        elif k == "properties":
            props = {}
            for name, sub in v.items():
                conv = to_gemini_schema(sub) if isinstance(sub, dict) else None
                if conv is None:
                    return None
                props[name] = conv
            out["properties"] = props
        elif k == "items":
            conv = to_gemini_schema(v) if isinstance(v, dict) else None
            if conv is None:
                return None
            out["items"] = conv
        else:
            out[k] = v
    return out


class GeminiProvider(Provider):
    name: ClassVar[str] = "gemini"
    default_model: ClassVar[str] = "gemini-2.5-flash"
    key_env_vars: ClassVar[tuple[str, ...]] = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    price_provider: ClassVar[str | None] = "google"
    label: str = "Gemini API"

    def __init__(self, model: str | None = None, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 60.0) -> None:
        base = (base_url or os.environ.get("GEMINI_BASE_URL") or GEMINI_BASE_URL).rstrip("/")
        super().__init__(model, base_url=base, api_key=api_key, timeout=timeout)
        if not api_key:
            raise ProviderAuthError("no Gemini API key: set GEMINI_API_KEY (or GOOGLE_API_KEY)")
        self._http = HttpClient(timeout=timeout, label=f"Gemini API {base}", headers={"x-goog-api-key": api_key})

    def _payload(self, request: JudgeRequest) -> dict[str, Any]:
        system = "\n\n".join(m.content for m in request.messages if m.role == "system")
        contents = [
            {"role": "model" if m.role == "assistant" else "user",
             "parts": content_list(request.parts(m), lambda t: {"text": t}, gemini_part) or [{"text": ""}]}
            for m in request.messages if m.role != "system"
        ]
        config: dict[str, Any] = {"maxOutputTokens": request.max_tokens}
        if request.temperature is not None:
            config["temperature"] = request.temperature
        if request.seed is not None:
            config["seed"] = request.seed
        if request.response_schema is not None:
            config["responseMimeType"] = "application/json"
            converted = to_gemini_schema(request.response_schema)
            if converted is not None:
                config["responseSchema"] = converted
        payload: dict[str, Any] = {"contents": contents, "generationConfig": config}
        if system:
            payload["systemInstruction"] = {"parts": [{"text": system}]}
        return payload

    def _model_url(self, action: str) -> str:
        return f"{self.base_url}/v1beta/models/{self.model}:{action}"

    async def _auth_headers(self) -> dict[str, str] | None:
        """Per-request credentials (Vertex's refreshed tokens); the API key is a session header."""
        return None

    async def complete(self, request: JudgeRequest) -> Completion:
        data, latency = await self._http.post_json(self._model_url("generateContent"), self._payload(request),
                                                   headers=await self._auth_headers())
        return self.parse_reply(data, latency)

    def parse_reply(self, data: dict[str, Any], latency: float = 0.0, *, batch: bool = False) -> Completion:
        """A GenerateContentResponse (live, or one inlined response of a batch) -> Completion."""
        try:
            cand = data["candidates"][0]
            parts = cand.get("content", {}).get("parts", [])
            text = "".join(p.get("text", "") for p in parts if isinstance(p, dict))
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            feedback = data.get("promptFeedback")
            raise ProviderError(f"{self.label}: reply has no candidates{f' ({feedback})' if feedback else ''}",
                                retryable=False) from exc
        usage = data.get("usageMetadata") or {}
        out_tokens = usage.get("candidatesTokenCount")
        if out_tokens is not None and isinstance(usage.get("thoughtsTokenCount"), int):
            # Thinking models (2.5) count thoughts apart from the answer but bill them as output tokens.
            out_tokens += usage["thoughtsTokenCount"]
        cached = usage.get("cachedContentTokenCount")
        return Completion(text=text, input_tokens=usage.get("promptTokenCount"),
                          output_tokens=out_tokens,
                          model=data.get("modelVersion") or self.model, latency_ms=latency, raw=data,
                          cache_read_tokens=cached if isinstance(cached, int) else None, batch=batch)

    async def aclose(self) -> None:
        await self._http.aclose()
