"""Judge providers: one module per wire format.

``openai`` (chat completions) serves OpenAI and any compatible server by ``base_url`` (vLLM, Ollama,
LM Studio, llama.cpp); ``anthropic`` (Messages) and ``gemini`` (generateContent) have their own. The clouds reuse
them at other endpoints: ``azure`` (OpenAI wire format at a deployment), ``vertex`` (Gemini wire format, Google
Cloud credentials); ``bedrock`` speaks AWS's Converse API. All speak HTTP through aiohttp; no SDK is required
(the clouds' sign-in libraries are extras: ``azure``, ``vertex``, ``bedrock``).
"""

from __future__ import annotations

import os

from ..errors import UserError
from .base import Completion, JudgeRequest, Message, Provider
from .fake import FakeProvider

PROVIDERS = ("anthropic", "openai", "gemini")
CLOUD_PROVIDERS = ("azure", "bedrock", "vertex")

# Local servers that speak the OpenAI wire format: name -> default base URL.
LOCAL_SERVERS = {
    "ollama": "http://localhost:11434/v1",
    "vllm": "http://localhost:8000/v1",
    "lmstudio": "http://localhost:1234/v1",
    "llamacpp": "http://localhost:8080/v1",
}


def provider_class(name: str) -> type[Provider]:
    if name == "anthropic":
        from .anthropic import AnthropicProvider

        return AnthropicProvider
    if name in ("openai", *LOCAL_SERVERS):
        from .openai_compat import OpenAICompatProvider

        return OpenAICompatProvider
    if name == "gemini":
        from .gemini import GeminiProvider

        return GeminiProvider
    if name == "azure":
        from .azure import AzureOpenAIProvider

        return AzureOpenAIProvider
    if name == "bedrock":
        from .bedrock import BedrockProvider

        return BedrockProvider
    if name == "vertex":
        from .vertex import VertexProvider

        return VertexProvider
    raise UserError(f"unknown provider '{name}': use one of anthropic, openai, gemini, azure, bedrock, vertex "
                    f"(or {', '.join(LOCAL_SERVERS)} for a local OpenAI-compatible server)")


def api_key_for(name: str) -> str | None:
    """The key from the provider's usual environment variables (never from a flag: flags end up in logs)."""
    cls = provider_class(name)
    for var in cls.key_env_vars:
        value = os.environ.get(var)
        if value:
            return value
    return None


def get_provider(name: str, model: str | None = None, *, base_url: str | None = None,
                 timeout: float = 60.0) -> Provider:
    """Build a provider by name; the key comes from the environment."""
    cls = provider_class(name)
    if name in LOCAL_SERVERS and base_url is None:
        base_url = LOCAL_SERVERS[name]
    return cls(model, base_url=base_url, api_key=api_key_for(name), timeout=timeout)


__all__ = [
    "CLOUD_PROVIDERS",
    "LOCAL_SERVERS",
    "PROVIDERS",
    "Completion",
    "FakeProvider",
    "JudgeRequest",
    "Message",
    "Provider",
    "api_key_for",
    "get_provider",
    "provider_class",
]
