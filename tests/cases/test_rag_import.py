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
