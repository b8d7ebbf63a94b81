"""How a run's rows become stored bytes: the row body's canonical JSON, its content hash, compression, the stub for
an oversized row. No SQLAlchemy here: the recorder's SQLite path (``_sqlite_writer``) and ``Store`` share it.

A text's ``packed`` column says how its ``data`` is stored: 0 as it is, 1 zlib (what schema revisions up to 0003
wrote; still read), 2 a Zstandard frame that states its size (written since 0004). Reading refuses anything else,
and any text that would expand past ``max_text_bytes()``: a store file can come from elsewhere (``runs import``).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._settings import StoreError

if TYPE_CHECKING:
    from ..results._schema import ResultRow

NONE_INDEX = -1
"""Stands for "no repeat" / "no turn" in the rows' key, since a primary key column cannot be NULL."""
ROW_COLUMNS = ("run_id", "case_id", "rep", "turn", "seq", "status", "score", "passed", "latency_ms", "cost_usd",
               "body")
"""The ``rows`` table's columns, in the order ``encode_row`` gives their values (a test holds them equal to
``_schema.rows``)."""
ROW_UPDATE_COLUMNS = ("seq", "status", "score", "passed", "latency_ms", "cost_usd", "body")
"""What a row stored again under the same key (a retried error row) replaces."""

VOLATILE = ("latency_ms", "cost_usd")
"""Row fields kept as columns, out of the hashed body: they differ between reruns whose rows are otherwise equal."""
_VOLATILE_SET = set(VOLATILE)
_PACK_MIN = 256
_PACK_MANY_MIN = 8
"""Fewer texts than this are compressed one call each (a batch call has its own set-up)."""
PACKED_RAW, PACKED_ZLIB, PACKED_ZSTD = 0, 1, 2
_ZSTD_LEVEL = 1
"""Zstandard's level 1: a row body (~1 KB of judge JSON) in ~5 us against zlib's ~16 us at its fastest level, to the
same size within a few bytes (bench/bench_store.py); it is what lifts the store's rows/s."""
DEFAULT_MAX_ROW_BYTES = 4_000_000
_TEXT_FLOOR = 256 << 20
"""No stored text legitimately expands past this (or past the row bound, if that is set higher)."""


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


def max_text_bytes() -> int:
    """The most a stored text may expand to when read (a larger one is damaged or hostile, and refused)."""
    return max(_TEXT_FLOOR, max_row_bytes())


def digest(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


class _Zstd(threading.local):
    """One compressor and one decompressor per thread: zstandard's objects must not be shared between threads, and
    making one per call costs ~20 us, four times the compression of a row."""

    def __init__(self) -> None:
        import zstandard  # imported with the first packed text: a command that reads no text never loads it

        self.module = zstandard
        compressor = zstandard.ZstdCompressor(level=_ZSTD_LEVEL, write_content_size=True)
        self.compress = compressor.compress
        # Many texts in one call: the C backend's (the cffi one lacks it). It writes the frames ``compress`` writes.
        self.compress_many = (compressor.multi_compress_to_buffer
                              if "multi_compress_to_buffer" in zstandard.backend_features else None)
        self.decompressor = zstandard.ZstdDecompressor()


_zstd: _Zstd | None = None


def _codec() -> _Zstd:
    global _zstd
    if _zstd is None:
        _zstd = _Zstd()
    return _zstd


def _pack(data: bytes) -> tuple[int, bytes]:
    if len(data) >= _PACK_MIN:
        z = _codec().compress(data)
        if len(z) < len(data) * 0.9:
            return PACKED_ZSTD, z
    return PACKED_RAW, data


def pack_many(datas: Sequence[bytes]) -> list[tuple[int, bytes]]:
    """``_pack`` of each text, the same bytes. A batch goes to Zstandard in one call: no Python between texts
    (~0.5 us a text less), and the GIL released for the whole batch, so the SQLite writer's row inserts run beside
    it on another thread."""
    big = [i for i, d in enumerate(datas) if len(d) >= _PACK_MIN]
    out = [(PACKED_RAW, d) for d in datas]
    if not big:
        return out
    z = _codec()
    if z.compress_many is None or len(big) < _PACK_MANY_MIN:
        frames = [z.compress(datas[i]) for i in big]
    else:
        batch = z.compress_many([datas[i] for i in big], threads=0)
        frames = [batch[k].tobytes() for k in range(len(batch))]
    for i, frame in zip(big, frames, strict=True):
        if len(frame) < len(datas[i]) * 0.9:
            out[i] = (PACKED_ZSTD, frame)
    return out


def _unpack(packed: int, data: bytes) -> bytes:
    if packed == PACKED_RAW:
        return bytes(data)
    bound = max_text_bytes()
    if packed == PACKED_ZSTD:
        z = _codec()
        try:
            size = z.module.frame_content_size(data)  # read from the frame's header: nothing is expanded yet
        except z.module.ZstdError as exc:
            raise StoreError(f"a stored text is not a Zstandard frame ({exc}): the store is damaged") from None
        if size < 0:
            raise StoreError("a stored text's Zstandard frame does not state its size: the store is damaged")
        if size > bound:
            raise StoreError(f"a stored text would expand to {size:,} bytes, past the bound of {bound:,}: "
                             "the store is damaged or hostile")
        try:
            return bytes(z.decompressor.decompress(data, max_output_size=bound))
        except z.module.ZstdError as exc:
            raise StoreError(f"a stored text cannot be decompressed ({exc}): the store is damaged") from None
    if packed == PACKED_ZLIB:
        d = zlib.decompressobj()
        try:
            out = d.decompress(data, bound + 1)
        except zlib.error as exc:
            raise StoreError(f"a stored text cannot be decompressed ({exc}): the store is damaged") from None
        if len(out) > bound:
            raise StoreError(f"a stored text would expand past the bound of {bound:,} bytes: "
                             "the store is damaged or hostile")
        if not d.eof:
            raise StoreError("a stored text is cut short: the store is damaged")
        return out
    raise StoreError(f"a stored text is packed as {packed!r}, which this referee does not know: the store is damaged "
                     "or from a newer referee")


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False).encode("utf-8")


def _key_part(v: int | None) -> int:
    return NONE_INDEX if v is None else int(v)


def encode_row(run_id: str, row: ResultRow, seq: int, *, results_path: str | None,
               limit: int) -> tuple[tuple[Any, ...], bytes, bytes, bool]:
    """(the row's columns' values in ``ROW_COLUMNS`` order, its body's hash, the body, whether it was cut to a
    stub). A tuple, not a dict: the SQLite writer binds it as it is."""
    # pydantic's own JSON (fields in their declared order, so equal rows give equal bytes): the serializer
    # ``model_dump_json`` calls, as the UTF-8 it makes, without that method's wrapper and a decode and encode
    data = row.__pydantic_serializer__.to_json(row, exclude_none=True, exclude=_VOLATILE_SET)
    stub = len(data) > limit
    if stub:
        body = json.loads(data)
        keep: dict[str, Any] = {k: body[k] for k in ("schema_version", "id", "status", "score", "passed", "category",
                                                     "evaluator", "repeat", "turn") if k in body}
        keep["details"] = {"store_stub": {"bytes": len(data), "file": results_path,
                                          "note": "too large for the store; the full row is in the file"}}
        data = _dumps(keep)
    h = digest(data)
    values = (run_id, row.id, _key_part(row.repeat), _key_part(row.turn), seq, row.status, row.score, row.passed,
              row.latency_ms, row.cost_usd, h)
    return values, h, data, stub
