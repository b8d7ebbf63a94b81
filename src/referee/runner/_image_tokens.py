"""Image input tokens before any call, by each provider's published rule (for ``--dry-run`` estimates; a real
call's usage is the provider's own count, images included).

* OpenAI (and Azure, and OpenAI-compatible servers as an estimate), high detail, the default for ``auto``
  (https://platform.openai.com/docs/guides/images-vision#calculating-costs): scale to fit 2048 x 2048, then the
  shortest side to 768 px, count the 512 px tiles; 85 + 170 per tile (GPT-4o, GPT-4.1, o-series), 2,833 + 5,667
  per tile for gpt-4o-mini.
* Anthropic (and Claude on Bedrock) (https://docs.anthropic.com/en/docs/build-with-claude/vision#evaluate-image-size):
  an image whose long edge is over 1,568 px is scaled down to it first; then tokens = width x height / 750.
* Gemini and Vertex (https://ai.google.dev/gemini-api/docs/tokens#multimodal-tokens): an image with both sides at
  most 384 px is 258 tokens; a larger one is cut into 768 x 768 tiles of 258 tokens each.
* Any other provider: the Anthropic rule (area-based), as a stated estimate.

An image of unknown size (a remote URL) is counted as 1024 x 1024.
"""

from __future__ import annotations

import math

from .._util._image import Image

UNKNOWN_SIZE = (1024, 1024)


def _openai(w: float, h: float, model: str) -> int:
    scale = min(1.0, 2048 / max(w, h))
    w, h = w * scale, h * scale
    scale = 768 / min(w, h)
    if scale < 1:
        w, h = w * scale, h * scale
    tiles = math.ceil(w / 512) * math.ceil(h / 512)
    if model.startswith("gpt-4o-mini"):
        return 2833 + 5667 * tiles
    return 85 + 170 * tiles


def _anthropic(w: float, h: float) -> int:
    long = max(w, h)
    if long > 1568:
        w, h = w * 1568 / long, h * 1568 / long
    return max(1, math.ceil(w * h / 750))


def _gemini(w: int, h: int) -> int:
    if w <= 384 and h <= 384:
        return 258
    return math.ceil(w / 768) * math.ceil(h / 768) * 258


def image_tokens(provider: str, model: str | None, img: Image) -> int:
    """The input tokens ``img`` costs at ``provider``/``model`` by the provider's published rule."""
    w, h = (img.width, img.height) if img.width and img.height else UNKNOWN_SIZE
    name = provider.lower()
    if name in ("openai", "azure", "ollama", "vllm", "lmstudio", "llamacpp"):
        return _openai(w, h, (model or "").lower())
    if name in ("gemini", "vertex"):
        return _gemini(w, h)
    return _anthropic(w, h)
