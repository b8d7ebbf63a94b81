"""A fast columnar reader of results files for aggregation.

``referee.results.read_results`` validates every row with pydantic (right for tools that need whole rows);
aggregating a million rows needs only a few columns, so this reader decodes each line once (orjson when
installed, else json) and keeps numpy columns plus each row's byte offset, from which the rationale and
other text fields of the few rows a report shows are read back. It accepts referee rows and seed rows
(without ``schema_version``) and reports problems as ``read_results`` does: a warning naming file, line and
field, or an ``InputError`` with ``strict``. It reads only the fields aggregation needs, so it is stricter
than ``read_results`` on those (a negative cost or latency, a repeat given as a string) and lenient on the
others (unknown keys, a non-string category). ``passed`` (the evaluator's own verdict) is read as -1/0/1; a
value other than true, false or null is ignored with one warning rather than dropping the row, since the
default pass rule (``score >= threshold``) does not use it.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import repeat
from operator import attrgetter
from pathlib import Path
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from .._util import _data
from ..errors import InputError
from ..results._manifest import RunManifest
from ..results._schema import ResultRow
from ..results._writer import json_line

try:  # 3x faster than json on result lines; optional so a bare install still works.
    import orjson

    _fast_loads: Any = orjson.loads
except ImportError:  # pragma: no cover - exercised only without orjson
    _fast_loads = json.loads

_ROW_FIELDS = ("id", "score", "status", "repeat", "turn", "cost_usd", "latency_ms", "category", "passed")
_DIGITS = bytes(48 if 48 <= b <= 57 else 32 for b in range(256))
"""Every digit as ``0``, anything else a space: a run of 19 digits is then one substring search (C speed; a regex
took 10x longer). Such a run may be a number orjson refuses (an integer past 64 bits, a float past a double)
that msgspec would take: that chunk is decoded by orjson, so both decoders accept exactly the same lines."""
_LONG_RUN = b"0" * 19
_DECODER: Any = None


def _column_decoder() -> Any:
    """msgspec's decoder of the nine columns (unknown fields skipped at C speed, nothing else built: ~10x faster
    than a full parse on rows with criteria and evidence), or None without msgspec."""
    global _DECODER
    if _DECODER is None:
        try:
            import msgspec
        except ImportError:  # pragma: no cover - msgspec is a dependency; orjson is the fallback
            _DECODER = False
            return None
        fields = [(name, Any, None) for name in _ROW_FIELDS]
        row = msgspec.defstruct("Columns", fields, forbid_unknown_fields=False)
        # ValueError: an integer past Python's digit limit (the digit-run guard keeps those away, to be sure)
        _DECODER = (msgspec.json.Decoder(row), (msgspec.DecodeError, RecursionError, ValueError))
    return _DECODER or None


def _columns(lines: list[bytes], data: bytes) -> list[list[Any]]:
    """The nine columns of ``lines`` (``data``: the lines joined; each line a JSON object, else
    ValueError/TypeError)."""
    dec = _column_decoder()
    if dec is not None and _LONG_RUN not in data.translate(_DIGITS):
        decoder, errors = dec
        try:  # the chunk in one call (newline-delimited), no per-line overhead
            rows = decoder.decode_lines(data)
        except errors:
            pass  # decoded again below: orjson's error (or its acceptance) decides, as on every other line
        else:
            if len(rows) == len(lines):  # a blank line, or two objects on one, would shift the rows after it
                return [list(map(attrgetter(name), rows)) for name in _ROW_FIELDS]
    ds = list(map(_fast_loads, lines))
    get = dict.get
    return [list(map(get, ds, repeat(name))) for name in _ROW_FIELDS]

STATUS_CODES = {"scored": 0, "unscored": 1, "error": 2}
SCORED, UNSCORED, ERROR = 0, 1, 2
UNCATEGORIZED = "(uncategorized)"
PASS_RULES = ("threshold", "evaluator")
"""``threshold``: a scored row passes when ``score >= threshold`` (the seed's rule). ``evaluator``: its own
``passed`` verdict where it has one, else ``score >= threshold``."""


@dataclass
class ResultsTable:
    """Columns of one results file; row ``i`` of every column is the same row."""

    path: str
    ids: list[str]
    repeat: NDArray[np.int64]
    """-1 where the row has no repeat index."""
    turn: NDArray[np.int64]
    status: NDArray[np.int8]
    score: NDArray[np.float64]
    """NaN where the row is not scored."""
    category: NDArray[np.int32]
    """Index into ``categories`` (normalised keys) / ``category_names`` (first spelling seen)."""
    categories: list[str]
    category_names: list[str]
    cost: NDArray[np.float64]
    latency: NDArray[np.float64]
    line: NDArray[np.int64]
    offset: NDArray[np.int64]
    passed: NDArray[np.int8] = field(default_factory=lambda: np.zeros(0, dtype=np.int8))
    """The row's own ``passed``: 1 true, 0 false, -1 absent (or not a boolean). Empty means absent everywhere
    (tables built by hand)."""
    warnings: list[str] = field(default_factory=list)
    adversarial: bool = False
    """The run manifest marks the whole file as adversarial (red-team) results."""
    manifest: RunManifest | None = None
    memory: list[bytes] | None = None
    """The encoded rows of a table built in memory (:func:`table_from_rows`), indexed by ``line - 1``."""
    self_graded_rows: int = 0
    """Rows flagged ``self_grading`` (their judge graded its own model's output)."""

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def has_repeats(self) -> bool:
        return bool((self.repeat >= 0).any())

    def _passed(self, rows: NDArray[np.int64]) -> NDArray[np.int8]:
        if len(self.passed) != len(self.ids):
            return np.full(len(rows), -1, dtype=np.int8)
        return self.passed[rows]

    def row_passes(self, rows: NDArray[np.int64], threshold: float, rule: str = "threshold") -> NDArray[np.bool_]:
        """Whether each of ``rows`` passes under ``rule`` (meaningful for scored rows only: the callers
        keep unscored rows out, whatever their ``passed`` says)."""
        by_score: NDArray[np.bool_] = self.score[rows] >= threshold
        if rule == "threshold":
            return by_score
        if rule != "evaluator":
            raise ValueError(f"unknown pass rule {rule!r}")
        p = self._passed(rows)
        return np.where(p >= 0, p == 1, by_score)

    def has_verdict(self, rows: NDArray[np.int64]) -> NDArray[np.bool_]:
        """Whether each of ``rows`` carries its own boolean ``passed``."""
        return self._passed(rows) >= 0

    def disagreements(self, threshold: float) -> tuple[int, int]:
        """(scored rows whose ``passed`` disagrees with ``score >= threshold``, scored rows with a ``passed``)."""
        if len(self.passed) != len(self.ids):
            return 0, 0
        has = (self.passed >= 0) & (self.status == SCORED)
        if not bool(has.any()):
            return 0, 0
        by_score = self.score[has] >= threshold
        return int(((self.passed[has] == 1) != by_score).sum()), int(has.sum())

    def read_rows(self, rows: list[int]) -> dict[int, dict[str, Any]]:
        """The decoded JSON objects of the given rows (for rationales and errors in reports)."""
        out: dict[int, dict[str, Any]] = {}
        if self.memory is not None:
            for i in sorted(set(rows)):
                out[i] = json.loads(self.memory[int(self.line[i]) - 1])
            return out
        with open(self.path, "rb") as f:
            for i in sorted(set(rows)):
                f.seek(int(self.offset[i]))
                try:
                    out[i] = json.loads(f.readline())
                except ValueError:
                    out[i] = {}
        return out


def normalise_category(name: str) -> str:
    """The seed's rule: categories compare after ``strip().lower()``."""
    return name.strip().lower()


def _precise_error(raw: bytes) -> str:
    """Why a line failed the fast decoder, in the words of the stdlib one (NaN is reported, not hidden)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 ({exc.reason} at byte {exc.start})"
    try:
        _data.loads(text)
    except json.JSONDecodeError as exc:
        return f"malformed JSON ({exc.msg} at column {exc.colno})"
    except _data.UnsafeData as exc:
        return f"refused JSON: {exc}"
    except ValueError:
        return ""
    return ""


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return float(v)


def _numeric_string(v: str) -> float | None:
    try:
        return float(v)
    except ValueError:
        return None


class _Problem(Exception):
    def __init__(self, fld: str | None, msg: str) -> None:
        super().__init__(msg)
        self.field = fld
        self.msg = msg


_CHUNK_BYTES = 1 << 22
_NUMS_OR_NONE = {float, int, type(None)}
_SCORES = {float, int, bool, type(None)}
"""A boolean score is the seed's pass/fail form (true = 1.0, false = 0.0); numpy converts it so."""
_INTS_OR_NONE = {int, type(None)}
_STATUS_OF: dict[str | None, int] = {None: SCORED, "scored": SCORED, "unscored": UNSCORED, "error": ERROR}
_STATUS_KEYS = set(_STATUS_OF)
_BOOLS_OR_NONE = {bool, type(None)}
_PASSED_OF: dict[bool | None, int] = {None: -1, True: 1, False: 0}
_COLUMNS = ("repeat", "turn", "status", "score", "category", "cost", "latency", "line", "offset", "passed")


class _Columns:
    """Per-chunk numpy columns, concatenated at the end."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.parts: dict[str, list[NDArray[Any]]] = {k: [] for k in _COLUMNS}

    def add(self, ids: list[str], **cols: NDArray[Any]) -> None:
        self.ids.extend(ids)
        for k, v in cols.items():
            self.parts[k].append(v)

    def column(self, name: str, dtype: Any) -> NDArray[Any]:
        parts = self.parts[name]
        return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype=dtype)


class _Reader:
    def __init__(self, path: Path, strict: bool) -> None:
        self.path = path
        self.strict = strict
        self.warnings: list[str] = []
        self.cols = _Columns()
        self.categories: list[str] = []
        self.names: list[str] = []
        self.cat_code: dict[str, int] = {}
        self.raw_code: dict[Any, int] = {}
        self.bad_passed = 0
        self.first_bad_passed: tuple[int, Any] | None = None
        self.self_graded = 0

    def problem(self, lineno: int, fld: str | None, msg: str) -> None:
        err = InputError(msg, file=str(self.path), line=lineno, field=fld)
        if self.strict:
            raise err
        self.warnings.append(f"skipped {err}")

    def code_of(self, raw_cat: Any) -> int:
        c = self.raw_code.get(raw_cat) if isinstance(raw_cat, str | None) else None
        if c is not None:
            return c
        if raw_cat is None or (isinstance(raw_cat, str) and not raw_cat.strip()):
            key, name = "", UNCATEGORIZED
        else:
            name = raw_cat if isinstance(raw_cat, str) else str(raw_cat)
            key = normalise_category(name)
            name = name.strip()
        c = self.cat_code.get(key)
        if c is None:
            c = self.cat_code[key] = len(self.categories)
            self.categories.append(key)
            self.names.append(name)
        if isinstance(raw_cat, str | None):
            self.raw_code[raw_cat] = c
        return c

    def chunk(self, lines: list[bytes], first_line: int, first_offset: int) -> None:
        lens = np.fromiter(map(len, lines), dtype=np.int64, count=len(lines))
        offsets = first_offset + np.concatenate(([0], np.cumsum(lens)[:-1]))
        data = b"".join(lines)  # once: the column decoder and the scan below read it
        if not self._fast(lines, first_line, offsets, data):
            self._slow(lines, first_line, offsets)
        if b"self_grading" in data:  # one C-speed scan; rows are parsed again only on a hit
            for raw in lines:
                if b"self_grading" in raw:
                    try:
                        flags = _fast_loads(raw).get("flags")
                    except (ValueError, AttributeError):
                        continue
                    self.self_graded += isinstance(flags, list) and "self_grading" in flags

    def _fast(self, lines: list[bytes], first_line: int, offsets: NDArray[np.int64], data: bytes) -> bool:
        """The common case, column by column at C speed: every line a well-formed row (scored, unscored or
        error). Anything unusual (a bad line, a score given as a string, a blank line) returns False and the chunk is
        read row by row instead, which says exactly what is wrong."""
        try:
            ids, scores, status, reps, turns, costs, lats, cats, passed = _columns(lines, data)
        except (ValueError, TypeError):
            return False
        if set(map(type, ids)) != {str} or "" in ids:
            return False
        score_types = set(map(type, scores))
        if not score_types <= _SCORES or not set(status) <= _STATUS_KEYS:
            return False
        codes_st = np.fromiter(map(_STATUS_OF.__getitem__, status), dtype=np.int8, count=len(status))
        if type(None) in score_types:
            score = np.array([math.nan if v is None else v for v in scores], dtype=np.float64)
        else:
            score = np.array(scores, dtype=np.float64)
        scored = codes_st == SCORED
        # Scored rows need a score in 0-1; unscored/error rows must carry none.
        if not bool(((score >= 0) & (score <= 1))[scored].all()) or not bool(np.isnan(score[~scored]).all()):
            return False
        out: dict[str, NDArray[Any]] = {}
        for name, vals in (("repeat", reps), ("turn", turns)):
            types = set(map(type, vals))
            if types == {type(None)}:
                out[name] = np.full(len(vals), -1, dtype=np.int64)
            elif types <= _INTS_OR_NONE:
                arr = np.array([-1 if v is None else v for v in vals], dtype=np.int64)
                if int((arr < 0).sum()) != vals.count(None):  # a real negative index
                    return False
                out[name] = arr
            else:
                return False
        for name, vals in (("cost", costs), ("latency", lats)):
            types = set(map(type, vals))
            if not types <= _NUMS_OR_NONE:
                return False
            arr = np.array(vals if type(None) not in types else [math.nan if v is None else v for v in vals],
                           dtype=np.float64)
            if bool((arr < 0).any()):
                return False
            out[name] = arr
        if not set(map(type, cats)) <= {str, type(None)}:
            return False
        passed_types = set(map(type, passed))
        if passed_types == {type(None)}:
            out["passed"] = np.full(len(passed), -1, dtype=np.int8)
        elif passed_types <= _BOOLS_OR_NONE:
            out["passed"] = np.fromiter(map(_PASSED_OF.__getitem__, passed), dtype=np.int8, count=len(passed))
        else:
            return False
        for c in dict.fromkeys(cats):  # first-appearance order: the first spelling seen names the category
            self.code_of(c)
        codes = np.fromiter(map(self.raw_code.__getitem__, cats), dtype=np.int32, count=len(cats))
        n = len(ids)
        self.cols.add(cast(list[str], ids), status=codes_st, score=score, category=codes,
                      line=np.arange(first_line, first_line + n, dtype=np.int64), offset=offsets, **out)
        return True

    def _slow(self, lines: list[bytes], first_line: int, offsets: NDArray[np.int64]) -> None:
        ids: list[str] = []
        cols: dict[str, list[Any]] = {k: [] for k in _COLUMNS}
        for k, raw in enumerate(lines):
            lineno = first_line + k
            try:
                row = self._row(raw, lineno)
            except _Problem as exc:
                self.problem(lineno, exc.field, exc.msg)
                continue
            if row is None:
                continue
            rid, rep, trn, code, sc, cat, cost, lat, psd = row
            ids.append(rid)
            for key, v in (("repeat", rep), ("turn", trn), ("status", code), ("score", sc), ("category", cat),
                           ("cost", cost), ("latency", lat), ("line", lineno), ("offset", int(offsets[k])),
                           ("passed", psd)):
                cols[key].append(v)
        self.cols.add(ids, **{k: np.asarray(v, dtype=np.float64 if k in ("score", "cost", "latency")
                                             else np.int8 if k == "passed" else np.int64)
                              for k, v in cols.items()})

    def _row(self, raw: bytes, lineno: int) -> tuple[str, int, int, int, float, int, float, float, int] | None:
        try:
            d = _fast_loads(raw)
        except ValueError:
            if not raw.strip():
                return None
            why = _precise_error(raw)
            if why:
                raise _Problem(None, why) from None
            d = json.loads(raw.decode("utf-8"))  # NaN / Infinity / huge ints: the checks below say what
        if not isinstance(d, dict):
            raise _Problem(None, "expected a JSON object")
        rid = d.get("id")
        if isinstance(rid, str):
            if not rid:
                raise _Problem("id", "empty id")
        elif rid is None:
            raise _Problem("id", "missing field 'id'")
        elif isinstance(rid, int | float) and not isinstance(rid, bool):
            rid = str(rid)  # as read_results does for seed rows
        else:
            raise _Problem("id", "id must be a string")
        st = d.get("status")
        score = d.get("score")
        if st is None:
            code = SCORED
        else:
            code = STATUS_CODES.get(st, -1) if isinstance(st, str) else -1
            if code < 0:
                raise _Problem("status", f"status must be scored, unscored or error, not {st!r}")
        if code == SCORED:
            if score is None:
                raise _Problem("score", "missing field 'score' (a row without a score needs status "
                                        "'unscored' or 'error')")
            if isinstance(score, bool):
                sc = 1.0 if score else 0.0
            else:
                num = _number(score)
                if num is None and isinstance(score, str):
                    num = _numeric_string(score)  # the seed applies float() to the score, as read_results does
                if num is None:
                    raise _Problem("score", f"score must be a number, not {score!r}")
                if math.isnan(num):
                    raise _Problem("score", "score is NaN")
                if not 0.0 <= num <= 1.0:
                    raise _Problem("score", f"score {score} is outside 0-1")
                sc = num
        else:
            if score is not None:
                raise _Problem("score", f"a row with status '{st}' must not carry a score")
            sc = math.nan
        rep = d.get("repeat")
        trn = d.get("turn")
        for fld, v in (("repeat", rep), ("turn", trn)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
                raise _Problem(fld, f"{fld} must be a whole number >= 0")
        vals = []
        for fld in ("cost_usd", "latency_ms"):
            v = d.get(fld)
            if v is None:
                vals.append(math.nan)
                continue
            num = _number(v)
            if num is None or math.isnan(num) or num < 0:
                raise _Problem(fld, f"{fld} must be a number >= 0, not {v!r}")
            vals.append(num)
        psd = d.get("passed")
        if not isinstance(psd, bool | None):
            self.bad_passed += 1
            if self.first_bad_passed is None:
                self.first_bad_passed = (lineno, psd)
            psd = None
        return (rid, -1 if rep is None else rep, -1 if trn is None else trn, code, sc,
                self.code_of(d.get("category")), vals[0], vals[1], _PASSED_OF[psd])


_SPLIT_MIN_BYTES = 64 << 20
"""A results file at least this large is read in two halves at once (this process and a forked one)."""


def _read_range(rd: _Reader, f: Any, line: int, off: int, end: int | None) -> int:
    """The rows of ``f`` from byte ``off`` (line ``line``) to ``end`` (a line boundary; None: the end) into
    ``rd``; the next line's number."""
    f.seek(off)
    while (end is None or off < end) and (lines := f.readlines(_CHUNK_BYTES if end is None
                                                              else max(1, min(_CHUNK_BYTES, end - off)))):
        if end is not None and off + sum(map(len, lines)) > end:  # readlines rounds up to whole lines
            keep, size = [], 0
            for ln in lines:
                if off + size >= end:
                    break
                keep.append(ln)
                size += len(ln)
            lines = keep
        rd.chunk(lines, line, off)
        line += len(lines)
        off += sum(map(len, lines))
    return line


def _half(p: Path, start: int, conn: Any) -> None:
    """The forked reader of the file's second half (from ``start``, a line boundary): its columns back to the
    parent, or None on any failure (the parent then reads that half itself)."""
    global _SPLIT_OFF
    _SPLIT_OFF = True  # no further split from here
    try:
        rd = _Reader(p, strict=False)
        with open(p, "rb") as f:
            first = 1
            while block := f.read(min(16 << 20, start - f.tell())):  # the line number the half starts on
                first += block.count(b"\n")
            _read_range(rd, f, first, start, None)
        c = rd.cols
        parts = {k: (np.concatenate(v) if v else None) for k, v in c.parts.items()}
        joined = "\n".join(c.ids)  # a million ids pickle 6x faster as one string than as a list
        blob, ids = (joined, []) if joined.count("\n") == len(c.ids) - 1 else (None, c.ids)  # unless one has a \n
        conn.send((blob, ids, parts, rd.categories, rd.names, rd.warnings, rd.bad_passed, rd.first_bad_passed,
                   rd.self_graded))
    except BaseException:  # noqa: BLE001 - the parent reads the half itself
        conn.send(None)
    finally:
        conn.close()


def _merge(rd: _Reader, got: Any) -> None:
    """The second half's columns after the first's: its category codes renumbered into ``rd``'s (a category
    first seen in the first half keeps that spelling)."""
    blob, ids, parts, cats, names, warnings, bad, first_bad, self_graded = got
    remap = np.array([rd.code_of(n) if k else rd.code_of(None) for k, n in zip(cats, names, strict=True)] or [0],
                     dtype=np.int32)
    ids = blob.split("\n") if blob is not None else ids
    if ids:
        cols = {k: v for k, v in parts.items() if v is not None}
        cols["category"] = remap[cols["category"]]
        rd.cols.add(ids, **cols)
    rd.warnings.extend(warnings)
    rd.bad_passed += bad
    rd.first_bad_passed = rd.first_bad_passed or first_bad
    rd.self_graded += self_graded


_SPLIT_OFF = False
"""Set in a forked reader: it reads its part alone."""


def _split_point(f: Any, size: int) -> int | None:
    """The first line boundary at or after the middle of the file, or None when there is none before the end."""
    f.seek(size // 2)
    f.readline()  # the rest of the line the middle falls in
    at = f.tell()
    return at if at < size else None


def load_table(path: str | Path, *, strict: bool = False, split: bool = True) -> ResultsTable:
    """Read ``path`` into columns. Bad lines are skipped with a warning (``strict``: ``InputError``);
    duplicate rows (same id, repeat and turn) keep the first; a file with no usable row is an ``InputError``.
    A large file is read in two halves at once where :func:`_parallel_ok` says a second process can run
    (``split=False``: never); the table, warnings and line numbers are the same either way."""
    p = Path(path)
    if not p.exists():
        raise InputError("file not found", file=str(p))
    if p.is_dir():
        raise InputError("is a directory, expected a results JSONL file", file=str(p))
    rd = _Reader(p, strict)
    line, off = 1, 0
    with open(p, "rb") as f:
        if f.read(3) == b"\xef\xbb\xbf":  # a UTF-8 byte-order mark (Windows editors) is not part of row 1
            off = 3
        size = os.fstat(f.fileno()).st_size
        mid = (_split_point(f, size) if split and not strict and not _SPLIT_OFF and size >= _SPLIT_MIN_BYTES
               and _parallel_ok() else None)
        if mid is None:
            _read_range(rd, f, line, off, None)
        else:
            ctx = multiprocessing.get_context("fork")
            for stream in (sys.stdout, sys.stderr):  # else the child would write the parent's buffered text again
                stream.flush()
            recv, send = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_half, args=(p, mid, send), daemon=True)
            proc.start()
            send.close()
            try:
                line = _read_range(rd, f, line, off, mid)
                try:
                    got = recv.recv()
                except EOFError:  # the child died (killed, out of memory): read its half here
                    got = None
                if got is None:
                    _read_range(rd, f, line, mid, None)
                else:
                    _merge(rd, got)
            finally:
                recv.close()
                if proc.is_alive():
                    proc.terminate()
                proc.join()
    adversarial = False
    man: RunManifest | None = None
    try:
        man = RunManifest.read(p)
        adversarial = bool(man and man.adversarial)
    except ValueError as exc:
        rd.warnings.append(f"ignored the run manifest beside {p}: {str(exc).splitlines()[0]}")
    return _table(rd, str(p), strict=strict, adversarial=adversarial, manifest=man)


def table_from_rows(rows: Sequence[ResultRow], *, name: str = "<memory>", adversarial: bool | None = None,
                    manifest: RunManifest | None = None) -> ResultsTable:
    """Rows held in memory (``referee.evaluate``'s) as a table, read by the same rules as a results file.

    ``adversarial`` defaults to the manifest's flag. Raises ``InputError`` when there is no row.
    """
    return table_from_lines([json_line(r).encode("utf-8") for r in rows], name=name, adversarial=adversarial,
                            manifest=manifest)


def table_from_lines(encoded: list[bytes], *, name: str = "<memory>", adversarial: bool | None = None,
                     manifest: RunManifest | None = None) -> ResultsTable:
    """:func:`table_from_rows` of rows already written as results-file lines (``json_line``, UTF-8): a recorder
    encodes them as they arrive, so the run's end does not wait for it."""
    rd = _Reader(Path(name), strict=False)
    if encoded:
        rd.chunk(encoded, 1, 0)
    adv = bool(manifest and manifest.adversarial) if adversarial is None else adversarial
    table = _table(rd, name, strict=False, adversarial=adv, manifest=manifest)
    table.memory = encoded
    return table


def _table(rd: _Reader, name: str, *, strict: bool, adversarial: bool,
           manifest: RunManifest | None) -> ResultsTable:
    """Columns of ``rd`` as a table; duplicate rows (same id, repeat and turn) keep the first."""
    p = name
    c = rd.cols
    ids = c.ids
    rep = c.column("repeat", np.int64)
    turn = c.column("turn", np.int64)
    lines_col = c.column("line", np.int64)
    keep: NDArray[np.bool_] | None = None
    keys: list[Any] = ids if bool((rep < 0).all() and (turn < 0).all()) else list(
        zip(ids, rep.tolist(), turn.tolist(), strict=True))
    if len(set(keys)) < len(keys):
        keep = np.ones(len(keys), dtype=bool)
        seen: dict[Any, int] = {}
        for i, k in enumerate(keys):
            first = seen.setdefault(k, int(lines_col[i]))
            if first != lines_col[i]:
                keep[i] = False
                where = "" if isinstance(k, str) else f" (repeat {k[1]}, turn {k[2]})".replace("-1", "none")
                rd.problem(int(lines_col[i]), "id", f"duplicate row for id '{ids[i]}'{where}, first on line "
                                                    f"{first}" + ("" if strict else "; the first is kept"))
    if not ids:
        w = rd.warnings
        skipped = f" ({len(w)} line(s) skipped; first: {w[0]})" if w else ""
        raise InputError(f"no result rows{skipped}", file=str(p))
    if rd.first_bad_passed is not None:
        ln, v = rd.first_bad_passed
        rd.warnings.append(f"{rd.bad_passed} row(s) have a 'passed' that is not true, false or null (first: "
                           f"{p}:{ln} passed={json.dumps(v)[:40]}); it is ignored for them")
    table = ResultsTable(
        path=str(p), ids=ids, repeat=rep, turn=turn, status=c.column("status", np.int8),
        score=c.column("score", np.float64), category=c.column("category", np.int32),
        categories=rd.categories, category_names=rd.names, cost=c.column("cost", np.float64),
        latency=c.column("latency", np.float64), line=lines_col, offset=c.column("offset", np.int64),
        passed=c.column("passed", np.int8), warnings=rd.warnings, adversarial=adversarial, manifest=manifest,
        self_graded_rows=rd.self_graded,
    )
    return table if keep is None else _subset(table, keep)


_PARALLEL_MIN_BYTES = 32 << 20
"""Below this many bytes in all, a second process costs more (fork, sending the table back) than it saves."""


def _parallel_ok() -> bool:
    """A forked reader is safe and useful: Linux (fork is cheap and the default there), no other thread that
    could hold a lock in the child, and a second CPU to run it on."""
    return (sys.platform == "linux" and threading.active_count() == 1
            and len(os.sched_getaffinity(0)) >= 2)


def _load_in_child(path: str | Path, strict: bool, conn: Any) -> None:
    global _SPLIT_OFF
    _SPLIT_OFF = True
    try:
        table = load_table(path, strict=strict)
        # A million ids pickle in 0.3 s as a list and in 0.05 s joined into one string (when no id holds
        # the separator).
        blob: str | None = "\n".join(table.ids)
        if blob is not None and blob.count("\n") == len(table.ids) - 1:
            table.ids = []
        else:
            blob = None
        conn.send((table, blob))
    except BaseException:  # noqa: BLE001 - the parent reads the file itself and raises the same error
        conn.send((None, None))
    finally:
        conn.close()


def load_tables(paths: Sequence[str | Path], *, strict: bool = False) -> list[ResultsTable]:
    """:func:`load_table` of each path: the same tables, warnings and errors (the first path's first). Reading
    is most of ``referee score``'s time, so large files (a results file and its baseline) are read at once,
    the first in this process and each other in a forked one, where :func:`_parallel_ok` says so."""
    try:
        size = sum(os.path.getsize(p) for p in paths)
    except OSError:  # a missing file: load_table says so
        size = 0
    if len(paths) < 2 or size < _PARALLEL_MIN_BYTES or not _parallel_ok():
        return [load_table(p, strict=strict) for p in paths]
    ctx = multiprocessing.get_context("fork")
    for stream in (sys.stdout, sys.stderr):  # else the child would write the parent's buffered text again
        stream.flush()
    jobs = []
    try:
        for p in paths[1:]:
            recv, send = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_load_in_child, args=(p, strict, send), daemon=True)
            proc.start()
            send.close()
            jobs.append((p, proc, recv))
        out = [load_table(paths[0], strict=strict, split=False)]  # both CPUs are busy already
        for p, _proc, recv in jobs:
            try:
                table, blob = recv.recv()
            except EOFError:  # the child died (killed, out of memory): read it here
                table = None
            if not isinstance(table, ResultsTable):
                table = load_table(p, strict=strict)
            elif blob is not None:
                table.ids = blob.split("\n")
            out.append(table)
        return out
    finally:
        for _, proc, recv in jobs:
            recv.close()
            if proc.is_alive():
                proc.terminate()
            proc.join()


def _subset(t: ResultsTable, keep: NDArray[np.bool_]) -> ResultsTable:
    idx = np.nonzero(keep)[0]
    return ResultsTable(
        path=t.path, ids=[t.ids[i] for i in idx.tolist()], repeat=t.repeat[idx], turn=t.turn[idx],
        status=t.status[idx], score=t.score[idx], category=t.category[idx], categories=t.categories,
        category_names=t.category_names, cost=t.cost[idx], latency=t.latency[idx], line=t.line[idx],
        offset=t.offset[idx], passed=t.passed[idx] if len(t.passed) == len(t.ids) else t.passed,
        warnings=t.warnings, adversarial=t.adversarial, manifest=t.manifest, memory=t.memory,
        self_graded_rows=t.self_graded_rows,
    )
