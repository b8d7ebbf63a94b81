"""The provider contract: one abstract method, ``complete``.

A provider speaks one wire format to one endpoint and maps every HTTP-level failure onto
:class:`referee.errors.ProviderError` (``retryable`` set for 429, 5xx, timeouts and dropped connections).
Retries, caching and concurrency live above it, in :mod:`referee.runner`.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from .._util._image import Image, has_marker, images_in, split

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class Message:
    """One chat message of a judge request."""

    role: Role
    content: str


@dataclass(frozen=True)
class JudgeRequest:
    """What the judge is asked. ``response_schema`` (a JSON Schema object) turns on the provider's native
    structured output (OpenAI json_schema, Anthropic tool use, Gemini response schema)."""

    messages: tuple[Message, ...]
    response_schema: dict[str, Any] | None = None
    schema_name: str = "verdict"
    max_tokens: int = 1024
    temperature: float | None = None
    seed: int | None = None
    case_text: tuple[str, ...] = field(default=(), compare=False, repr=False)
    """The case text embedded in the messages (never sent, not part of the cache key): the reply parser
    refuses a verdict copied from it (see :mod:`referee.evaluators._prompt_guard`)."""
    images: tuple[Image, ...] = field(default=(), repr=False)
    """The images the messages' markers stand for (collected from the messages when not given): each provider
    sends them in its own wire format where the marker sits (:func:`message_parts`)."""

    def __post_init__(self) -> None:
        if not self.images and any(has_marker(m.content) for m in self.messages):
            object.__setattr__(self, "images", images_in(*(m.content for m in self.messages)))

    def parts(self, message: Message) -> list[str | Image]:
        """``message``'s content cut at its images (one text piece when it has none)."""
        if not self.images or not has_marker(message.content):
            return [message.content]
        return split(message.content, self.images)

    def cache_material(self) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        if self.images:  # the content hash: one changed pixel is a new key (absent without images: old keys hold)
            extra["images"] = [i.sha256 for i in self.images]
        return {**extra,
            "messages": [[m.role, m.content] for m in self.messages],
            "schema": self.response_schema,
            "schema_name": self.schema_name,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "seed": self.seed,
        }


@dataclass(frozen=True)
class Completion:
    """The judge's reply. Token counts are the provider's own, or None when it reported none."""

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    model: str = ""
    latency_ms: float = 0.0
    cached: bool = False
    cache_read_tokens: int | None = None
    """Input tokens the provider served from its prompt cache (a part of ``input_tokens``), when reported."""
    batch: bool = False
    """Answered through a batch API (billed at the batch price)."""
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


class Provider(abc.ABC):
    """Calls one LLM API on behalf of a judge."""

    name: ClassVar[str]
    default_model: ClassVar[str] = ""
    key_env_vars: ClassVar[tuple[str, ...]] = ()
    price_provider: ClassVar[str | None] = None
    """The provider's id in the price database (genai-prices); None: no public price (local servers)."""
    accepts_images: ClassVar[bool | None] = None
    """Whether this provider takes images: True or False decides; None (the default) leaves it to the capability
    table and ``REFEREE_IMAGE_MODELS`` (:mod:`referee.providers._vision`)."""
    _api_key: str | None = None  # also for a plugin whose __init__ does not call this one

    def __init__(self, model: str | None = None, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 60.0) -> None:
        self.model = model or self.default_model
        self.base_url = base_url
        self._api_key = api_key
        self.timeout = timeout

    @abc.abstractmethod
    async def complete(self, request: JudgeRequest) -> Completion:
        """Send one request and return the reply text with the provider's token counts."""

    async def aclose(self) -> None:  # noqa: B027 - a hook with a safe default
        """Release connections."""

    def secrets(self) -> tuple[str, ...]:
        """The credentials this provider sends (keys, tokens; only the ones it holds now). A judge reply that
        echoes one has it masked before rows, the cache or the manifest see it; a provider that signs in
        another way than an API key returns its own."""
        return (self._api_key,) if self._api_key else ()

    def price_id(self) -> str | None:
        """The id to price this endpoint's calls under, or None when it has no public price."""
        return self.price_provider

    def describe(self) -> dict[str, Any]:
        """Identity used for caching and manifests. Never includes the key."""
        return {"provider": self.name, "model": self.model, "base_url": self.base_url}

    def __repr__(self) -> str:  # keys must never leak through repr/logging
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"
