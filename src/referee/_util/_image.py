"""Images as parts of case fields and outputs: ``{"type": "image", "path" | "url" | "data" (+ "media_type")}``.

This module holds what every layer shares: the checked :class:`Image` (its bytes' format read from their magic
bytes, never trusted from a declared type or a file name; a truncated file, an SVG or an oversized image refused),
the normalised JSON form a case keeps (:meth:`Image.part`), and the markers a prompt carries where an image goes
(:func:`marker`, :func:`split`). Paths are resolved where cases are loaded (``cases/_media.py``), never here.

Limits (environment): ``REFEREE_MAX_IMAGE_BYTES`` (one image, default 20 MiB, OpenAI's and Gemini's inline
limit), ``REFEREE_MAX_IMAGES_PER_CASE`` (default 20) and ``REFEREE_MAX_RUN_IMAGE_BYTES`` (the distinct images one
load of cases may hold, default 1 GiB: each is held once, however many parts name it).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import RefereeError

MEDIA_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
"""The formats every wire format referee speaks takes inline (OpenAI, Anthropic, Gemini, Bedrock Converse)."""
DEFAULT_MAX_IMAGE_BYTES = 20 * 1024 * 1024
DEFAULT_MAX_IMAGES = 20
DEFAULT_MAX_RUN_IMAGE_BYTES = 1024 * 1024 * 1024
_FORMAT_OF = {"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}
_ALIASES = {"image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg"}


class ImageError(RefereeError, ValueError):
    """An image part that cannot be used; the message says why (the caller adds the case and field)."""


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ImageError(f"{name}={raw!r}: expected a whole number of at least 1")
    return value


def max_image_bytes() -> int:
    """The size limit of one image (``REFEREE_MAX_IMAGE_BYTES``)."""
    return _env_int("REFEREE_MAX_IMAGE_BYTES", DEFAULT_MAX_IMAGE_BYTES)


def max_run_image_bytes() -> int:
    """The bytes of distinct images one load of cases may hold (``REFEREE_MAX_RUN_IMAGE_BYTES``)."""
    return _env_int("REFEREE_MAX_RUN_IMAGE_BYTES", DEFAULT_MAX_RUN_IMAGE_BYTES)


def max_images() -> int:
    """How many images one case may hold (``REFEREE_MAX_IMAGES_PER_CASE``)."""
    return _env_int("REFEREE_MAX_IMAGES_PER_CASE", DEFAULT_MAX_IMAGES)


@dataclass(frozen=True, eq=False)
class Image:
    """One checked image: inline bytes (``data``) or a remote ``url`` (never fetched by referee)."""

    media_type: str
    sha256: str
    data: bytes | None = field(default=None, repr=False)
    url: str | None = None
    name: str = ""
    width: int | None = None
    height: int | None = None

    @property
    def b64(self) -> str:
        return base64.b64encode(self.data or b"").decode("ascii")

    def data_url(self) -> str:
        """``data:<media type>;base64,...`` (inline images only)."""
        return f"data:{self.media_type};base64,{self.b64}"

    @property
    def label(self) -> str:
        """A short description for text-only places: ``image chart.png (png, 640x480)``."""
        size = f", {self.width}x{self.height}" if self.width and self.height else ""
        what = _FORMAT_OF.get(self.media_type, "remote") if self.data is not None else "remote"
        return f"image {self.name or self.sha256[:12]} ({what}{size})"

    def part(self) -> dict[str, Any]:
        """The normalised JSON form a case keeps (and results, the viewer and the reports read)."""
        out: dict[str, Any] = {"type": "image"}
        if self.data is not None:
            out.update(media_type=self.media_type, data=self.b64, sha256=self.sha256)
            if self.width and self.height:
                out.update(width=self.width, height=self.height)
        else:
            out.update(url=self.url, sha256=self.sha256)
        if self.name:
            out["name"] = self.name
        return out


def is_image_part(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") == "image"


def contains_image(value: Any, _depth: int = 0) -> bool:
    """Whether ``value`` (a case field) holds an image part anywhere."""
    if isinstance(value, dict):
        if value.get("type") == "image":
            return True
        return _depth < 32 and any(contains_image(v, _depth + 1) for v in value.values())
    if isinstance(value, list):
        return _depth < 32 and any(contains_image(v, _depth + 1) for v in value)
    return False


# -- bytes ---------------------------------------------------------------------------------------------
def sniff(data: bytes) -> str | None:
    """The media type the bytes' magic says, or None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def _looks_svg(data: bytes) -> bool:
    head = data[:2048].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return head.startswith((b"<?xml", b"<svg")) or b"<svg" in head


def _png(data: bytes) -> tuple[int, int]:
    if len(data) < 33 or data[12:16] != b"IHDR":
        raise ImageError("a truncated or damaged PNG (no IHDR header)")
    w, h = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    pos = 8
    while pos + 12 <= len(data):
        length = int.from_bytes(data[pos:pos + 4], "big")
        kind = data[pos + 4:pos + 8]
        pos += 12 + length
        if kind == b"IEND":
            return w, h
    raise ImageError(f"a truncated PNG ({len(data):,} bytes, it ends before its IEND chunk)")


_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


def _jpeg(data: bytes) -> tuple[int | None, int | None]:
    if not data.rstrip(b"\x00").endswith(b"\xff\xd9"):
        raise ImageError(f"a truncated JPEG ({len(data):,} bytes, no end-of-image marker)")
    pos, size = 2, None
    while pos + 9 < len(data) and data[pos] == 0xFF:
        marker = data[pos + 1]
        length = int.from_bytes(data[pos + 2:pos + 4], "big")
        if marker in _SOF:
            size = (int.from_bytes(data[pos + 7:pos + 9], "big"), int.from_bytes(data[pos + 5:pos + 7], "big"))
            break
        pos += 2 + length
    return size if size else (None, None)


def _gif(data: bytes) -> tuple[int, int]:
    if len(data) < 14 or not data.rstrip(b"\x00").endswith(b"\x3b"):
        raise ImageError(f"a truncated GIF ({len(data):,} bytes, no trailer)")
    return int.from_bytes(data[6:8], "little"), int.from_bytes(data[8:10], "little")


def _webp(data: bytes) -> tuple[int | None, int | None]:
    if int.from_bytes(data[4:8], "little") + 8 > len(data) or len(data) < 30:
        raise ImageError(f"a truncated WebP ({len(data):,} bytes, shorter than its RIFF header says)")
    chunk = data[12:16]
    if chunk == b"VP8X":
        return 1 + int.from_bytes(data[24:27], "little"), 1 + int.from_bytes(data[27:30], "little")
    if chunk == b"VP8 ":
        return int.from_bytes(data[26:28], "little") & 0x3FFF, int.from_bytes(data[28:30], "little") & 0x3FFF
    if chunk == b"VP8L":
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    return None, None


_READERS: dict[str, Callable[[bytes], tuple[int | None, int | None]]] = {
    "image/png": _png, "image/jpeg": _jpeg, "image/gif": _gif, "image/webp": _webp}


def normal_media_type(declared: str | None) -> str | None:
    if declared is None:
        return None
    m = str(declared).strip().lower()
    return _ALIASES.get(m, m)


def from_bytes(data: bytes, *, declared: str | None = None, name: str = "") -> Image:
    """An :class:`Image` of ``data``, its type read from its bytes. Refused (:class:`ImageError`): more than
    :func:`max_image_bytes`, an SVG (it can carry script, and no wire format takes it), bytes no image format
    starts with, a declared media type the bytes contradict, a truncated file."""
    limit = max_image_bytes()
    if len(data) > limit:
        raise ImageError(f"{len(data):,} bytes, over the {limit:,}-byte limit of one image "
                         "(REFEREE_MAX_IMAGE_BYTES)")
    want = normal_media_type(declared)
    kind = sniff(data)
    if want == "image/svg+xml" or (kind is None and _looks_svg(data)):
        raise ImageError("an SVG image is refused: it can carry script and no provider takes it inline; "
                         "convert it to PNG")
    if kind is None:
        raise ImageError(f"not a PNG, JPEG, GIF or WebP image (its first bytes are {data[:8]!r})")
    if want is not None and want != kind:
        raise ImageError(f"declared as {want} but its bytes are {kind}")
    w, h = _READERS[kind](data)
    return Image(media_type=kind, sha256=hashlib.sha256(data).hexdigest(), data=data, name=name, width=w, height=h)


def decode_b64(text: str) -> bytes:
    """Base64 text decoded, its size checked before decoding (a 1 GB string is refused unread)."""
    limit = max_image_bytes()
    if len(text) * 3 // 4 > limit + 3:
        raise ImageError(f"about {len(text) * 3 // 4:,} bytes, over the {limit:,}-byte limit of one image "
                         "(REFEREE_MAX_IMAGE_BYTES)")
    try:
        return base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ImageError(f"'data' is not valid base64 ({exc})") from None


_DATA_URL = re.compile(r"^data:([\w.+-]+/[\w.+-]+)?((?:;[\w.+-]+=[^;,]*)*)(;base64)?,", re.IGNORECASE)


def from_data_url(url: str, *, name: str = "") -> Image:
    """A ``data:image/png;base64,...`` URL's image; the declared type must be what the bytes are."""
    m = _DATA_URL.match(url)
    if m is None or not m.group(3):
        raise ImageError("a data URL must be 'data:<media type>;base64,<base64>'")
    return from_bytes(decode_b64(url[m.end():]), declared=m.group(1) or None, name=name)


def image_of(part: dict[str, Any]) -> Image:
    """The :class:`Image` of one part with ``data`` (base64 or a data URL, with ``media_type``) or ``url``
    (https or http, or a data URL). A ``path`` is resolved where the cases are loaded, not here."""
    name = str(part.get("name") or "")
    declared = part.get("media_type")
    if declared is not None and not isinstance(declared, str):
        raise ImageError("'media_type' must be a string such as image/png")
    data = part.get("data")
    url = part.get("url")
    if sum(k in part for k in ("data", "url", "path")) != 1:
        raise ImageError("an image part needs exactly one of 'path', 'url' or 'data'")
    if "path" in part:
        raise ImageError("a 'path' image is resolved only in a cases file (beside it); give 'data' here")
    if data is not None:
        if isinstance(data, bytes | bytearray):
            return from_bytes(bytes(data), declared=declared, name=name)
        if not isinstance(data, str):
            raise ImageError("'data' must be base64 text")
        if data.startswith("data:"):
            img = from_data_url(data, name=name)
            if declared is not None and normal_media_type(declared) != img.media_type:
                raise ImageError(f"declared as {declared} but its bytes are {img.media_type}")
            return img
        if declared is None:
            raise ImageError("'data' needs a 'media_type' (image/png, image/jpeg, image/gif or image/webp)")
        return from_bytes(decode_b64(data), declared=declared, name=name)
    if not isinstance(url, str) or not url:
        raise ImageError("'url' must be a non-empty string")
    if url.startswith("data:"):
        return from_data_url(url, name=name)
    scheme = url.split(":", 1)[0].lower()
    if scheme not in ("https", "http") or len(url) > 8192:
        raise ImageError(f"'url' must be an http(s) URL, not {scheme}: (a local file is a 'path')")
    return Image(media_type=normal_media_type(declared) or "", sha256=hashlib.sha256(url.encode()).hexdigest(),
                 url=url, name=name or url.rsplit("/", 1)[-1][:80])


# -- markers: where an image goes in a prompt -----------------------------------------------------------
_TOKEN = secrets.token_hex(8)
"""Random per process: case text cannot write a marker (and one naming an image not registered is text)."""
_MARKER = re.compile(r"\[\[image:" + _TOKEN + r":([0-9a-f]{64})\]\]")
_REGISTRY: OrderedDict[str, Image] = OrderedDict()
_REGISTRY_BYTES = [0]
_REGISTRY_LIMIT = 256 * 1024 * 1024
_LOCK = threading.Lock()


def marker(img: Image) -> str:
    """The text that stands for ``img`` in a prompt until the request is built (:func:`images_in`)."""
    with _LOCK:
        if img.sha256 not in _REGISTRY:
            _REGISTRY[img.sha256] = img
            _REGISTRY_BYTES[0] += len(img.data or b"")
            while _REGISTRY_BYTES[0] > _REGISTRY_LIMIT and len(_REGISTRY) > 1:
                _, old = _REGISTRY.popitem(last=False)
                _REGISTRY_BYTES[0] -= len(old.data or b"")
        else:
            _REGISTRY.move_to_end(img.sha256)
    return f"[[image:{_TOKEN}:{img.sha256}]]"


def has_marker(text: str) -> bool:
    return _TOKEN in text


def images_in(*texts: str) -> tuple[Image, ...]:
    """The images the markers in ``texts`` stand for, in order, each once."""
    out: dict[str, Image] = {}
    for text in texts:
        if _TOKEN not in text:
            continue
        for m in _MARKER.finditer(text):
            sha = m.group(1)
            with _LOCK:
                img = _REGISTRY.get(sha)
            if img is None:
                raise ImageError(f"image {sha[:12]} is no longer held in memory; run with fewer images at once")
            out.setdefault(sha, img)
    return tuple(out.values())


def split(text: str, images: tuple[Image, ...]) -> list[str | Image]:
    """``text`` cut at its markers: text pieces and the images in their places (empty pieces dropped). An image
    is sent once, where it first stands; a later marker of the same image is a line of text saying so (a case
    naming one 19 MB image 20 times is one image in the request, not 20)."""
    by_sha = {i.sha256: i for i in images}
    out: list[str | Image] = []
    placed: set[str] = set()
    pos = 0
    for m in _MARKER.finditer(text):
        img = by_sha.get(m.group(1))
        if img is None:
            continue
        if m.start() > pos:
            out.append(text[pos:m.start()])
        if img.sha256 in placed:
            out.append(f"[{img.label}: the same image as above]")
        else:
            placed.add(img.sha256)
            out.append(img)
        pos = m.end()
    if pos < len(text):
        out.append(text[pos:])
    return out


def plain(text: str) -> str:
    """``text`` with each marker as ``[image ...]`` (for text-only readers: the stand-in, logs)."""
    if _TOKEN not in text:
        return text

    def sub(m: re.Match[str]) -> str:
        with _LOCK:
            img = _REGISTRY.get(m.group(1))
        return f"[{img.label if img else 'image'}]"

    return _MARKER.sub(sub, text)


def strip_markers(text: str) -> str:
    """``text`` without its markers (what there is of it to quote)."""
    return _MARKER.sub("", text) if _TOKEN in text else text


def with_markers(value: Any) -> Any:
    """``value`` with each image part replaced by its marker (a string), for JSON renderings of case values."""
    return _with_markers(value, {})


def _with_markers(value: Any, seen: dict[int, tuple[Any, Any, str]], depth: int = 0) -> Any:
    """``seen``: id of a part's base64 text -> (that text, its declared type, its marker), for this one value: parts sharing one
    text (a loaded case's repeated image) are decoded and checked once, not once per part."""
    if isinstance(value, dict):
        if value.get("type") == "image":
            data, declared = value.get("data"), value.get("media_type")
            hit = seen.get(id(data)) if isinstance(data, str) else None
            if hit is not None and hit[0] is data and hit[1] == declared:
                return hit[2]
            mark = marker(image_of(value))  # the marker names the content only (its SHA-256), not the part's name
            if isinstance(data, str):
                seen[id(data)] = (data, declared, mark)
            return mark
        if value.get("type") == "text" and isinstance(value.get("text"), str) and len(value) == 2:
            return value["text"]
        return {k: _with_markers(v, seen, depth + 1) for k, v in value.items()}
    if isinstance(value, list) and depth < 64:
        return [_with_markers(v, seen, depth + 1) for v in value]
    return value


def prompt_text(value: Any, dumps: Callable[[Any], str] = lambda v: json.dumps(v, indent=2)) -> str:
    """A case value as prompt text with each image part as its marker. A list of parts (text and images, the
    content-parts shape) is their texts and markers joined by new lines; other containers are ``dumps`` of the
    value with the images' markers in place of the parts."""
    if isinstance(value, str):
        return value
    swapped = _with_markers(value, {})
    if isinstance(swapped, str):
        return swapped
    if isinstance(swapped, list) and all(isinstance(v, str) for v in swapped) and isinstance(value, list) \
            and all(isinstance(v, dict) and v.get("type") in ("text", "image") for v in value):
        return "\n".join(swapped)
    return dumps(swapped)
