"""Names and hashes around a results file that need no result model: what runs look at before their first
request (the models, with pydantic, load while it is in flight)."""

from __future__ import annotations

import datetime as _dt
import hashlib
from pathlib import Path


def utc_now_iso() -> str:
    """Now, as the ISO 8601 UTC timestamp (whole seconds) every manifest field uses."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def manifest_path(results_path: str | Path) -> Path:
    """``results.jsonl`` -> ``results.manifest.json`` (same folder)."""
    p = Path(results_path)
    stem = p.name
    for suffix in (".jsonl", ".json", ".ndjson"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    return p.with_name(stem + ".manifest.json")


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes (read in 1 MB chunks), hex."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def text_sha256(text: str) -> str:
    """The SHA-256 of ``text`` encoded as UTF-8, hex."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
