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

import codecs
import json
import re
import warnings
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
_SAME_FIELD = {"ragas": (("user_input", "question"), ("response", "answer"), ("reference", "ground_truth"),
                         ("retrieved_contexts", "contexts")),
               "deepeval": (("actual_output", "actualOutput"), ("expected_output", "expectedOutput"),
                            ("retrieval_context", "retrievalContext"))}
"""(current name, older or camelCase name) of one field: a record giving both has the current one used."""
_LIST_FIELDS = frozenset({"retrieved_contexts", "reference_contexts", "contexts", "retrieval_context",
                          "retrievalContext", "context", "multi_responses", "ground_truths"})
_WRAPPERS = ("samples", "test_cases", "testCases", "goldens", "cases", "data")
_BODY = {q: re.compile(rf"(?:[^{q}\\\n]++|\\.)*+{q}", re.S) for q in "'\""}
"""A string literal's body and its closing quote: runs of plain characters or escape pairs, possessive (no
backtracking, no memory per character), so a cell of 4 million escapes is matched in C in one pass."""
_SPACE = re.compile(r"[ \t\r\n]*")
_SURROGATE = re.compile("[\ud800-\udfff]")
MAX_LIST_ITEMS = 100_000
"""Strings one list cell may hold: each is a Python object (~50 bytes however short), so a cell of tiny strings
would take many times its size; real lists of contexts hold tens or hundreds."""


def _skip(text: str, pos: int) -> int:
    m = _SPACE.match(text, pos)
    return m.end() if m is not None else pos


def _mapping(fmt: str, record: dict[str, Any]) -> dict[str, str]:
    if fmt == "deepeval":
        return _DEEPEVAL
    if "user_input" in record or "retrieved_contexts" in record or "response" in record:
        return _RAGAS
    return _RAGAS_OLD if ("question" in record or "answer" in record) else _RAGAS


def _convert(fmt: str, record: Any, path: str, line: int, n: int, warnings: list[str] | None = None
             ) -> dict[str, Any]:
    if not isinstance(record, dict):
        raise InputError(f"record {n}: expected an object, got {type(record).__name__}", file=path, line=line)
    shadowed = set()
    for new, old in _SAME_FIELD[fmt]:
        if record.get(new) is not None and record.get(old) is not None:
            shadowed.add(old)  # which one was kept depended on the keys' order: the current name now, said
            if warnings is not None:
                warnings.append(f"{path}:{line}: record {n} gives both '{new}' and '{old}' (another name for the "
                                f"same field); '{new}' is used and '{old}' left out")
    record = {k: v for k, v in record.items() if k not in shadowed} if shadowed else record
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
    try:
        return python_str_list(text)
    except ValueError as exc:
        raise InputError(f"not a list of strings (neither JSON nor a Python list of strings: {exc})", file=path,
                         line=line, field=key) from None


def python_str_list(text: str) -> list[str]:
    """A list of strings in the syntax Python's ``repr`` writes (``['a', "b's"]``, what pandas' ``to_csv``
    writes for a list cell): quoted strings with Python's escapes, commas, spaces. Nothing else is accepted
    (no numbers, nesting, prefixes or triple quotes). A scan in one pass, each character looked at a bounded
    number of times, and no more memory than the strings it returns and one literal's text at a time
    (``ast.literal_eval`` built a syntax tree: an 8 MB cell took ~4 GB and 40 s)."""
    n = len(text)
    pos = _skip(text, 0)
    if pos >= n or text[pos] != "[":
        raise ValueError("it does not start with '['")
    pos = _skip(text, pos + 1)
    out: list[str] = []
    while pos < n and text[pos] != "]":
        quote = text[pos]
        if quote not in _BODY:
            raise ValueError(f"expected a quoted string at character {pos + 1}, found {text[pos]!r}")
        start = pos + 1
        m = _BODY[quote].match(text, start)
        if m is None:
            raise ValueError(f"the string at character {start} is not closed on its line")
        body = text[start:m.end() - 1]
        if len(out) >= MAX_LIST_ITEMS:
            raise ValueError(f"more than {MAX_LIST_ITEMS:,} strings in one cell")
        out.append(_unescape(body) if "\\" in body else body)
        pos = _skip(text, m.end())
        if pos < n and text[pos] == ",":
            pos = _skip(text, pos + 1)
        elif pos < n and text[pos] != "]":
            raise ValueError(f"expected ',' or ']' at character {pos + 1}, found {text[pos]!r}")
    if pos >= n or _skip(text, pos + 1) != n:
        raise ValueError("it does not end with ']'")
    return out


def _unescape(body: str) -> str:
    """A string literal's body with Python's escapes (``\\n``, ``\\x41``, ``\\u00e9``, ``\\N{...}``)
    decoded; characters beyond Latin-1 pass through as escapes of their own, so they come back unchanged."""
    with warnings.catch_warnings():  # an unknown escape (\q) stays as written, as Python keeps it
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            out = codecs.decode(body.encode("latin-1", "backslashreplace"), "unicode_escape")
        except UnicodeDecodeError as exc:
            raise ValueError(f"a bad escape in a string ({exc.reason})") from None
    if _SURROGATE.search(out):
        raise ValueError("a lone surrogate escape (\\ud800-\\udfff) is not text")
    return out


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
    said: list[str] = []
    seen: dict[str, int] = {}
    for n, (line, rec) in enumerate(items, 1):
        case = _check_case(_convert(fmt, rec, path, line, n, said), path, line, n - 1)
        if case.id in seen:
            raise InputError(f"duplicate case id '{case.id}' (first at line {seen[case.id]})", file=path, line=line,
                             field="id")
        seen[case.id] = line
        cases.append(case)
    if not cases:
        raise InputError("no records", file=path)
    return CaseSet(path=path, cases=cases, warnings=said)


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
