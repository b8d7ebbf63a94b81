"""How a run's rows become stored bytes: the row body's canonical JSON, its content hash, compression, the stub for
an oversized row. No SQLAlchemy here: the recorder's SQLite path (``_sqlite_writer``) and ``Store`` share it."""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from typing import TYPE_CHECKING, Any

from ._settings import StoreError

if TYPE_CHECKING:
    from ..results._schema import ResultRow

NONE_INDEX = -1
"""Stands for "no repeat" / "no turn" in the rows' key, since a primary key column cannot be NULL."""
ROW_UPDATE_COLUMNS = ("seq", "status", "score", "passed", "latency_ms", "cost_usd", "body")
"""What a row stored again under the same key (a retried error row) replaces."""

VOLATILE = ("latency_ms", "cost_usd")
"""Row fields kept as columns, out of the hashed body: they differ between reruns whose rows are otherwise equal."""
_VOLATILE_SET = set(VOLATILE)
_PACK_MIN = 256
_SMALL_WINDOW = 1 << 12
DEFAULT_MAX_ROW_BYTES = 4_000_000


def max_row_bytes() -> int:
    """A row's body above this many bytes is stored as a stub naming its results file
    (``REFEREE_STORE_MAX_ROW_BYTES``)."""
    raw = os.environ.get("REFEREE_STORE_MAX_ROW_BYTES")
    if not raw:
        return DEFAULT_MAX_ROW_BYTES
    try:
        v = int(raw)
    except ValueError:
        raise StoreError(f"REFEREE_STORE_MAX_ROW_BYTES={raw!r} is not a whole number of bytes") from None
    if v < 1024:
        raise StoreError(f"REFEREE_STORE_MAX_ROW_BYTES={raw!r} must be at least 1024")
    return v


def digest(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _pack(data: bytes) -> tuple[int, bytes]:
    if len(data) >= _PACK_MIN:
        # zlib sets up its whole window on every call: the default 32 KiB costs ~60 us for a 400-byte row, a 4 KiB
        # one ~9 us, and compresses a text of up to 4 KiB exactly as well. ``zlib.decompress`` reads either.
        c = zlib.compressobj(1, zlib.DEFLATED, 12 if len(data) <= _SMALL_WINDOW else zlib.MAX_WBITS)
        z = c.compress(data) + c.flush()
        if len(z) < len(data) * 0.9:
            return 1, z
    return 0, data


def _unpack(packed: int, data: bytes) -> bytes:
    return zlib.decompress(data) if packed == 1 else bytes(data)


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False).encode("utf-8")


def _key_part(v: int | None) -> int:
    return NONE_INDEX if v is None else int(v)


def encode_row(run_id: str, row: ResultRow, seq: int, *, results_path: str | None,
               limit: int) -> tuple[dict[str, Any], bytes, bytes, bool]:
    """(the row's columns, its body's hash, the body, whether it was cut to a stub)."""
    # pydantic's own JSON (fields in their declared order, so equal rows give equal bytes)
    data = row.model_dump_json(exclude_none=True, exclude=_VOLATILE_SET).encode("utf-8")
    stub = len(data) > limit
    if stub:
        body = json.loads(data)
        keep: dict[str, Any] = {k: body[k] for k in ("schema_version", "id", "status", "score", "passed", "category",
                                                     "evaluator", "repeat", "turn") if k in body}
        keep["details"] = {"store_stub": {"bytes": len(data), "file": results_path,
                                          "note": "too large for the store; the full row is in the file"}}
        data = _dumps(keep)
    h = digest(data)
    values = {"run_id": run_id, "case_id": row.id, "rep": _key_part(row.repeat), "turn": _key_part(row.turn),
              "seq": seq, "status": row.status, "score": row.score, "passed": row.passed,
              "latency_ms": row.latency_ms, "cost_usd": row.cost_usd, "body": h}
    return values, h, data, stub
