"""Ragas evaluation datasets and DeepEval test cases as referee cases (files, lists, DataFrames, the CLI)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from referee.cases import from_deepeval, from_ragas, load_cases
from referee.errors import InputError
from tests.support.cli import run_cli

RAGAS = [{"user_input": "Where is the tower?", "retrieved_contexts": ["It is in Paris.", "It is tall."],
          "response": "In Paris.", "reference": "Paris.", "reference_contexts": ["x"]},
         {"user_input": "When?", "retrieved_contexts": [], "response": "1889."}]
DEEPEVAL = [{"input": "Where is the tower?", "actual_output": "In Paris.", "expected_output": "Paris.",
             "retrieval_context": ["It is in Paris."], "context": ["ideal"], "name": "t1"}]


def test_ragas_jsonl(tmp_path: Path) -> None:
    p = tmp_path / "ragas.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in RAGAS), encoding="utf-8")
    cs = from_ragas(p)
    a = cs.cases[0]
    assert (a.id, a.input, a.output, a.reference) == ("1", "Where is the tower?", "In Paris.", "Paris.")
    assert [c.text for c in a.contexts] == ["It is in Paris.", "It is tall."]
    assert a.get("reference_contexts") == ["x"]  # other keys are kept
    assert cs.cases[1].contexts == [] and cs.cases[1].reference is None


def test_ragas_csv_with_python_lists_as_pandas_writes_them(tmp_path: Path) -> None:
    p = tmp_path / "ragas.csv"
    p.write_text("user_input,retrieved_contexts,response,reference\n"
                 "\"Where?\",\"['It is in Paris.', \"\"It's tall.\"\"]\",In Paris.,Paris.\n", encoding="utf-8")
    assert [c.text for c in from_ragas(p).cases[0].contexts] == ["It is in Paris.", "It's tall."]


def test_ragas_old_names_and_dataframes() -> None:
    cs = from_ragas([{"question": "q", "contexts": ["c"], "answer": "a", "ground_truth": "g"}])
    assert (cs.cases[0].input, cs.cases[0].output, cs.cases[0].reference) == ("q", "a", "g")
    pd = pytest.importorskip("pandas")
    cs = from_ragas(pd.DataFrame(RAGAS))
    assert [c.text for c in cs.cases[0].contexts] == ["It is in Paris.", "It is tall."]


def test_deepeval_json_snake_and_camel(tmp_path: Path) -> None:
    p = tmp_path / "tests.json"
    camel = {"input": "q2", "actualOutput": "a2", "expectedOutput": "g2", "retrievalContext": ["c2"]}
    p.write_text(json.dumps({"test_cases": [*DEEPEVAL, camel]}), encoding="utf-8")
    cs = from_deepeval(p)
    assert (cs.cases[0].output, cs.cases[0].reference) == ("In Paris.", "Paris.")
    assert [c.text for c in cs.cases[0].contexts] == ["It is in Paris."]
    assert (cs.cases[1].output, cs.cases[1].reference, cs.cases[1].contexts[0].text) == ("a2", "g2", "c2")


@pytest.mark.parametrize(("records", "line", "field", "why"), [
    ([RAGAS[0], {"user_input": "q", "retrieved_contexts": "one string"}], 2, "retrieved_contexts", "list of strings"),
    ([{"user_input": "q", "retrieved_contexts": ["a", 3]}], 1, "retrieved_contexts[1]", "must be a string"),
    ([{"response": "a"}], 1, "user_input", "missing"),
    ([{"user_input": "q", "response": ["a"]}], 1, "response", "must be a string"),
])
def test_bad_ragas_records_name_file_line_and_field(tmp_path: Path, records: list[Any], line: int, field: str,
                                                    why: str) -> None:
    p = tmp_path / "ragas.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    with pytest.raises(InputError) as exc:
        from_ragas(p)
    assert (exc.value.line, exc.value.field) == (line, field) and str(p) in str(exc.value) and why in str(exc.value)


def test_bad_deepeval_record(tmp_path: Path) -> None:
    p = tmp_path / "d.jsonl"
    p.write_text(json.dumps({"input": "q", "retrieval_context": [None]}) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        from_deepeval(p)
    assert exc.value.field == "retrieval_context[0]"


def test_cli_import_writes_cases_that_load(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "ragas.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in RAGAS), encoding="utf-8")
    out = tmp_path / "cases.jsonl"
    code, _, err = run_cli(["import", "--format", "ragas", str(src), "--out", str(out)], capsys)
    assert code == 0 and "2 ragas case(s)" in err
    assert [c.text for c in load_cases(out).cases[0].contexts] == ["It is in Paris.", "It is tall."]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"user_input": 3}\n', encoding="utf-8")
    code, _, err = run_cli(["import", "--format", "deepeval", str(bad), "--out", str(out)], capsys)
    assert code == 2 and "bad.jsonl:1" in err and "input" in err


def test_a_record_giving_one_field_under_two_names_is_a_warning_and_the_current_name_wins(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Which of the two was kept depended on the keys' order, silently. Now the current name (Ragas's, DeepEval's
    snake_case) is used in either order, and the import says so naming file, line and both names."""
    ragas = [{"question": "old q", "user_input": "new q", "retrieved_contexts": ["new"], "contexts": ["old"]},
             {"user_input": "q2", "response": "a2"}]
    cs = from_ragas(ragas)
    assert (cs.cases[0].input, [c.text for c in cs.cases[0].contexts]) == ("new q", ["new"])
    assert len(cs.warnings) == 2 and "'user_input' is used and 'question' left out" in cs.warnings[0]
    assert "'retrieved_contexts' is used and 'contexts' left out" in cs.warnings[1]
    camel_first = {"input": "q", "actualOutput": "camel", "actual_output": "snake"}
    snake_first = {"input": "q", "actual_output": "snake", "actualOutput": "camel"}
    for rec in (camel_first, snake_first):
        d = from_deepeval([rec])
        assert d.cases[0].output == "snake" and "'actual_output' is used" in d.warnings[0]
    assert from_deepeval([{"input": "q", "actual_output": "a", "actualOutput": None}]).warnings == []
    src = tmp_path / "d.jsonl"
    src.write_text(json.dumps(camel_first) + "\n", encoding="utf-8")
    code, _, err = run_cli(["import", "--format", "deepeval", str(src), "--out", str(tmp_path / "c.jsonl")], capsys)
    assert code == 0 and f"warning: {src}:1: record 1 gives both 'actual_output' and 'actualOutput'" in err


def test_a_python_list_cell_reads_as_python_reads_it() -> None:
    """Every list of strings, written as ``repr`` writes it (quotes of either kind, escapes, non-Latin text),
    reads back equal; the parser is a scan, never an evaluation."""
    import ast
    import random

    from referee.cases._rag_import import python_str_list

    rng = random.Random(34)
    alphabet = "ab '\"\\\n\t\r\x00\x7f\u00e9\u4e2d\U0001f600,[]"
    for _ in range(400):
        value = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(rng.randint(0, 5))]
        text = repr(value)
        assert python_str_list(text) == ast.literal_eval(text) == value
    spaced = " [ 'a' ,\n\"b\\x41\\u00e9\\N{BULLET}\" , ] "
    assert python_str_list(spaced) == ast.literal_eval(spaced) == ["a", "bA\u00e9\u2022"]
    assert python_str_list("['\\q']") == ["\\q"]  # an unknown escape is kept as written, as Python keeps it


@pytest.mark.parametrize(("cell", "why"), [
    ("['a', 1]", "expected a quoted string"),
    ("[['a']]", "expected a quoted string"),
    ("['a' 'b']", "expected ',' or ']'"),
    ("['a'", "does not end with ']'"),
    ("['a'] + ['b']", "does not end with ']'"),
    ("['a\\", "not closed"),
    ("[__import__('os').system('echo hi')]", "expected a quoted string"),
    ("['\\ud800']", "lone surrogate"),
    ("['\\x4']", "bad escape"),
])
def test_a_list_cell_that_is_not_a_list_of_strings_is_refused_naming_its_field(tmp_path: Path, cell: str,
                                                                             why: str) -> None:
    p = tmp_path / "ragas.csv"
    quoted = cell.replace('"', '""')
    p.write_text(f'user_input,retrieved_contexts\nq,x\nq2,"{quoted}"\n', encoding="utf-8")
    with pytest.raises(InputError) as exc:
        from_ragas(p)
    assert (exc.value.line, exc.value.field) == (3, "retrieved_contexts") and why in str(exc.value)


_PARSE_UNDER_A_CAP = """\
import json, resource, sys, time, tracemalloc
resource.setrlimit(resource.RLIMIT_AS, ({cap}, {cap}))
from referee.cases._rag_import import _list_cell

def cell(size):
    # What pandas writes for long contexts: quotes of both kinds, escapes, non-Latin text.
    item = "It's a \\"quoted\\" line\\twith tabs,\\n new lines and caf\\u00e9 \\u4e2d\\u6587 " * 40
    return repr([item] * (size // len(repr(item)) + 1))

out = {{}}
for size in (1 << 20, 8 << 20):
    text = cell(size)
    best = min(_timed(text) for _timed in [lambda t: (lambda s: (_list_cell(t, "f.csv", 2, "contexts"),
                                                                 time.perf_counter() - s)[1])(time.perf_counter())]
               * 3)
    tracemalloc.start()
    parsed = _list_cell(text, "f.csv", 2, "contexts")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    out[size] = {{"bytes": len(text.encode()), "seconds": best, "peak": peak, "items": len(parsed)}}
print(json.dumps(out))
"""


@pytest.mark.slow
def test_a_python_list_cell_parses_in_linear_time_and_bounded_memory(tmp_path: Path) -> None:
    """An 8 MB list cell in Python syntax took ~4 GB and 40 s to parse. Now, under a 1 GiB address-space limit:
    peak memory of the parse under ten times the cell's size, and 8 times the text takes about 8 times as long
    (a generous factor of 3 on top: the machine may be busy; quadratic would be 64 times)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-c", _PARSE_UNDER_A_CAP.format(cap=1 << 30)], capture_output=True,
                          text=True, timeout=600, env=env, start_new_session=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    small, big = json.loads(proc.stdout).values()
    for m in (small, big):
        assert m["items"] > 1 and m["peak"] < 10 * m["bytes"], m
    assert big["seconds"] < 8 * 3 * small["seconds"], (small, big)
