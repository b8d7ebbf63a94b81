"""The two sides of an episode from a provider's name and model: the agent (a model with tools) and the
simulated user (any provider), each through the shared client (retries, prices, the response cache)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import UserError
from ..runner._cache import ResponseCache
from ..runner._client import JudgeClient, RetryPolicy
from ._agents import Agent, HttpAgent, ModelAgent, PythonAgent
from ._simulator import Simulator


def _client(provider: str, model: str | None, base_url: str | None, *, tools: bool, timeout: float,
            max_retries: int, cache: bool, what: str) -> JudgeClient:
    from ..providers import LOCAL_SERVERS, api_key_for, provider_class

    cls: Any = provider_class(provider)
    if tools:
        from ..providers._gemini import GeminiProvider
        from ..targets._wire import GeminiToolProvider, with_tools

        if issubclass(cls, GeminiProvider):  # Gemini and Vertex AI: its endpoint and credentials, the tool payload
            cls = cls if issubclass(cls, GeminiToolProvider) else type(f"{cls.__name__}WithTools",
                                                                       (GeminiToolProvider, cls), {})
        else:
            try:
                cls = with_tools(cls)
            except UserError as exc:
                raise UserError(f"{what}: {exc}") from None
    if model is None and provider in LOCAL_SERVERS:
        raise UserError(f"{what}: provider {provider} needs a model name")
    prov = cls(model, base_url=base_url or LOCAL_SERVERS.get(provider), api_key=api_key_for(provider),
               timeout=timeout)
    return JudgeClient(prov, cache=ResponseCache() if cache else None, retry=RetryPolicy(max_retries=max_retries))


def model_agent(provider: str, model: str | None = None, *, base_url: str | None = None,
                system: str | None = None, max_tokens: int = 1024, temperature: float | None = 0.0,
                timeout: float = 60.0, max_retries: int = 4, cache: bool = True) -> ModelAgent:
    """The agent as a model with tools (OpenAI, Anthropic or Gemini wire format; the key from the environment)."""
    client = _client(provider, model, base_url, tools=True, timeout=timeout, max_retries=max_retries, cache=cache,
                     what="the agent")
    return ModelAgent(client, system=system, max_tokens=max_tokens, temperature=temperature, use_cache=cache)


def simulator(provider: str, model: str | None = None, *, base_url: str | None = None, max_tokens: int = 1024,
              temperature: float | None = 0.0, timeout: float = 60.0, max_retries: int = 4,
              cache: bool = True) -> Simulator:
    """The simulated user on any configured provider (the key from the environment)."""
    client = _client(provider, model, base_url, tools=False, timeout=timeout, max_retries=max_retries,
                     cache=cache, what="the simulated user")
    return Simulator(client, max_tokens=max_tokens, temperature=temperature, use_cache=cache)


def agent_from(ref: str, base_dir: str | Path | None = None) -> Agent:
    """An agent by reference: ``http(s)://...`` (an HTTP agent) or ``module:function`` (a Python agent; a
    module in ``base_dir``, the cases' folder, imports too, while it is imported and no longer)."""
    if ref.startswith(("http://", "https://")):
        return HttpAgent(url=ref)
    from ..evaluators._plugins import import_dotted
    from ._code import importable_from

    with importable_from(Path(base_dir) if base_dir is not None else None):
        fn = import_dotted(ref)
    if not callable(fn):
        raise UserError(f"agent {ref}: is a {type(fn).__name__}, not a function")
    return PythonAgent(fn)


def read_text(path: str | None) -> str | None:
    """A system prompt from a file (None: none)."""
    if path is None:
        return None
    p = Path(path)
    limit = 1 << 20
    try:
        with p.open("rb") as fh:  # read within the bound: a pipe or a device has no size to check first
            data = fh.read(limit + 1)
    except OSError as exc:
        raise UserError(f"cannot read {p}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise UserError(f"{p}: larger than 1 MiB, too large for a system prompt")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{p}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
