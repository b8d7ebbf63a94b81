"""The image parts a request carries, read in each wire format's own shape and checked as the real APIs check
them: the local server answers 400 to a malformed one (bad base64, a media type the bytes contradict, a part
missing a field), so a provider's payload is tested against the shape, not against referee's own idea of it."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from .._util._image import sniff
from ..errors import RefereeError

_FORMATS = {"png": "image/png", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp"}


class BadImagePart(RefereeError, ValueError):
    """A part the real API would reject (the message says why)."""


def _bytes(b64: Any, where: str) -> bytes:
    if not isinstance(b64, str) or not b64:
        raise BadImagePart(f"{where}: base64 data missing")
    try:
        return base64.b64decode(b64, validate=True)
    except (binascii.Error, ValueError):
        raise BadImagePart(f"{where}: data is not valid base64") from None


def _inline(media_type: Any, b64: Any, where: str) -> dict[str, Any]:
    data = _bytes(b64, where)
    kind = sniff(data)
    if kind is None or kind != media_type:
        raise BadImagePart(f"{where}: media type {media_type!r} but the bytes are {kind or 'not an image'}")
    return {"media_type": kind, "bytes": data, "url": None}


def _openai(part: dict[str, Any], where: str) -> dict[str, Any]:
    url = (part.get("image_url") or {}).get("url") if isinstance(part.get("image_url"), dict) else None
    if not isinstance(url, str):
        raise BadImagePart(f"{where}: image_url.url missing")
    if not url.startswith("data:"):
        if not url.startswith(("https://", "http://")):
            raise BadImagePart(f"{where}: image_url.url must be a data URL or http(s)")
        return {"media_type": None, "bytes": None, "url": url}
    head, _, b64 = url.partition(",")
    if not head.endswith(";base64"):
        raise BadImagePart(f"{where}: a data URL must be base64")
    return _inline(head[5:-7], b64, where)


def wire_images(fmt: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every image part of ``body`` (``{media_type, bytes, url}``) in message order; :class:`BadImagePart` for a
    malformed one."""
    out: list[dict[str, Any]] = []
    if fmt == "gemini":
        for i, c in enumerate(body.get("contents") or []):
            for j, p in enumerate(c.get("parts") or [] if isinstance(c, dict) else []):
                if isinstance(p, dict) and ("inline_data" in p or "inlineData" in p):
                    d = p.get("inline_data") or p.get("inlineData") or {}
                    out.append(_inline(d.get("mime_type") or d.get("mimeType"), d.get("data"),
                                       f"contents[{i}].parts[{j}]"))
        return out
    for i, m in enumerate(body.get("messages") or []):
        content = m.get("content") if isinstance(m, dict) else None
        if not isinstance(content, list):
            continue
        for j, p in enumerate(content):
            where = f"messages[{i}].content[{j}]"
            if not isinstance(p, dict):
                raise BadImagePart(f"{where}: a content part must be an object")
            if fmt == "openai" and p.get("type") == "image_url":
                out.append(_openai(p, where))
            elif fmt == "anthropic" and p.get("type") == "image":
                src = p.get("source") or {}
                if src.get("type") == "url":
                    out.append({"media_type": None, "bytes": None, "url": src.get("url")})
                elif src.get("type") == "base64":
                    out.append(_inline(src.get("media_type"), src.get("data"), where))
                else:
                    raise BadImagePart(f"{where}: source.type must be base64 or url")
            elif fmt == "bedrock" and "image" in p:
                img = p["image"] if isinstance(p["image"], dict) else {}
                fmt_name = img.get("format")
                if fmt_name not in _FORMATS:
                    raise BadImagePart(f"{where}: image.format must be one of {', '.join(_FORMATS)}")
                out.append(_inline(_FORMATS[fmt_name], (img.get("source") or {}).get("bytes"), where))
    return out
