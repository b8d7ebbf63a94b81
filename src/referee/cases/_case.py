"""Cases: what is evaluated. Loaded from JSONL (one object per line), a YAML/JSON list, CSV or Parquet, or
built in memory from a list of dicts or a pandas/polars DataFrame (:func:`cases_from`).

Known fields follow the seed's case shapes: ``id``, ``input``, ``output``, ``final_output``, ``reference``,
``turns`` (``[{role, content}]``), ``trajectory`` (``[{step, tool, args, ...}]``), ``contexts`` (retrieved
chunks, see :mod:`._contexts`), ``category``, ``metadata``. Any other key is kept and can be used by a template
placeholder. In tables (CSV, Parquet, DataFrames) each column is a field; the nested fields (:data:`NESTED_FIELDS`)
may be JSON strings.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._util import _data
from .._util._image import sniff
from ..errors import InputError, MissingExtraError, UserError
from ._contexts import Chunk, check_contexts, chunks_of
from ._media import MediaStore, media_store, media_store_of, resolve_media

_INF = float("inf")
NESTED_FIELDS = ("turns", "trajectory", "metadata", "expect", "messages", "contexts")
"""Fields holding lists or objects: in a table (CSV, Parquet, DataFrame) a string there is parsed as JSON."""


@dataclass(frozen=True)
class Case:
    """One case. ``data`` holds every key of the source object (after id normalisation)."""

    id: str
    data: dict[str, Any]
    source: str = ""
    line: int | None = None

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    @property
    def input(self) -> Any:
        return self.data.get("input")

    @property
    def output(self) -> Any:
        """The output under evaluation, falling back to ``final_output`` as the seed does."""
        out = self.data.get("output")
        return self.data.get("final_output") if out is None else out

    @property
    def reference(self) -> Any:
        return self.data.get("reference")

    @property
    def contexts(self) -> list[Chunk]:
        """The retrieved chunks (``contexts``), in retrieval order."""
        return chunks_of(self.data.get("contexts"))

    @property
    def category(self) -> str | None:
        c = self.data.get("category")
        return None if c is None else str(c)

    @property
    def turns(self) -> list[dict[str, Any]] | None:
        t = self.data.get("turns")
        return t if isinstance(t, list) else None

    @property
    def trajectory(self) -> list[dict[str, Any]] | None:
        t = self.data.get("trajectory")
        return t if isinstance(t, list) else None

    @property
    def metadata(self) -> dict[str, Any]:
        m = self.data.get("metadata")
        return m if isinstance(m, dict) else {}

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}" if self.line else self.source


@dataclass
class CaseSet:
    """Cases loaded from one file, in file order (duplicates kept: preflight decides what to do)."""

    path: str
    cases: list[Case] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """Lines left out when loaded with ``skip_bad_lines`` (each ``file:line: why``)."""
    warnings: list[str] = field(default_factory=list)
    """What was read in a way worth saying (``file:line: what was done``): a record giving one field twice."""

    @property
    def ids(self) -> list[str]:
        return [c.id for c in self.cases]

    def __len__(self) -> int:
        return len(self.cases)

    def __iter__(self) -> Iterator[Case]:
        return iter(self.cases)


def _check_case(obj: Any, path: str, line: int | None, index: int) -> Case:
    if not isinstance(obj, dict):
        raise InputError(f"expected an object (a case), got {type(obj).__name__}", file=path, line=line)
    if "id" not in obj or obj["id"] is None or obj["id"] == "":
        raise InputError("missing; every case needs a unique id", file=path, line=line, field="id")
    cid = obj["id"]
    if isinstance(cid, bool) or not isinstance(cid, str | int):
        raise InputError(f"must be a string or integer, got {type(cid).__name__}", file=path, line=line,
                         field="id")
    data = dict(obj)
    data["id"] = str(cid)
    _check_types(data, path, line)
    data = resolve_media(data, source=path, line=line if line is not None else index + 1, case_id=str(cid))
    return Case(id=str(cid), data=data, source=path, line=line if line is not None else index + 1)


def _check_types(data: dict[str, Any], path: str, line: int | None) -> None:
    if "category" in data and data["category"] is not None and not isinstance(data["category"], str):
        raise InputError("must be a string", file=path, line=line, field="category")
    if "metadata" in data and data["metadata"] is not None and not isinstance(data["metadata"], dict):
        raise InputError("must be an object", file=path, line=line, field="metadata")
    turns = data.get("turns")
    if turns is not None:
        if not isinstance(turns, list):
            raise InputError("must be a list of {role, content}", file=path, line=line, field="turns")
        for i, t in enumerate(turns):
            if not isinstance(t, dict) or "role" not in t or "content" not in t:
                raise InputError("each turn needs 'role' and 'content'", file=path, line=line,
                                 field=f"turns[{i}]")
    check_contexts(data.get("contexts"), path, line)
    traj = data.get("trajectory")
    if traj is not None:
        if not isinstance(traj, list):
            raise InputError("must be a list of steps", file=path, line=line, field="trajectory")
        for i, s in enumerate(traj):
            if not isinstance(s, dict):
                raise InputError("each step must be an object", file=path, line=line,
                                 field=f"trajectory[{i}]")


def load_cases(path: str | Path, *, skip_bad_lines: bool = False) -> CaseSet:
    """Load cases from ``.jsonl`` (or ``.ndjson``), ``.yaml``/``.yml``, ``.json`` (a list), ``.csv`` or
    ``.parquet`` (the extra ``parquet``).

    Raises :class:`InputError` naming the file, line and field of the first problem. ``skip_bad_lines``
    (``--skip-invalid``): a JSONL line that cannot be decoded or is not a valid case is left out instead, its
    problem in :attr:`CaseSet.problems`.
    """
    # One image store for every case loaded here: an image named by many parts is held once.
    with media_store():
        return _load_cases_unshared(path, skip_bad_lines=skip_bad_lines)


def _load_cases_unshared(path: str | Path, *, skip_bad_lines: bool = False) -> CaseSet:
    p = Path(path)
    sp = str(p)
    if not p.exists():
        raise InputError("file not found", file=sp)
    if p.is_dir():
        raise InputError("is a directory, expected a cases file (.jsonl, .yaml or .json)", file=sp)
    raw = p.read_bytes()
    suffix = p.suffix.lower()
    if suffix in (".yaml", ".yml"):
        cases = _load_yaml(raw, sp)
    elif suffix in (".csv", ".tsv"):
        cases = _load_csv(raw, sp, delimiter="\t" if suffix == ".tsv" else ",")
    elif suffix in (".parquet", ".pq"):
        cases = _load_parquet(p, sp)
    elif suffix == ".json":
        cases = _load_json_list(raw, sp)
    elif skip_bad_lines:
        problems: list[str] = []
        cases = _load_jsonl(raw, sp, problems)
        if not cases and not problems:
            raise InputError("no cases in file (it is empty)", file=sp)
        return CaseSet(path=sp, cases=cases, problems=problems)
    else:
        cases = _load_jsonl(raw, sp)
    if not cases:
        raise InputError("no cases in file (it is empty)", file=sp)
    return CaseSet(path=sp, cases=cases)


def _decode(raw: bytes, path: str) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(f"not valid UTF-8 (byte 0x{raw[exc.start]:02x}); re-save the file as UTF-8",
                         file=path, line=line) from exc
    return text[1:] if text.startswith("\ufeff") else text  # a BOM (Windows editors) is not content


def _load_jsonl(raw: bytes, path: str, problems: list[str] | None = None) -> list[Case]:
    """The cases of a JSONL file. With ``problems``, a bad line is recorded there and left out, so one
    undecodable line does not refuse the whole file; without, the first one raises."""
    if problems is None:
        lines = _data.jsonl_lines(_decode(raw, path))
    else:
        lines = _decoded_lines(raw, path, problems)
    out: list[Case] = []
    for lineno, line in lines:
        try:
            try:
                obj = _data.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"malformed JSON ({exc.msg} at column {exc.colno})", file=path,
                                 line=lineno) from exc
            except _data.UnsafeData as exc:
                raise InputError(f"refused JSON: {exc}", file=path, line=lineno) from None
            out.append(_check_case(obj, path, lineno, len(out)))
        except InputError as exc:
            if problems is None:
                raise
            problems.append(f"{exc}; line skipped")
    return out


def _decoded_lines(raw: bytes, path: str, problems: list[str]) -> Iterator[tuple[int, str]]:
    """The non-blank lines of ``raw`` decoded one by one: a line that is not UTF-8 goes to ``problems``."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]  # a BOM (Windows editors) is not content
    for n, chunk in enumerate(raw.split(b"\n"), 1):
        try:
            line = chunk.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(f"{path}:{n}: not valid UTF-8 (byte 0x{chunk[exc.start]:02x}); line skipped")
            continue
        if line.strip():
            yield n, line


def _load_json_list(raw: bytes, path: str) -> list[Case]:
    text = _decode(raw, path)
    if not text.strip():
        return []
    try:
        data = _data.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON ({exc.msg})", file=path, line=exc.lineno) from exc
    except _data.UnsafeData as exc:
        raise InputError(f"refused JSON: {exc}", file=path) from None
    if isinstance(data, dict) and isinstance(data.get("cases"), list):
        data = data["cases"]
    if not isinstance(data, list):
        raise InputError("expected a JSON list of cases", file=path)
    return [_check_case(o, path, None, i) for i, o in enumerate(data)]


def _load_yaml(raw: bytes, path: str) -> list[Case]:
    import yaml  # imported here: JSONL runs (the common case) do not pay for it at start-up

    from .._util._yaml import parse_nodes

    text = _decode(raw, path)
    node, data = parse_nodes(text, path)
    if data is None:
        return []
    items_nodes: Sequence[Any] = []
    if isinstance(data, dict) and isinstance(data.get("cases"), list):
        data = data["cases"]
        if node is not None and isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if k.value == "cases":
                    items_nodes = v.value
    elif isinstance(node, yaml.SequenceNode):
        items_nodes = node.value
    if not isinstance(data, list):
        raise InputError("expected a YAML list of cases (or a mapping with a 'cases' list)", file=path)
    out = []
    for i, obj in enumerate(data):
        line = items_nodes[i].start_mark.line + 1 if i < len(items_nodes) else None
        out.append(_check_case(obj, path, line, i))
    return out


# Fields whose empty string means "not given" even in a DataFrame: the id (numbered by position), the category
# and the nested fields (JSON strings).
_MISSING_WHEN_EMPTY = frozenset({"id", "category", *NESTED_FIELDS})


def _table_record(record: dict[str, Any], path: str, line: int | None, *,
                  keep_empty: bool = False) -> dict[str, Any]:
    """A table row as a case object: missing cells dropped, nested fields given as JSON strings decoded.
    ``keep_empty``: an empty string is a value, not a missing cell (a DataFrame tells the two apart, as
    None/NaN and ""; a CSV file does not)."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        key = str(key)
        value = _plain(value)
        if value is None or (value == "" and not (keep_empty and key not in _MISSING_WHEN_EMPTY)):
            continue
        if isinstance(value, float) and value in (_INF, -_INF):
            raise InputError(f"{value} is not a finite number", file=path, line=line, field=key)
        if key in NESTED_FIELDS and isinstance(value, str):
            try:
                value = _data.loads(value)
            except json.JSONDecodeError as exc:
                raise InputError(f"expected JSON ({exc.msg} at column {exc.colno})", file=path, line=line,
                                 field=key) from exc
            except _data.UnsafeData as exc:
                raise InputError(f"refused JSON: {exc}", file=path, line=line, field=key) from None
        out[key] = value
    return out


def _plain(value: Any) -> Any:
    """numpy/pandas scalars and arrays as plain Python values; NaN/NaT (a missing cell) as None; the values JSON
    has no type for as JSON values (:func:`_json_safe`), so templates and commands can use every column."""
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return None if value != value else value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if type(value).__name__ in ("NAType", "NaTType"):
        return None
    safe = _json_safe(value)
    if safe is not value:
        return safe
    tolist = getattr(value, "tolist", None)  # numpy scalars and arrays (pyarrow lists arrive as arrays)
    if callable(tolist):
        return _plain(tolist())
    return value


def _json_safe(value: Any) -> Any:
    """Timestamps, dates and times as ISO 8601 text; durations as seconds; decimals as their exact text (a
    non-finite one as missing); bytes as UTF-8 text, else ``base64:`` and the base64 text. Anything else is
    returned as it is."""
    import datetime
    import decimal

    if isinstance(value, datetime.date | datetime.time):  # datetime and pandas' Timestamp are dates too
        return value.isoformat()
    if isinstance(value, datetime.timedelta):  # pandas' Timedelta too
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return str(value) if value.is_finite() else None
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        if sniff(raw) is not None:  # an image column: checked and normalised with the case
            return raw
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            import base64

            return "base64:" + base64.b64encode(raw).decode("ascii")
    name = type(value).__name__
    if name in ("datetime64", "timedelta64") and type(value).__module__ == "numpy":
        if value != value:  # NaT
            return None
        if name == "timedelta64":
            return float(value / value.__class__(1, "s"))
        return str(value)
    return value


def _load_csv(raw: bytes, path: str, *, delimiter: str = ",") -> list[Case]:
    import csv
    import io

    text = _decode(raw, path)
    # The module's default (128 KiB) would refuse a long answer as "malformed"; the data limit applies instead.
    if csv.field_size_limit() != _data.MAX_CELL_BYTES:
        csv.field_size_limit(_data.MAX_CELL_BYTES)
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
    line = 1  # the header
    try:
        fieldnames = reader.fieldnames
    except csv.Error as exc:
        raise InputError(_csv_problem(exc), file=path, line=1) from exc
    if fieldnames is None:
        return []
    line = reader.line_num
    dupes = sorted({f for f in fieldnames if fieldnames.count(f) > 1})
    if dupes:
        raise InputError(f"duplicate column(s) {', '.join(dupes)}", file=path, line=1)
    out: list[Case] = []
    try:
        for row in reader:
            line = reader.line_num
            if None in row:
                raise InputError(f"more cells than the {len(fieldnames)} columns of the header",
                                 file=path, line=line)
            if not any(v for v in row.values()):
                continue
            out.append(_check_case(_table_record(row, path, line), path, line, len(out)))
    except csv.Error as exc:
        # The record that failed starts on the line after the last one read whole.
        raise InputError(_csv_problem(exc), file=path, line=line + 1) from exc
    return out


def _csv_problem(exc: Exception) -> str:
    if "field larger than field limit" in str(exc):
        return f"a cell is larger than {_data.MAX_CELL_BYTES:,} bytes (the limit of one table cell)"
    return f"malformed CSV ({exc})"


def read_parquet(p: Path, path: str, feature: str) -> list[dict[str, Any]]:
    """The records of a Parquet file (the ``parquet`` extra; ``feature`` names what needs it), a damaged file an
    :class:`InputError` naming it."""
    try:
        import pyarrow.parquet  # noqa: F401 - the extra is installed
    except ImportError:
        raise MissingExtraError("parquet", "pyarrow", feature) from None
    try:
        return _parquet_records(p, path)
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for a damaged file
        raise InputError(f"not a readable Parquet file ({type(exc).__name__}: {exc})", file=path) from exc


def _load_parquet(p: Path, path: str) -> list[Case]:
    records = read_parquet(p, path, "reading cases from Parquet")
    return [_check_case(_table_record(r, path, i + 1), path, i + 1, i) for i, r in enumerate(records)]


def _parquet_records(p: Path, path: str) -> list[dict[str, Any]]:
    """The rows of a Parquet file, with the decoded sizes bounded before Python objects are built: a few KB of
    compressed (or dictionary-encoded) Parquet can expand to gigabytes. Rows are numbered from 1."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(p).metadata
    first = 1
    total = 0
    for g in range(meta.num_row_groups):
        rg = meta.row_group(g)
        rows = f"rows {first}-{first + rg.num_rows - 1}"
        for c in range(rg.num_columns):
            col = rg.column(c)
            size = col.total_uncompressed_size
            total += size
            # A column's bytes in a row group over rows x the cell limit: some cell is over it (checked before
            # anything is decompressed).
            if size > _data.MAX_CELL_BYTES * max(rg.num_rows, 1) + 2**20:
                raise InputError(f"{rows} hold a cell larger than {_data.MAX_CELL_BYTES:,} bytes (the limit of "
                                 "one table cell)", file=path, field=col.path_in_schema)
        if total > _data.MAX_TABLE_BYTES:
            raise InputError(f"decodes to more than {_data.MAX_TABLE_BYTES:,} bytes (by {rows}); split it, or "
                             "use JSONL", file=path)
        first += rg.num_rows
    schema = pq.read_schema(p)
    text_cols = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
                 or pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type)]
    # Text columns read as dictionaries: a value repeated on many rows is decoded once, and measured per row.
    f = pq.ParquetFile(p, read_dictionary=text_cols)
    records: list[dict[str, Any]] = []
    decoded = 0
    for batch in f.iter_batches(batch_size=1024):
        for name, arr in zip(batch.schema.names, batch.columns, strict=True):
            if isinstance(arr, pa.DictionaryArray):
                lengths = pc.binary_length(arr.dictionary).take(arr.indices)
            elif name in text_cols:
                lengths = pc.binary_length(arr)
            else:
                decoded += arr.nbytes
                continue
            biggest = pc.max(lengths).as_py() or 0
            if biggest > _data.MAX_CELL_BYTES:
                row = len(records) + pc.index(lengths, biggest).as_py() + 1
                raise InputError(f"a cell larger than {_data.MAX_CELL_BYTES:,} bytes ({biggest:,}; the limit of one "
                                 "table cell)", file=path, line=row, field=name)
            decoded += pc.sum(lengths).as_py() or 0
        if decoded > _data.MAX_TABLE_BYTES:
            raise InputError(f"decodes to more than {_data.MAX_TABLE_BYTES:,} bytes (by row "
                             f"{len(records) + batch.num_rows}); split it, or use JSONL", file=path)
        records.extend(batch.to_pylist())
    return records


CasesLike = Any
"""What :func:`cases_from` accepts (see there)."""


def cases_from(source: CasesLike, *, name: str = "<cases>", skip_bad_lines: bool = False) -> CaseSet:
    """Cases from what a Python user has at hand.

    * a path (``str`` or ``Path``) to a cases file (see :func:`load_cases`);
    * a list of dicts (``id`` optional: missing ids are the 1-based position), of :class:`Case` objects, or of
      strings (each an ``output``);
    * a pandas or polars DataFrame (one case per row; columns are fields; nested fields may be JSON strings).

    Errors name the item (``<cases>:3``) and the field, as for files. ``skip_bad_lines``: as for
    :func:`load_cases`.
    """
    if isinstance(source, CaseSet):
        return source
    if isinstance(source, str | Path):
        return load_cases(source, skip_bad_lines=skip_bad_lines)
    module = type(source).__module__.split(".")[0]
    if module == "pandas" and hasattr(source, "to_dict"):
        records = source.to_dict(orient="records")
        return _from_records([_table_record(r, name, i + 1, keep_empty=True) for i, r in enumerate(records)], name)
    if module == "polars" and hasattr(source, "to_dicts"):
        rows = source.to_dicts()
        return _from_records([_table_record(r, name, i + 1, keep_empty=True) for i, r in enumerate(rows)], name)
    if isinstance(source, dict):
        raise UserError("cases: give a list of dicts (one per case), not a single dict")
    try:
        items = list(source)
    except TypeError:
        raise UserError(f"cases: expected a list of dicts, a file path or a DataFrame, got "
                        f"{type(source).__name__}") from None
    return _from_records(items, name)


class CaseStream:
    """Cases taken one at a time from an iterator (of dicts or :class:`Case` objects), each checked as it is taken
    (the checks and messages of :func:`cases_from`, duplicate ids included), so that producing the next case
    overlaps with evaluating the ones already taken: the runner pulls a case when it has room for one. ``cases``
    holds those taken so far, in order. A stream, unlike a list, may be empty. ``on_rows``: handed each batch of
    result rows as the run completes them (in the event loop's thread; it must be quick)."""

    def __init__(self, source: Iterable[Any], *, name: str = "<cases>",
                 on_rows: Callable[[list[Any]], None] | None = None) -> None:
        self.path = name
        self.on_rows = on_rows
        self.cases: list[Case] = []
        self._source = iter(source)
        self._seen: dict[str, int] = {}
        self._media = MediaStore()  # one image store for the stream, as for a list checked at once
        self._digest = hashlib.sha256()

    def __iter__(self) -> Iterator[Case]:
        return self

    def __next__(self) -> Case:
        obj = next(self._source)
        i = len(self.cases)
        with media_store_of(self._media):
            case = _record_case(obj, self.path, i)
        first = self._seen.setdefault(case.id, i + 1)
        if first != i + 1:
            raise _duplicate(case.id, first, self.path, i)
        self.cases.append(case)
        self._digest.update(json.dumps(case.data, ensure_ascii=False, default=str).encode() + b"\n")
        return case

    @property
    def sha256(self) -> str:
        """The SHA-256 of the cases taken so far (each case's JSON, a line each): the stream's identity."""
        return self._digest.hexdigest()


def _from_records(items: Sequence[Any], name: str) -> CaseSet:
    # One image store for every case loaded here: an image named by many parts is held once.
    with media_store():
        return _from_records_unshared(items, name)


def _record_case(obj: Any, name: str, i: int) -> Case:
    """The ``i``-th (0-based) item a Python user gave as a case: a :class:`Case`, a dict (a missing id is its
    1-based position) or a string (its output), checked."""
    if isinstance(obj, Case):
        return obj
    if isinstance(obj, str):
        obj = {"output": obj}
    if isinstance(obj, dict) and obj.get("id") in (None, ""):
        obj = {"id": str(i + 1), **{k: v for k, v in obj.items() if k != "id"}}
    return _check_case(obj, name, i + 1, i)


def _duplicate(case_id: str, first: int, name: str, i: int) -> InputError:
    return InputError(f"duplicate case id '{case_id}' (first at item {first}); ids must be unique", file=name,
                      line=i + 1, field="id")


def _from_records_unshared(items: Sequence[Any], name: str) -> CaseSet:
    cases = [_record_case(obj, name, i) for i, obj in enumerate(items)]
    if not cases:
        raise InputError("no cases", file=name)
    seen: dict[str, int] = {}
    for i, c in enumerate(cases):
        first = seen.setdefault(c.id, i + 1)
        if first != i + 1:
            raise _duplicate(c.id, first, name, i)
    return CaseSet(path=name, cases=cases)
