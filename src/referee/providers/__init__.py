"""Judge providers: one module per wire format.

``openai`` (chat completions) serves OpenAI and any compatible server by ``base_url`` (vLLM, Ollama,
LM Studio, llama.cpp); ``anthropic`` (Messages) and ``gemini`` (generateContent) have their own. The clouds reuse
them at other endpoints: ``azure`` (OpenAI wire format at a deployment), ``vertex`` (Gemini wire format, Google
Cloud credentials); ``bedrock`` speaks AWS's Converse API. ``standin`` is no model: the local stand-in judge and model, to try
referee without a key (verdicts from token overlap with the reference, labelled as the stand-in's). All speak HTTP through aiohttp; no SDK is required
(the clouds' sign-in libraries are extras: ``azure``, ``vertex``, ``bedrock``).
"""

from __future__ import annotations

import importlib
import inspect
import os
from collections.abc import Callable
from typing import Any

from ..errors import UserError
from ._base import Completion, JudgeRequest, Message, Provider
from ._fake import FakeProvider
from ._families import model_family

PROVIDERS = ("anthropic", "openai", "gemini")
"""The providers with a wire format of their own."""
CLOUD_PROVIDERS = ("azure", "bedrock", "vertex")
"""Cloud endpoints with their own sign-in."""

# Local servers that speak the OpenAI wire format: name -> default base URL.
LOCAL_SERVERS = {
    "ollama": "http://localhost:11434/v1",
    "vllm": "http://localhost:8000/v1",
    "lmstudio": "http://localhost:1234/v1",
    "llamacpp": "http://localhost:8080/v1",
}


ENTRY_POINT_GROUP = "referee.providers"
"""Other packages add providers here: ``[project.entry-points."referee.providers"] myllm = "pkg.mod:MyProvider"``
(a :class:`Provider` subclass, or a function of no arguments returning one, so its SDK is imported only when
the provider is used)."""

# Built-in providers by name, imported on first use (each module may need an extra).
_BUILTIN = {
    "anthropic": "referee.providers._anthropic:AnthropicProvider",
    "openai": "referee.providers._openai_compat:OpenAICompatProvider",
    "gemini": "referee.providers._gemini:GeminiProvider",
    "azure": "referee.providers._azure:AzureOpenAIProvider",
    "bedrock": "referee.providers._bedrock:BedrockProvider",
    "vertex": "referee.providers._vertex:VertexProvider",
    "standin": "referee.providers._standin:StandinProvider",
    **{name: "referee.providers._openai_compat:OpenAICompatProvider" for name in LOCAL_SERVERS},
}
_REGISTERED: dict[str, type[Provider] | Callable[[], type[Provider]]] = {}
_EP_NAMES: list[str] | None = None


def register_provider(name: str, provider: type[Provider] | Callable[[], type[Provider]]) -> None:
    """Make ``provider`` (a :class:`Provider` subclass, or a function returning one) available as ``name`` in
    ``--provider``, suites' ``judge.provider`` and ``referee.Judge(name)``."""
    if not name or ":" in name:
        raise UserError(f"provider name {name!r}: a non-empty name without ':'")
    _REGISTERED[name] = provider


def _entry_points() -> dict[str, Any]:
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def is_builtin_or_registered(name: str) -> bool:
    """Whether ``name`` is a built-in or registered provider: known without reading the installed packages'
    entry points (a scan of every installed distribution's metadata, which most runs never need)."""
    return name in _BUILTIN or name in _REGISTERED


def provider_names() -> list[str]:
    """Every provider name: built-in, registered and installed plugins (plugins are not imported)."""
    global _EP_NAMES
    if _EP_NAMES is None:
        _EP_NAMES = sorted(_entry_points())
    return list(dict.fromkeys([*_BUILTIN, *_REGISTERED, *_EP_NAMES]))


def _as_class(obj: Any, where: str) -> type[Provider]:
    if inspect.isclass(obj) and issubclass(obj, Provider):
        return obj
    if callable(obj) and not inspect.isclass(obj):
        return _as_class(obj(), where)
    raise UserError(f"{where} is a {type(obj).__name__}, not a referee Provider subclass")


def provider_class(name: str) -> type[Provider]:
    """The provider class of ``name``: registered, built in, or from the ``referee.providers`` entry points."""
    if name in _REGISTERED:
        return _as_class(_REGISTERED[name], f"provider '{name}'")
    if name in _BUILTIN:
        module, _, attr = _BUILTIN[name].partition(":")
        cls: type[Provider] = getattr(importlib.import_module(module), attr)
        return cls
    eps = _entry_points()
    if name in eps:
        try:
            obj = eps[name].load()
        except Exception as exc:  # noqa: BLE001 - a broken plugin is the user's configuration problem
            raise UserError(f"provider plugin '{name}' ({eps[name].value}) failed to load: "
                            f"{type(exc).__name__}: {exc}") from exc
        return _as_class(obj, f"provider plugin '{name}' ({eps[name].value})")
    others = [n for n in provider_names() if n not in (*PROVIDERS, *CLOUD_PROVIDERS, *LOCAL_SERVERS)]
    raise UserError(f"unknown provider '{name}': use one of {', '.join((*PROVIDERS, *CLOUD_PROVIDERS))} "
                    f"(or {', '.join(LOCAL_SERVERS)} for a local OpenAI-compatible server"
                    + (f"; installed plugins: {', '.join(others)}" if others else "") + ")")


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
    "Completion",
    "ENTRY_POINT_GROUP",
    "FakeProvider",
    "JudgeRequest",
    "LOCAL_SERVERS",
    "Message",
    "PROVIDERS",
    "Provider",
    "api_key_for",
    "get_provider",
    "is_builtin_or_registered",
    "model_family",
    "provider_class",
    "provider_names",
    "register_provider",
]
