"""A large JSONL cases file, read by offset: the viewer keeps each case's id and where its line starts, and
builds a :class:`~referee.cases.Case` only when a page shows it (1,000,000 cases held in memory as objects took
about 1 GB; their offsets take a tenth of that).

A line is checked as ``load_cases`` checks it when it is read; a bad line then shows no case (and is said in
the run's warnings), the others still show.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..cases._case import Case, _check_case
from ..errors import InputError

LAZY_BYTES = 20_000_000
"""JSONL cases files larger than this are read by offset; smaller ones are loaded whole (``load_cases``)."""
_CACHED = 512
_MAX_LINE = 64 * 1024 * 1024
"""A line longer than this is not read back (the bound of every untrusted read)."""


def _id_decoder() -> Any:
    try:
        import msgspec
    except ImportError:  # pragma: no cover - msgspec is a dependency
        return None
    row = msgspec.defstruct("CaseId", [("id", Any, None)], forbid_unknown_fields=False)
    return msgspec.json.Decoder(row), (msgspec.DecodeError, RecursionError, ValueError)


class LazyCases(Mapping[str, Case]):
    """id -> :class:`Case` of one JSONL file, each case read from its line when asked for (first id wins)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.warnings: list[str] = []
        self._where: dict[str, tuple[int, int, int]] = {}  # id -> (byte offset, line number, index)
        self._cache: OrderedDict[str, Case | None] = OrderedDict()
        self._lock = threading.Lock()
        dec = _id_decoder()
        with open(path, "rb") as f:
            pos = 0
            for n, raw in enumerate(f, 1):
                start, pos = pos, pos + len(raw)
                if n == 1 and raw.startswith(b"\xef\xbb\xbf"):
                    start, raw = start + 3, raw[3:]  # a BOM (Windows editors) is not content
                if not raw.strip():
                    continue
                cid = self._id_of(raw, dec)
                if cid is None:
                    if len(self.warnings) < 20:
                        self.warnings.append(f"{path}:{n}: no id read on this line; its case is not shown")
                    continue
                self._where.setdefault(cid, (start, n, len(self._where)))

    @staticmethod
    def _id_of(raw: bytes, dec: Any) -> str | None:
        cid: Any = None
        if dec is not None:
            decoder, errors = dec
            try:
                cid = decoder.decode(raw).id
            except errors:
                return None
        else:  # pragma: no cover
            import json

            try:
                obj = json.loads(raw)
            except ValueError:
                return None
            cid = obj.get("id") if isinstance(obj, dict) else None
        if isinstance(cid, bool) or not isinstance(cid, str | int) or cid == "":
            return None
        return str(cid)

    def __len__(self) -> int:
        return len(self._where)

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __contains__(self, key: object) -> bool:
        return key in self._where

    def __getitem__(self, key: str) -> Case:
        case: Case | None = self.get(key)
        if case is None:
            raise KeyError(key)
        return case

    def get(self, key: str, default: Any = None) -> Any:
        where = self._where.get(key)
        if where is None:
            return default
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                hit = self._cache[key]
                return default if hit is None else hit
        case = self._read(key, *where)
        with self._lock:
            self._cache[key] = case
            while len(self._cache) > _CACHED:
                self._cache.popitem(last=False)
        return default if case is None else case

    def search_texts(self, fields: tuple[str, ...], limit: int, text: Any) -> dict[str, str]:
        """id -> its case's ``fields`` joined (each cut to ``limit`` characters), in one pass over the file (the
        row index's search text; a line that does not decode is left out)."""
        try:
            import msgspec
        except ImportError:  # pragma: no cover
            return {}
        row = msgspec.defstruct("CaseText", [(f, Any, None) for f in ("id", *fields)], forbid_unknown_fields=False)
        decoder = msgspec.json.Decoder(row)
        out: dict[str, str] = {}
        with open(self.path, "rb") as f:
            pos = 0
            for raw in f:
                start, pos = pos, pos + len(raw)
                try:
                    r: Any = decoder.decode(raw)
                except (msgspec.DecodeError, RecursionError, ValueError):
                    continue
                rid = r.id
                cid = rid if isinstance(rid, str) else str(rid) if isinstance(rid, int) and rid is not True \
                    and rid is not False else None
                where = self._where.get(cid) if cid is not None else None
                if cid is None or where is None or where[0] not in (start, start + 3):  # not this id's line
                    continue
                out[cid] = " ".join(text(getattr(r, k))[:limit] for k in fields)
        return out

    def _read(self, key: str, offset: int, line: int, index: int) -> Case | None:
        from .._util import _data

        with open(self.path, "rb") as f:
            f.seek(offset)
            raw = f.readline(_MAX_LINE + 1)
        try:
            if len(raw) > _MAX_LINE:
                raise InputError(f"longer than {_MAX_LINE} bytes", file=str(self.path), line=line)
            try:
                obj = _data.loads(raw.decode("utf-8"))
            except (ValueError, UnicodeDecodeError) as exc:
                raise InputError(f"not a case ({exc})", file=str(self.path), line=line) from None
            case = _check_case(obj, str(self.path), line, index)
        except InputError as exc:
            if len(self.warnings) < 40:
                self.warnings.append(f"case {key!r} not shown: {exc}")
            return None
        return case if case.id == key else None
