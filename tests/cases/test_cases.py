"""Loading cases: JSONL, YAML, JSON lists; every error names file, line and field."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from referee.cases._case import load_cases
from referee.errors import InputError, UserError


def test_jsonl_keeps_every_key_and_normalises_ids(tmp_path: Path) -> None:
    p = tmp_path / "c.jsonl"
    p.write_text('{"id": 7, "input": "q", "final_output": "a", "extra": [1, 2]}\n\n{"id": "x", "output": "o"}\n',
                 encoding="utf-8")
    cs = load_cases(p)
    assert cs.ids == ["7", "x"]
    first = cs.cases[0]
    assert first.output == "a"  # final_output fallback
    assert first.get("extra") == [1, 2]
    assert first.line == 1 and cs.cases[1].line == 3


def test_yaml_list_reports_lines(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text("- id: a\n  input: q\n- id: b\n  input: r\n  turns: nope\n", encoding="utf-8")
    with pytest.raises(InputError) as ei:
        load_cases(p)
    assert ei.value.line == 3 and ei.value.field == "turns"
    assert str(p) in str(ei.value)


def test_yaml_mapping_with_cases_and_json_list(tmp_path: Path) -> None:
    y = tmp_path / "c.yml"
    y.write_text("cases:\n  - id: a\n    input: q\n", encoding="utf-8")
    assert load_cases(y).ids == ["a"]
    j = tmp_path / "c.json"
    j.write_text(json.dumps([{"id": "a"}, {"id": "b"}]), encoding="utf-8")
    assert load_cases(j).ids == ["a", "b"]


def test_malformed_line_names_file_and_line(tmp_path: Path) -> None:
    p = tmp_path / "c.jsonl"
    p.write_text('{"id": "a"}\n{"id": "b",\n', encoding="utf-8")
    with pytest.raises(InputError) as ei:
        load_cases(p)
    assert ei.value.line == 2
    assert f"{p}:2" in str(ei.value)


def test_missing_id_names_field(tmp_path: Path) -> None:
    p = tmp_path / "c.jsonl"
    p.write_text('{"id": "a"}\n{"input": "no id"}\n', encoding="utf-8")
    with pytest.raises(InputError) as ei:
        load_cases(p)
    assert (ei.value.line, ei.value.field) == (2, "id")


@pytest.mark.parametrize("bad", [True, 1.5, ["x"]])
def test_id_of_wrong_type(tmp_path: Path, bad: object) -> None:
    p = tmp_path / "c.jsonl"
    p.write_text(json.dumps({"id": bad}) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="field 'id'"):
        load_cases(p)


def test_non_utf8_bytes_name_the_line(tmp_path: Path) -> None:
    p = tmp_path / "c.jsonl"
    p.write_bytes(b'{"id": "a", "input": "ok"}\n{"id": "b", "input": "caf\xe9"}\n')
    with pytest.raises(InputError) as ei:
        load_cases(p)
    assert ei.value.line == 2
    assert "UTF-8" in str(ei.value) and "0xe9" in str(ei.value)


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    p = tmp_path / "c.jsonl"
    p.write_bytes('\ufeff{"id": "a", "input": "é"}\n'.encode())
    assert load_cases(p).cases[0].input == "é"


@pytest.mark.parametrize("content", ["", "\n\n  \n"])
def test_empty_file(tmp_path: Path, content: str) -> None:
    p = tmp_path / "c.jsonl"
    p.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match="empty"):
        load_cases(p)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        load_cases(tmp_path / "nope.jsonl")
    with pytest.raises(InputError, match="directory"):
        load_cases(tmp_path)


def test_input_error_is_a_user_error() -> None:
    assert issubclass(InputError, UserError) and InputError.exit_code == 2


@pytest.mark.parametrize(("obj", "field"), [
    ({"id": "a", "turns": [{"role": "user"}]}, "turns[0]"),
    ({"id": "a", "trajectory": "x"}, "trajectory"),
    ({"id": "a", "metadata": [1]}, "metadata"),
    ({"id": "a", "category": 3}, "category"),
])
def test_wrong_types_name_the_field(tmp_path: Path, obj: dict[str, object], field: str) -> None:
    p = tmp_path / "c.jsonl"
    p.write_text(json.dumps(obj) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as ei:
        load_cases(p)
    assert ei.value.field == field


def test_unicode_line_separators_inside_strings_are_not_line_breaks(tmp_path: Path) -> None:
    p = tmp_path / "c.jsonl"
    cases = [{"id": "a", "input": "one\u2028two\x85three\x0cfour"}, {"id": "b", "input": "x"}]
    p.write_text("".join(json.dumps(c, ensure_ascii=False) + "\r\n" for c in cases), encoding="utf-8")
    loaded = load_cases(p)
    assert loaded.ids == ["a", "b"] and loaded.cases[0].input == cases[0]["input"]
    assert loaded.cases[1].line == 2


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_bom_accepted_in_json_and_yaml(tmp_path: Path, suffix: str) -> None:
    p = tmp_path / f"c{suffix}"
    body = json.dumps([{"id": "a"}]) if suffix == ".json" else "- id: a\n"
    p.write_bytes("\ufeff".encode() + body.encode())
    assert load_cases(p).ids == ["a"]


def test_a_stream_checks_each_case_as_it_is_taken_and_names_the_item() -> None:
    from referee.cases._case import CaseStream, cases_from

    taken: list[int] = []

    def source() -> Iterator[Any]:
        for i, obj in enumerate([{"input": "q1", "output": "a"}, "just an output", {"id": "x", "output": "b"}]):
            taken.append(i)
            yield obj

    stream = CaseStream(source(), name="<live>")
    assert taken == []  # nothing is read before it is taken
    first = next(stream)
    assert taken == [0] and first.id == "1" and first.line == 1
    rest = list(stream)
    assert [c.id for c in [first, *rest]] == ["1", "2", "x"] and rest[0].output == "just an output"
    assert stream.cases == [first, *rest]
    # The same cases as one list checked at once, and the same identity for the same cases.
    assert [c.data for c in stream.cases] == [c.data for c in cases_from(
        [{"input": "q1", "output": "a"}, "just an output", {"id": "x", "output": "b"}]).cases]
    again = CaseStream(iter([{"input": "q1", "output": "a"}, "just an output", {"id": "x", "output": "b"}]))
    list(again)
    assert again.sha256 == stream.sha256
    other = CaseStream(iter([{"input": "q1", "output": "A"}, "just an output", {"id": "x", "output": "b"}]))
    list(other)
    assert other.sha256 != stream.sha256

    bad = CaseStream(iter([{"id": "a", "output": "o"}, {"id": "b", "metadata": "not an object"}]), name="<live>")
    next(bad)
    with pytest.raises(InputError) as err:
        next(bad)
    assert (err.value.file, err.value.line, err.value.field) == ("<live>", 2, "metadata")
    dup = CaseStream(iter([{"id": "a", "output": "o"}, {"id": "a", "output": "p"}]))
    next(dup)
    with pytest.raises(InputError, match="duplicate case id 'a' \\(first at item 1\\)"):
        next(dup)
    assert [c.id for c in dup.cases] == ["a"]  # the duplicate was never taken
    assert list(CaseStream(iter(()))) == []  # unlike a list, a stream may be empty
