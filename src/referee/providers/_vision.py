"""Images on the wire: which provider and model take them (checked before any call), and each wire format's
image part.

The capability rule, in order:

1. A provider class that says so (``accepts_images = True`` / ``False``) decides for itself (plugins, the fake).
2. ``REFEREE_IMAGE_MODELS`` (comma-separated shell patterns, ``llava*,my-vlm``): models the user declares take
   images (a local server's vision model).
3. :data:`TEXT_ONLY` refuses the known text-only models, then :data:`VISION` accepts the known vision models.
4. Any other model is refused, naming the rule: referee cannot know what an unknown model does with an image it
   cannot see, and a judge that silently drops the image would grade text it never had.

Remote ``url`` images go only to the wire formats that fetch URLs themselves (OpenAI's ``image_url``, Anthropic's
``url`` source); Gemini, Vertex and Bedrock take inline bytes, so a URL image is refused there (give a ``path`` or
``data``).
"""

from __future__ import annotations

import fnmatch
import os
from typing import Any

from .._util._image import Image
from ..errors import UserError

VISION: dict[str, tuple[str, ...]] = {
    "openai": ("gpt-4o*", "gpt-4.1*", "gpt-4.5*", "gpt-5*", "gpt-4-turbo*", "gpt-4-vision*", "chatgpt-4o*", "o1",
               "o1-20*", "o3", "o3-20*", "o3-pro*", "o4-mini*"),
    "azure": ("*",),  # a deployment name says nothing of its model: the user's deployment is trusted
    "anthropic": ("claude-3*", "claude-sonnet-4*", "claude-opus-4*", "claude-haiku-4*", "claude-4*"),
    "gemini": ("gemini-*", "gemma-3*"),
    "vertex": ("gemini-*",),
    "bedrock": ("anthropic.claude-3*", "*.anthropic.claude-3*", "anthropic.claude-*-4*", "*.anthropic.claude-*-4*",
                "amazon.nova-lite*", "amazon.nova-pro*", "amazon.nova-premier*", "*.amazon.nova-lite*",
                "*.amazon.nova-pro*", "*.amazon.nova-premier*", "meta.llama3-2-11b*", "meta.llama3-2-90b*",
                "*.meta.llama3-2-11b*", "*.meta.llama3-2-90b*", "meta.llama4*", "*.meta.llama4*"),
}
"""Models known to take images, per provider (shell patterns over the model id)."""

TEXT_ONLY: dict[str, tuple[str, ...]] = {
    "openai": ("gpt-3.5*", "gpt-4", "gpt-4-0*", "gpt-4-32k*", "o1-mini*", "o3-mini*", "*-audio-*"),
    "anthropic": ("claude-2*", "claude-instant*", "claude-3-5-haiku*"),
    "bedrock": ("amazon.nova-micro*", "*.amazon.nova-micro*", "amazon.titan-text*", "*claude-3-5-haiku*"),
    "standin": ("*",),
}
"""Models known to take text only (the stand-in reads text: it cannot grade what it cannot see)."""

URL_FORMATS = frozenset({"openai", "azure", "anthropic"})
"""Providers whose wire format takes a remote image URL (the provider fetches it, never referee)."""


class ImagesRefused(UserError):
    """A request with images for a provider or model that cannot take them: refused before any call."""


def _matches(model: str, patterns: tuple[str, ...]) -> bool:
    m = model.lower()
    return any(fnmatch.fnmatchcase(m, p.lower()) for p in patterns)


def refusal(provider: Any, images: tuple[Image, ...]) -> str | None:
    """Why ``provider`` cannot take ``images`` (None: it can)."""
    name, model = str(getattr(provider, "name", "")), str(getattr(provider, "model", "") or "")
    if any(i.url is not None for i in images) and name not in URL_FORMATS \
            and getattr(provider, "accepts_image_urls", False) is not True:
        return (f"provider '{name}' takes inline images only, and an image here is a remote URL (referee never "
                "fetches it): give the image as a 'path' beside the cases file or as 'data'")
    declared = getattr(provider, "accepts_images", None)
    if declared is not None:
        return None if declared else f"provider '{name}' does not take images"
    user = tuple(p.strip() for p in os.environ.get("REFEREE_IMAGE_MODELS", "").split(",") if p.strip())
    if user and _matches(model, user):
        return None
    if _matches(model, TEXT_ONLY.get(name, ())):
        return f"model '{model}' ({name}) takes text only, not images"
    if _matches(model, VISION.get(name, ())):
        return None
    return (f"model '{model}' ({name}) is not known to take images; if it does, set "
            f"REFEREE_IMAGE_MODELS={model} (comma-separated patterns)")


def check_images(provider: Any, images: tuple[Image, ...]) -> None:
    """Raise :class:`ImagesRefused` (exit 2) naming the reason when ``provider`` cannot take ``images``."""
    if images:
        why = refusal(provider, images)
        if why is not None:
            raise ImagesRefused(f"{len(images)} image(s) refused before any call: {why}")


# -- each wire format's part ------------------------------------------------------------------------------
def openai_part(img: Image) -> dict[str, Any]:
    """OpenAI chat completions: ``image_url`` with a data URL (or the remote URL)."""
    return {"type": "image_url", "image_url": {"url": img.url if img.url is not None else img.data_url()}}


def anthropic_part(img: Image) -> dict[str, Any]:
    """Anthropic Messages: an ``image`` block, base64 source (or a ``url`` source)."""
    if img.url is not None:
        return {"type": "image", "source": {"type": "url", "url": img.url}}
    return {"type": "image", "source": {"type": "base64", "media_type": img.media_type, "data": img.b64}}


def gemini_part(img: Image) -> dict[str, Any]:
    """Gemini / Vertex generateContent: ``inline_data`` with the MIME type and base64 bytes."""
    return {"inline_data": {"mime_type": img.media_type, "data": img.b64}}


def bedrock_part(img: Image) -> dict[str, Any]:
    """Bedrock Converse: an ``image`` block, its format (png, jpeg, gif, webp) and base64 bytes."""
    return {"image": {"format": img.media_type.split("/", 1)[1], "source": {"bytes": img.b64}}}


def content_list(pieces: list[str | Image], text: Any, image: Any) -> list[dict[str, Any]]:
    """A message's pieces as a wire content list: ``text(str)`` and ``image(Image)`` build each part."""
    return [image(p) if isinstance(p, Image) else text(p) for p in pieces if not (isinstance(p, str) and not p)]
