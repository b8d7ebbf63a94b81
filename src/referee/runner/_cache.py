"""Content-addressed response cache (SQLite), so an unchanged rerun makes zero provider calls.

The key is a sha256 over the provider's identity (name, model, base URL) and the full request. Keys, headers
and anything secret are never part of the material or the stored value.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

from .._util._home import DIR_NAME, ensure_dir, referee_dir
from ..errors import UserError
from ..providers._base import Completion, JudgeRequest

log = logging.getLogger(__name__)

DEFAULT_DIR = DIR_NAME


def default_cache_path() -> Path:
    """``$REFEREE_CACHE_DIR/cache.sqlite``, else ``cache.sqlite`` in referee's folder: ``.referee/`` at the git
    repository's top level, else in the working folder (the run history's rule, ``_util/_home.py``)."""
    base = os.environ.get("REFEREE_CACHE_DIR")
    return (Path(base) if base else referee_dir()) / "cache.sqlite"


def cache_key(identity: dict[str, Any], request: JudgeRequest) -> str:
    """The response cache's key: a SHA-256 of the provider identity and everything that shapes the reply."""
    material = json.dumps({"who": identity, "req": request.cache_material()}, sort_keys=True,
                          ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


def _dump_extra(c: Completion) -> str | None:
    extra: dict[str, Any] = {}
    if c.cache_read_tokens is not None:
        extra["cache_read_tokens"] = c.cache_read_tokens
    if c.batch:
        extra["batch"] = True
    return json.dumps(extra) if extra else None


def _extra(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


class ResponseCache:
    """The cache is an optimisation: once open, a failing read is a miss and a failing write (a full disk, a
    locked file) turns the cache off with one warning; a judged case is never lost because of it."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path else default_cache_path()
        self._lock = threading.Lock()
        self._broken = False
        try:
            ensure_dir(self.path.parent)
            self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, text TEXT NOT NULL, "
                "input_tokens INTEGER, output_tokens INTEGER, model TEXT, latency_ms REAL, "
                "created_at REAL DEFAULT (unixepoch()))"
            )
            columns = {r[1] for r in self._db.execute("PRAGMA table_info(responses)")}
            if "extra" not in columns:  # caches written before batch mode: the prices' details, as JSON
                self._db.execute("ALTER TABLE responses ADD COLUMN extra TEXT")
        except (OSError, sqlite3.Error) as exc:
            raise UserError(f"cannot use the response cache {self.path}: {exc}; delete it, set REFEREE_CACHE_DIR "
                            "to a writable folder, or pass --no-cache") from exc

    def _disable(self, exc: Exception) -> None:
        if not self._broken:
            self._broken = True
            log.warning("warning: response cache %s disabled for this run: %s", self.path, exc)

    def get(self, key: str) -> Completion | None:
        if self._broken:
            return None
        try:
            with self._lock:
                row = self._db.execute(
                    "SELECT text, input_tokens, output_tokens, model, latency_ms, extra FROM responses WHERE key = ?",
                    (key,),
                ).fetchone()
        except sqlite3.Error as exc:
            self._disable(exc)
            return None
        if row is None:
            return None
        extra = _extra(row[5])
        cache_read = extra.get("cache_read_tokens")
        return Completion(text=row[0], input_tokens=row[1], output_tokens=row[2], model=row[3] or "",
                          latency_ms=row[4] or 0.0, cached=True,
                          cache_read_tokens=cache_read if isinstance(cache_read, int) else None,
                          batch=extra.get("batch") is True)

    def put(self, key: str, c: Completion) -> None:
        if self._broken:
            return
        try:
            with self._lock:
                self._db.execute(
                    "INSERT OR REPLACE INTO responses (key, text, input_tokens, output_tokens, model, latency_ms, "
                    "extra) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (key, c.text, c.input_tokens, c.output_tokens, c.model, c.latency_ms, _dump_extra(c)),
                )
        except sqlite3.Error as exc:
            self._disable(exc)

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            try:
                self._db.close()
            except sqlite3.Error:
                pass
