"""Tool calling on the OpenAI and Anthropic wire formats, for model targets with ``tools:`` (and on Gemini's, for
the agents of simulated conversations: :class:`GeminiToolProvider`).

A tool-loop request is a :class:`ToolRequest`: the judge request's shape plus the conversation so far (with tool
calls and results) and the tools, in one neutral form. The providers here translate it to each wire format and
return the assistant turn as JSON text (``{"content": ..., "tool_calls": [...]}``), so the shared client's
retries, prices and response cache work on it unchanged (an unchanged rerun replays the whole loop from cache).

Neutral messages: ``{"role": "user"|"assistant"|"tool", "content": str|None, "tool_calls": [{"id", "name",
"arguments"}], "tool_call_id": str, "is_error": bool}``.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from ..errors import ProviderError, UserError
from ..providers._anthropic import AnthropicProvider
from ..providers._base import Completion, JudgeRequest, Provider
from ..providers._gemini import GeminiProvider, to_gemini_schema
from ..providers._openai_compat import OpenAICompatProvider


@dataclass(frozen=True)
class ToolRequest(JudgeRequest):
    """``messages`` hold the system prompt only; ``conversation`` and ``tools`` are JSON text (hashable, and the
    exact material of the cache key)."""

    conversation: str = "[]"
    tools: str = "[]"

    def cache_material(self) -> dict[str, Any]:
        return {**super().cache_material(), "conversation": self.conversation, "tools": self.tools}


def assistant_turn(content: str | None, calls: list[dict[str, Any]]) -> str:
    return json.dumps({"content": content, "tool_calls": calls}, ensure_ascii=False)


def _args(raw: Any) -> Any:
    """Arguments as an object when they parse; the raw text otherwise (the loop reports it to the model)."""
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            return json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError:
            return raw
    return raw


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class OpenAIToolProvider(OpenAICompatProvider):
    """Tool calling on any OpenAI-wire-format provider (OpenAI, compatible servers, Azure: see :func:`with_tools`)."""

    async def complete(self, request: JudgeRequest) -> Completion:
        if not isinstance(request, ToolRequest):
            return await super().complete(request)
        messages: list[dict[str, Any]] = [{"role": m.role, "content": m.content} for m in request.messages]
        for m in json.loads(request.conversation):
            if m["role"] == "tool":
                messages.append({"role": "tool", "tool_call_id": m["tool_call_id"], "content": _text(m["content"])})
            elif m["role"] == "assistant" and m.get("tool_calls"):
                messages.append({"role": "assistant", "content": m.get("content"), "tool_calls": [
                    {"id": c["id"], "type": "function",
                     "function": {"name": c["name"], "arguments": _text(c["arguments"])}}
                    for c in m["tool_calls"]]})
            else:
                messages.append({"role": m["role"], "content": m.get("content") or ""})
        payload: dict[str, Any] = {"model": self.model, "messages": messages}
        tools = json.loads(request.tools)
        if tools:
            payload["tools"] = [{"type": "function", "function": t} for t in tools]
        payload[self._max_tokens_field] = request.max_tokens
        if request.temperature is not None:
            payload["temperature"] = request.temperature
        if request.seed is not None:
            payload["seed"] = request.seed
        data, latency = await self._http.post_json(self._chat_url(), payload, headers=await self._auth_headers())
        try:
            msg = data["choices"][0]["message"]
            content = msg.get("content")
            calls = [{"id": str(c.get("id") or f"call_{i}"), "name": str(c["function"]["name"]),
                      "arguments": _args(c["function"].get("arguments"))}
                     for i, c in enumerate(msg.get("tool_calls") or [])]
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ProviderError("openai-compatible server: reply has no choices[0].message with usable "
                                "tool_calls", retryable=True) from exc
        # Tokens, prompt-cache reads and the model as the provider's own reply parser reads them (prices).
        base = self.parse_reply({**data, "choices": [{"message": {"content": ""}}]}, latency)
        return dataclasses.replace(base, text=assistant_turn(content, calls))


class AnthropicToolProvider(AnthropicProvider):
    async def complete(self, request: JudgeRequest) -> Completion:
        if not isinstance(request, ToolRequest):
            return await super().complete(request)
        messages: list[dict[str, Any]] = []
        for m in json.loads(request.conversation):
            if m["role"] == "tool":
                block = {"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": _text(m["content"])}
                if m.get("is_error"):
                    block["is_error"] = True
                # Results of one assistant turn's calls go back together, in one user message.
                if messages and messages[-1]["role"] == "user" and isinstance(messages[-1]["content"], list):
                    messages[-1]["content"].append(block)
                else:
                    messages.append({"role": "user", "content": [block]})
            elif m["role"] == "assistant":
                blocks: list[dict[str, Any]] = [{"type": "text", "text": m["content"]}] if m.get("content") else []
                blocks += [{"type": "tool_use", "id": c["id"], "name": c["name"],
                            "input": c["arguments"] if isinstance(c["arguments"], dict) else {}}
                           for c in m.get("tool_calls") or []]
                messages.append({"role": "assistant", "content": blocks or ""})
            else:
                messages.append({"role": "user", "content": m.get("content") or ""})
        payload: dict[str, Any] = {"model": self.model, "max_tokens": request.max_tokens, "messages": messages}
        system = "\n\n".join(m.content for m in request.messages if m.role == "system")
        if system:
            payload["system"] = system
        tools = json.loads(request.tools)
        if tools:
            payload["tools"] = [{"name": t["name"], "description": t.get("description", ""),
                                 "input_schema": t["parameters"]} for t in tools]
        if request.temperature is not None:
            payload["temperature"] = request.temperature
        data, latency = await self._http.post_json(f"{self.base_url}/v1/messages", payload)
        reply = data.get("content")
        if not isinstance(reply, list):
            raise ProviderError("Anthropic API: reply has no content list", retryable=True)
        text = "".join(b.get("text", "") for b in reply if isinstance(b, dict) and b.get("type") == "text")
        calls = [{"id": str(b.get("id")), "name": str(b.get("name")), "arguments": b.get("input") or {}}
                 for b in reply if isinstance(b, dict) and b.get("type") == "tool_use"]
        base = self.parse_reply({**data, "content": []}, latency)
        return dataclasses.replace(base, text=assistant_turn(text or None, calls))


class GeminiToolProvider(GeminiProvider):
    """Tool calling on the Gemini generateContent wire format (function declarations, ``functionCall`` parts,
    results as ``functionResponse`` parts; Gemini gives calls no ids, so they are numbered)."""

    async def complete(self, request: JudgeRequest) -> Completion:
        if not isinstance(request, ToolRequest):
            return await super().complete(request)
        payload = self._payload(dataclasses.replace(request, messages=tuple(
            m for m in request.messages if m.role == "system")))
        contents: list[dict[str, Any]] = []
        names: dict[str, str] = {}
        for m in json.loads(request.conversation):
            if m["role"] == "tool":
                result = m["content"]
                part = {"functionResponse": {"name": m.get("name") or names.get(m["tool_call_id"], ""),
                                             "response": result if isinstance(result, dict) else {"result": result}}}
                # Results of one turn's calls go back together, in one user turn.
                if contents and contents[-1]["role"] == "user" and "functionResponse" in contents[-1]["parts"][0]:
                    contents[-1]["parts"].append(part)
                else:
                    contents.append({"role": "user", "parts": [part]})
            elif m["role"] == "assistant":
                parts: list[dict[str, Any]] = [{"text": m["content"]}] if m.get("content") else []
                for c in m.get("tool_calls") or []:
                    names[c["id"]] = c["name"]
                    parts.append({"functionCall": {"name": c["name"], "args": c["arguments"]
                                                   if isinstance(c["arguments"], dict) else {}}})
                contents.append({"role": "model", "parts": parts or [{"text": ""}]})
            else:
                contents.append({"role": "user", "parts": [{"text": m.get("content") or ""}]})
        payload["contents"] = contents
        tools = json.loads(request.tools)
        if tools:
            payload["tools"] = [{"functionDeclarations": [
                {"name": t["name"], "description": t.get("description", ""),
                 **({"parameters": conv} if (conv := to_gemini_schema(t["parameters"])) is not None else {})}
                for t in tools]}]
        data, latency = await self._http.post_json(self._model_url("generateContent"), payload,
                                                   headers=await self._auth_headers())
        try:
            parts = data["candidates"][0].get("content", {}).get("parts", [])
            text = "".join(p.get("text", "") for p in parts if isinstance(p, dict))
            calls = [{"id": f"call_{i}", "name": str(p["functionCall"]["name"]),
                      "arguments": _args(p["functionCall"].get("args") or {})}
                     for i, p in enumerate(q for q in parts if isinstance(q, dict) and "functionCall" in q)]
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ProviderError(f"{self.label}: reply has no candidates with usable parts", retryable=True) from exc
        base = self.parse_reply({**data, "candidates": [{"content": {"parts": []}}]}, latency)
        return dataclasses.replace(base, text=assistant_turn(text or None, calls))


def with_tools(cls: type[Provider]) -> type[Provider]:
    """``cls`` able to run a tool loop: its wire format's tool calling added (OpenAI format: OpenAI, compatible
    servers, Azure; Anthropic). Raises UserError for a wire format without it here."""
    for wire, tool in ((AnthropicProvider, AnthropicToolProvider), (OpenAICompatProvider, OpenAIToolProvider)):
        if issubclass(cls, wire):
            if issubclass(cls, tool):
                return cls
            # The tool methods first, then the provider's own endpoint and credentials (Azure's deployment URL).
            return type(f"{cls.__name__}WithTools", (tool, cls), {})
    raise UserError(f"provider '{cls.name}' runs targets without tools: tools need the OpenAI or Anthropic wire "
                    "format")
