"""The agent under test: a model with tools (OpenAI, Anthropic or Gemini wire format), a Python callable or an HTTP
service. Each takes the conversation so far (neutral messages, the tool loop's shape: ``{"role", "content",
"tool_calls": [{"id", "name", "arguments"}], "tool_call_id", "is_error"}``) and the tools, and returns the next
assistant turn: text for the user and/or tool calls.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .._util._redact import redact_text, redact_url
from ..errors import ProviderError, RefereeError, UserError
from ..providers._base import Message
from ..runner._client import JudgeClient


@dataclass
class AgentTurn:
    """One assistant turn: text for the user and/or tool calls, with the call's own tokens, cost and latency."""

    content: str | None
    tool_calls: list[dict[str, Any]]
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    latency_ms: float = 0.0
    cached: bool = False


class AgentFailed(RefereeError):
    """The agent could not answer (its reply is unusable, it raised); the episode ends as ``agent_error``."""


def turn_of(value: Any, what: str) -> AgentTurn:
    """A reply as an assistant turn: text, or ``{"content", "tool_calls"}``; anything else is AgentFailed."""
    if isinstance(value, str):
        return AgentTurn(content=value, tool_calls=[])
    if not isinstance(value, dict):
        raise AgentFailed(f"{what} returned a {type(value).__name__}, not text or an object with content / "
                          "tool_calls")
    content = value.get("content")
    if content is not None and not isinstance(content, str):
        raise AgentFailed(f"{what}: 'content' is a {type(content).__name__}, not text")
    calls = []
    for i, c in enumerate(value.get("tool_calls") or []):
        if not isinstance(c, dict) or not isinstance(c.get("name"), str):
            raise AgentFailed(f"{what}: tool_calls[{i}] has no 'name'")
        args = c.get("arguments", c.get("args", {}))
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except json.JSONDecodeError:
                pass
        calls.append({"id": str(c.get("id") or f"call_{i}"), "name": c["name"], "arguments": args})
    from ..targets._kinds import non_finite_path

    bad = non_finite_path(calls, "tool_calls")
    if bad is not None:  # refused here, so no NaN reaches a tool, the cache or a results row
        raise AgentFailed(f"{what} sent a non-finite number (NaN or Infinity) in {bad}")
    return AgentTurn(content=content, tool_calls=calls)


class Agent(ABC):
    """One assistant turn at a time; ``seed`` is the episode's (a repeat's own), so tries are distinct samples."""

    @abstractmethod
    async def turn(self, conversation: list[dict[str, Any]], tools: list[dict[str, Any]],
                   seed: int | None) -> AgentTurn: ...

    def identity(self) -> dict[str, Any]:
        return {}

    async def aclose(self) -> None:  # noqa: B027 - a hook with a safe default
        """Release connections."""


@dataclass
class ModelAgent(Agent):
    """A model with a system prompt (the agent's policy) and the environment's tools, through the shared
    client (retries, prices, the response cache keyed by the conversation so far)."""

    client: JudgeClient
    system: str | None = None
    max_tokens: int = 1024
    temperature: float | None = 0.0
    use_cache: bool = True

    async def turn(self, conversation: list[dict[str, Any]], tools: list[dict[str, Any]],
                   seed: int | None) -> AgentTurn:
        from ..targets._wire import ToolRequest

        req = ToolRequest(messages=(Message("system", self.system),) if self.system else (),
                          max_tokens=self.max_tokens, temperature=self.temperature, seed=seed,
                          conversation=json.dumps(conversation, ensure_ascii=False, sort_keys=True),
                          tools=json.dumps(tools, ensure_ascii=False, sort_keys=True))
        c = await self.client.complete(req, use_cache=self.use_cache)
        t = turn_of(json.loads(c.text), "the agent model")
        t.input_tokens, t.output_tokens, t.latency_ms, t.cached = (c.input_tokens, c.output_tokens,
                                                                   c.latency_ms, c.cached)
        t.cost_usd = self.client.cost_of(c)
        return t

    def identity(self) -> dict[str, Any]:
        return {"kind": "model", "provider": self.client.provider.name, "model": self.client.provider.model,
                "system": self.system}

    async def aclose(self) -> None:
        await self.client.aclose()


@dataclass
class PythonAgent(Agent):
    """``fn(conversation, tools)`` (sync or async; ``seed`` passed when it takes it) returning text or
    ``{"content", "tool_calls"}``."""

    fn: Callable[..., Any]

    async def turn(self, conversation: list[dict[str, Any]], tools: list[dict[str, Any]],
                   seed: int | None) -> AgentTurn:
        kwargs = {"seed": seed} if "seed" in inspect.signature(self.fn).parameters else {}
        try:
            if inspect.iscoroutinefunction(self.fn):
                value = await self.fn(list(conversation), tools, **kwargs)
            else:  # an agent doing I/O must not stall the other episodes
                value = await asyncio.to_thread(self.fn, list(conversation), tools, **kwargs)
                if inspect.isawaitable(value):
                    value = await value
        except Exception as exc:  # noqa: BLE001 - the agent failing is a recorded end, not a stopped run
            raise AgentFailed(redact_text(f"{type(exc).__name__}: {exc}")) from exc
        return turn_of(value, "the agent function")

    def identity(self) -> dict[str, Any]:
        from ..targets._kinds import source_sha256

        return {"kind": "python", "code_sha256": source_sha256(self.fn)}


@dataclass
class HttpAgent(Agent):
    """POSTs ``{"conversation", "tools", "seed"}`` to ``url``; the reply is ``{"content", "tool_calls"}``
    (read under ``REFEREE_MAX_REPLY_BYTES``)."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float = 60.0
    _http: Any = None

    async def turn(self, conversation: list[dict[str, Any]], tools: list[dict[str, Any]],
                   seed: int | None) -> AgentTurn:
        from ..providers._http import HttpClient

        if not self.url.startswith(("http://", "https://")):
            raise UserError(f"agent url {redact_url(self.url)!r}: must start with http:// or https://")
        if self._http is None:
            self._http = HttpClient(timeout=self.timeout, headers=self.headers, label=f"agent {self.url}")
        try:
            data, latency = await self._http.post_json(self.url, {"conversation": conversation, "tools": tools,
                                                                  "seed": seed})
        except ProviderError as exc:
            raise AgentFailed(str(exc)) from exc
        t = turn_of(data, f"the agent at {redact_url(self.url)}")
        t.latency_ms = latency
        return t

    def identity(self) -> dict[str, Any]:
        # Written to the manifest: user:password@ and secret query values masked.
        return {"kind": "http", "url": redact_url(self.url)}

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
