"""The HTML report in a real headless Chromium: case text renders as text, no script runs, the page paints."""

from __future__ import annotations

import shutil
import statistics
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from referee.reports._html import write_html
from tests.reports.test_html import rows

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]

pytestmark = [
    pytest.mark.chromium,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/test installs Debian's package)"),
]


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args],
                          capture_output=True, text=True, timeout=120, check=False)


def _png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Decode an 8-bit RGB/RGBA PNG into rows of raw pixel bytes (filters undone)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height, ctype = 8, b"", 0, 0, 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    out: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 0xFF
            elif f == 2:
                line[i] = (line[i] + b) & 0xFF
            elif f == 3:
                line[i] = (line[i] + ((a + b) >> 1)) & 0xFF
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        out.append(bytes(line))
        prev = line
    return width, height, out


def test_report_renders_case_text_as_text_in_chromium(tmp_path: Path) -> None:
    page = write_html(rows(), tmp_path / "report.html", title="referee chromium check")
    url = page.resolve().as_uri()
    dom = _run(tmp_path, "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    # No script ran: the payload would have changed the title.
    assert "<title>referee chromium check</title>" in html and "pwned" not in html.split("<body", 1)[0]
    # The payload is text in the DOM (escaped when serialised), and no <script>/<img> element exists.
    assert "&lt;script&gt;document.title=\"pwned\"&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=" in html
    assert "<script" not in html and "<img" not in html
    assert '<mark title="accuracy">Refunds take 5 days</mark>' in html

    png = tmp_path / "shot.png"
    shot = _run(tmp_path, f"--screenshot={png}", "--window-size=1280,2000", url)
    assert shot.returncode == 0 and png.exists(), shot.stderr[-2000:]
    width, height, pixels = _png_pixels(png.read_bytes())
    assert (width, height) == (1280, 2000)
    # Non-blank: a rendered page has many distinct colours and dark (text) pixels, not one flat colour.
    sample = b"".join(pixels[y][::97] for y in range(0, height, 7))
    assert len(set(sample)) > 20
    assert statistics.pstdev(sample) > 5  # a blank (one-colour) page has 0
    assert sum(1 for v in sample if v < 100) > 50
