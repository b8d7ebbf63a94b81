"""What the local LLM server hears and says: a scripted ``Reply`` and the ``WireRequest`` it answers (the
request's format, body and headers), shared by the live routes (``_server``) and the batch routes (``_batch_api``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Reply:
    """One scripted answer. ``text`` is what the model says; the server wraps it in the wire format."""

    text: str | None = None
    status: int = 200
    body: str | bytes | dict[str, Any] | None = None
    """A raw body that replaces the wire-format envelope (garbage, error objects)."""
    headers: dict[str, str] = field(default_factory=dict)
    retry_after: str | None = None
    delay: float | None = None
    drop: bool = False
    """Close the connection without answering."""
    truncate: bool = False
    """Send half of the body, then close."""
    input_tokens: int = 120
    output_tokens: int = 40
    tool_calls: list[dict[str, Any]] | None = None
    """Tool calls the model makes, ``[{"name": ..., "arguments": {...}, "id"?: ...}]``, in the wire format's own
    shape (OpenAI ``message.tool_calls``, Anthropic ``tool_use`` blocks); ``text`` may accompany them."""


def _text(content: Any) -> str:
    """A message's text: a string, or the text parts of a content list (images left out)."""
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return str(content)


def _call_id(call: dict[str, Any], i: int, prefix: str) -> str:
    return str(call.get("id") or f"{prefix}_{i}")


@dataclass
class WireRequest:
    """What the server received, for assertions."""

    format: str
    path: str
    headers: dict[str, str]
    query: dict[str, str]
    body: dict[str, Any]
    method: str = "POST"
    raw_path: str = ""
    """The path exactly as sent (percent-encoding kept), with the query string."""
    raw_body: bytes = b""

    @property
    def images(self) -> list[dict[str, Any]]:
        """The image parts of the request (``{media_type, bytes, url}``), in order, checked as the real API
        would (:mod:`._images`)."""
        from ._images import wire_images

        return wire_images(self.format, self.body)

    @property
    def prompt_text(self) -> str:
        """All message text of the request, system included."""
        parts: list[str] = []
        b = self.body
        if self.format == "openai":
            parts += [_text(m.get("content", "")) for m in b.get("messages", [])]
        elif self.format == "anthropic":
            if b.get("system"):
                parts.append(str(b["system"]))
            parts += [_text(m.get("content", "")) for m in b.get("messages", [])]
        elif self.format == "bedrock":
            parts += [str(p.get("text", "")) for p in b.get("system", [])]
            for m in b.get("messages", []):
                parts += [str(p.get("text", "")) for p in m.get("content", [])]
        else:
            si = b.get("systemInstruction", {})
            parts += [p.get("text", "") for p in si.get("parts", [])]
            for c in b.get("contents", []):
                parts += [p.get("text", "") for p in c.get("parts", [])]
        return "\n".join(parts)

    @property
    def last_user_text(self) -> str:
        b = self.body
        if self.format == "gemini":
            users = [c for c in b.get("contents", []) if c.get("role") == "user"]
            return "".join(p.get("text", "") for p in users[-1].get("parts", [])) if users else ""
        users = [m for m in b.get("messages", []) if m.get("role") == "user"]
        if self.format == "bedrock":
            return "".join(str(p.get("text", "")) for p in users[-1].get("content", [])) if users else ""
        return _text(users[-1].get("content", "")) if users else ""

    @property
    def model(self) -> str:
        if self.format == "gemini":
            return self.path.rsplit("/", 1)[-1].split(":", 1)[0]
        if self.format == "bedrock":
            return self.path.split("/")[2]
        if "/openai/deployments/" in self.path:
            return self.path.split("/")[3]
        return str(self.body.get("model", ""))

    @property
    def schema(self) -> dict[str, Any] | None:
        b = self.body
        if self.format == "openai":
            rf = b.get("response_format") or {}
            return (rf.get("json_schema") or {}).get("schema")
        if self.format == "anthropic":
            tools = b.get("tools") or []
            return tools[0].get("input_schema") if tools else None
        if self.format == "bedrock":
            tools = (b.get("toolConfig") or {}).get("tools") or []
            return tools[0].get("toolSpec", {}).get("inputSchema", {}).get("json") if tools else None
        return (b.get("generationConfig") or {}).get("responseSchema")


Responder = Callable[[WireRequest], "str | Reply"]
