"""Small valid images built byte by byte (no imaging library): a PNG of one colour, a JPEG-looking file, SVG."""

from __future__ import annotations

import base64
import struct
import zlib


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png(width: int = 4, height: int = 3, rgb: tuple[int, int, int] = (200, 30, 30),
        pixel: tuple[int, int, tuple[int, int, int]] | None = None) -> bytes:
    """A true-colour PNG filled with ``rgb``; ``pixel=(x, y, rgb)`` paints one pixel another colour."""
    rows = []
    for y in range(height):
        row = bytearray(b"\x00")
        for x in range(width):
            row += bytes(pixel[2] if pixel and (x, y) == pixel[:2] else rgb)
        rows.append(bytes(row))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", zlib.compress(b"".join(rows)))
            + _chunk(b"IEND", b""))


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def part(data: bytes, media_type: str = "image/png", **extra: object) -> dict[str, object]:
    return {"type": "image", "data": b64(data), "media_type": media_type, **extra}


SVG_WITH_SCRIPT = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'
