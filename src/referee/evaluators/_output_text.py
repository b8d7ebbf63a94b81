"""The text a check looks at, one definition for every check that matches text (the built-in checks, the
trajectory checks, the red-team expectation): strings as they are, None as empty, anything else as compact
JSON with keys sorted and non-ASCII kept (an escaped ``"caf\\u00e9"`` would hide ``café`` from ``contains``).

An image has no text: its part reads as ``[image]`` (its base64 is never matched), and a value that is images
and nothing else raises :class:`ImageNotText`, which the runner makes the check's ``unscored`` row (a text check
cannot grade an image; a pass or a fail would be invented)."""

from __future__ import annotations

import json
from typing import Any

from .._util._image import contains_image, is_image_part
from ..errors import RefereeError


def _image_text(value: Any) -> str:
    parts = value if isinstance(value, list) else [value]
    if all(is_image_part(p) for p in parts):
        raise ImageNotText("the output is an image: a text check cannot grade it (use llm_judge or rubric)")
    if all(is_image_part(p) or (isinstance(p, dict) and p.get("type") == "text") or isinstance(p, str)
           for p in parts):
        return "\n".join(p if isinstance(p, str) else str(p.get("text", "")) if p.get("type") == "text"
                         else "[image]" for p in parts)
    return json.dumps(_stub(value), ensure_ascii=False, sort_keys=True)


def _stub(value: Any, depth: int = 0) -> Any:
    if is_image_part(value):
        return "[image]"
    if isinstance(value, dict) and depth < 64:
        return {k: _stub(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list) and depth < 64:
        return [_stub(v, depth + 1) for v in value]
    return value


class ImageNotText(RefereeError, ValueError):
    """The value a text check would read is images only."""


def as_text(value: Any) -> str:
    """``value`` as the text a check matches against (see the module docstring)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if contains_image(value):
        return _image_text(value)
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(value)
