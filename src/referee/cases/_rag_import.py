"""Cases from other tools' RAG evaluation files: Ragas evaluation datasets and DeepEval test cases.

* **Ragas** (``EvaluationDataset`` samples, ``to_jsonl`` / ``to_csv`` / a Hugging Face dataset's Parquet):
  ``user_input`` -> ``input``, ``response`` -> ``output``, ``reference`` -> ``reference``, ``retrieved_contexts`` ->
  ``contexts``; the Ragas 0.1 names ``question`` / ``answer`` / ``ground_truth`` / ``contexts`` are read too.
* **DeepEval** (``LLMTestCase`` / goldens saved as JSON, JSONL or CSV; snake_case or camelCase keys): ``input`` ->
  ``input``, ``actual_output`` -> ``output``, ``expected_output`` -> ``reference``, ``retrieval_context`` ->
  ``contexts``.

Every other key is kept on the case. A record's ``id`` is kept, else its 1-based position is its id. A bad record
raises :class:`InputError` naming the file, the line (the record's number in a JSON list) and the tool's own field
(``retrieved_contexts[2]``). In a CSV file a list cell may be JSON or the Python list text pandas writes
(``['a', 'b']``, which Ragas's ``to_csv`` produces).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .._util import _data
from ..errors import InputError, UserError
from ._case import CaseSet, _check_case, _decode, _plain, read_parquet
from ._media import media_store

RAG_FORMATS = ("ragas", "deepeval")

_RAGAS = {"user_input": "input", "response": "output", "reference": "reference", "retrieved_contexts": "contexts"}
_RAGAS_OLD = {"question": "input", "answer": "output", "ground_truth": "reference", "contexts": "contexts"}
_DEEPEVAL = {"input": "input", "actual_output": "output", "expected_output": "reference",
             "retrieval_context": "contexts", "actualOutput": "output", "expectedOutput": "reference",
             "retrievalContext": "contexts"}
_LIST_FIELDS = frozenset({"retrieved_contexts", "reference_contexts", "contexts", "retrieval_context",
                          "retrievalContext", "context", "multi_responses", "ground_truths"})
_WRAPPERS = ("samples", "test_cases", "testCases", "goldens", "cases", "data")
MAX_LITERAL_CHARS = 8 * 2**20
"""A CSV list cell in Python's list syntax longer than this is refused (``ast.literal_eval`` is not streamed)."""


def _mapping(fmt: str, record: dict[str, Any]) -> dict[str, str]:
    if fmt == "deepeval":
        return _DEEPEVAL
    if "user_input" in record or "retrieved_contexts" in record or "response" in record:
        return _RAGAS
    return _RAGAS_OLD if ("question" in record or "answer" in record) else _RAGAS


def _convert(fmt: str, record: Any, path: str, line: int, n: int) -> dict[str, Any]:
    if not isinstance(record, dict):
        raise InputError(f"record {n}: expected an object, got {type(record).__name__}", file=path, line=line)
    mapping = _mapping(fmt, record)
    required = "user_input" if mapping is _RAGAS else ("question" if mapping is _RAGAS_OLD else "input")
    if not isinstance(record.get(required), str):
        raise InputError(f"record {n}: missing or not a string (the question)", file=path, line=line, field=required)
    out: dict[str, Any] = {}
    for key, value in record.items():
        if key in mapping:
            target = mapping[key]
            if target == "contexts":
                if value is None:
                    continue
                if not isinstance(value, list):
                    raise InputError(f"record {n}: must be a list of strings, got {type(value).__name__}", file=path,
                                     line=line, field=key)
                for i, item in enumerate(value):
                    if not isinstance(item, str):
                        raise InputError(f"record {n}: must be a string, got {type(item).__name__}", file=path,
                                         line=line, field=f"{key}[{i}]")
            elif value is not None and not isinstance(value, str):
                raise InputError(f"record {n}: must be a string, got {type(value).__name__}", file=path, line=line,
                                 field=key)
            if value is not None:
                out[target] = value
        elif key not in out:
            out[key] = value
    if out.get("id") in (None, ""):
        out["id"] = str(n)
    return out


def _list_cell(value: Any, path: str, line: int, key: str) -> Any:
    if not isinstance(value, str) or key not in _LIST_FIELDS:
        return value
    text = value.strip()
    if not text.startswith("["):
        return value
    try:
        return _data.loads(text)
    except (json.JSONDecodeError, _data.UnsafeData):
        pass
    if len(text) > MAX_LITERAL_CHARS:
        raise InputError(f"a list cell of {len(text):,} characters in Python syntax; write the file as JSONL",
                         file=path, line=line, field=key)
    try:
        parsed = ast.literal_eval(text)  # literals only: no code runs
    except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
        raise InputError(f"not a list (neither JSON nor a Python list: {type(exc).__name__})", file=path, line=line,
                         field=key) from None
    return parsed


def _records(p: Path) -> Iterator[tuple[int, Any]]:
    """``(line, record)`` for each record of a JSONL / JSON / CSV / Parquet file (JSON: the record's number)."""
    sp = str(p)
    suffix = p.suffix.lower()
    if suffix in (".parquet", ".pq"):
        for i, r in enumerate(read_parquet(p, sp, "reading Parquet files")):
            yield i + 1, {str(k): _plain(v) for k, v in r.items() if _plain(v) is not None}
        return
    text = _decode(p.read_bytes(), sp)
    if suffix in (".csv", ".tsv"):
        import csv
        import io

        if csv.field_size_limit() != _data.MAX_CELL_BYTES:
            csv.field_size_limit(_data.MAX_CELL_BYTES)
        reader = csv.DictReader(io.StringIO(text, newline=""), delimiter="\t" if suffix == ".tsv" else ",")
        try:
            for row in reader:
                line = reader.line_num
                if None in row:
                    raise InputError("more cells than the header's columns", file=sp, line=line)
                yield line, {k: _list_cell(v, sp, line, k) for k, v in row.items() if v not in (None, "")}
        except csv.Error as exc:
            raise InputError(f"malformed CSV ({exc})", file=sp, line=reader.line_num + 1) from exc
        return
    if suffix == ".json":
        try:
            data = _data.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"malformed JSON ({exc.msg})", file=sp, line=exc.lineno) from exc
        except _data.UnsafeData as exc:
            raise InputError(f"refused JSON: {exc}", file=sp) from None
        if isinstance(data, dict):
            data = next((data[k] for k in _WRAPPERS if isinstance(data.get(k), list)), data)
        if not isinstance(data, list):
            raise InputError(f"expected a JSON list of records (or an object with one of {', '.join(_WRAPPERS)})",
                             file=sp)
        yield from ((i + 1, r) for i, r in enumerate(data))
        return
    for lineno, raw in _data.jsonl_lines(text):
        try:
            yield lineno, _data.loads(raw)
        except json.JSONDecodeError as exc:
            raise InputError(f"malformed JSON ({exc.msg} at column {exc.colno})", file=sp, line=lineno) from exc
        except _data.UnsafeData as exc:
            raise InputError(f"refused JSON: {exc}", file=sp, line=lineno) from None


def import_rag_cases(source: Any, fmt: str, *, name: str = "<records>") -> CaseSet:
    """Cases from a Ragas (``fmt="ragas"``) or DeepEval (``"deepeval"``) file (JSONL, JSON, CSV, Parquet), a list of
    their records, or a pandas DataFrame of them. Raises :class:`InputError` naming file, line and field."""
    # One image store for every case loaded here: an image named by many parts is held once.
    with media_store():
        return _import_rag_cases_unshared(source, fmt, name=name)


def _import_rag_cases_unshared(source: Any, fmt: str, *, name: str = "<records>") -> CaseSet:
    if fmt not in RAG_FORMATS:
        raise UserError(f"format '{fmt}': one of {', '.join(RAG_FORMATS)}")
    if isinstance(source, str | Path):
        p = Path(source)
        if not p.is_file():
            raise InputError("file not found", file=str(p))
        path, items = str(p), list(_records(p))
    else:
        path = name
        if type(source).__module__.split(".")[0] == "pandas" and hasattr(source, "to_dict"):
            source = [{str(k): _plain(v) for k, v in r.items() if _plain(v) is not None}
                      for r in source.to_dict(orient="records")]
        items = [(i + 1, r) for i, r in enumerate(source)]
    cases = []
    seen: dict[str, int] = {}
    for n, (line, rec) in enumerate(items, 1):
        case = _check_case(_convert(fmt, rec, path, line, n), path, line, n - 1)
        if case.id in seen:
            raise InputError(f"duplicate case id '{case.id}' (first at line {seen[case.id]})", file=path, line=line,
                             field="id")
        seen[case.id] = line
        cases.append(case)
    if not cases:
        raise InputError("no records", file=path)
    return CaseSet(path=path, cases=cases)


def from_ragas(source: Any) -> CaseSet:
    """Cases from a Ragas evaluation dataset (``user_input``, ``retrieved_contexts``, ``response``, ``reference``):
    a file (JSONL, JSON, CSV, Parquet), a list of sample dicts or a DataFrame (``EvaluationDataset.to_pandas()``)."""
    return import_rag_cases(source, "ragas")


def from_deepeval(source: Any) -> CaseSet:
    """Cases from DeepEval test cases (``input``, ``actual_output``, ``retrieval_context``, ``expected_output``):
    a file (JSON, JSONL, CSV, Parquet), a list of test-case dicts or a DataFrame."""
    return import_rag_cases(source, "deepeval")


def write_cases(cases: CaseSet, out: str | Path) -> int:
    """Write ``cases`` as a JSONL cases file; returns how many."""
    with open(out, "w", encoding="utf-8") as f:
        for c in cases:
            f.write(json.dumps(c.data, ensure_ascii=False) + "\n")
    return len(cases)
