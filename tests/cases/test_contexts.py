"""Cases with retrieved ``contexts``: strings or {id, text, source} records in rank order, from every case format;
bad ones name file, line and field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from referee.cases import Chunk, cases_from, load_cases
from referee.errors import InputError


def test_strings_and_records_in_rank_order(tmp_path: Path) -> None:
    p = tmp_path / "c.jsonl"
    p.write_text(json.dumps({"id": "1", "input": "q", "output": "a", "contexts": [
        "first", {"id": "kb-7", "text": "second", "source": "kb.md"}, {"text": "third"}]}) + "\n", encoding="utf-8")
    case = load_cases(p).cases[0]
    assert case.contexts == [Chunk("ctx1", "first", 1), Chunk("kb-7", "second", 2, "kb.md"), Chunk("ctx3", "third", 3)]


def test_yaml_csv_and_dataframes(tmp_path: Path) -> None:
    y = tmp_path / "c.yaml"
    y.write_text("- id: a\n  output: x\n  contexts:\n    - one\n    - {id: k2, text: two}\n", encoding="utf-8")
    assert [c.id for c in load_cases(y).cases[0].contexts] == ["ctx1", "k2"]
    c = tmp_path / "c.csv"
    c.write_text('id,output,contexts\na,x,"[""one"", ""two""]"\n', encoding="utf-8")
    assert [ch.text for ch in load_cases(c).cases[0].contexts] == ["one", "two"]
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame([{"id": "a", "output": "x", "contexts": ["one", "two"]}])
    assert [ch.text for ch in cases_from(df).cases[0].contexts] == ["one", "two"]


def test_parquet(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    p = tmp_path / "c.parquet"
    pq.write_table(pa.table({"id": ["a"], "output": ["x"], "contexts": [["one", "two"]]}), p)
    assert [ch.text for ch in load_cases(p).cases[0].contexts] == ["one", "two"]


@pytest.mark.parametrize(("contexts", "field", "why"), [
    ("just a string", "contexts", "must be a list"),
    ([1], "contexts[0]", "must be a string or an {id, text} record"),
    ([{"id": "k"}], "contexts[0].text", "must be a string"),
    ([{"text": "a", "score": 0.9}], "contexts[0].score", "unknown key"),
    ([{"id": "k", "text": "a"}, {"id": "k", "text": "b"}], "contexts[1].id", "duplicate chunk id 'k'"),
    (["a", {"id": "ctx1", "text": "b"}], "contexts[1].id", "duplicate chunk id 'ctx1'"),
    ([{"id": True, "text": "a"}], "contexts[0].id", "string or integer"),
])
def test_bad_contexts_name_file_line_and_field(tmp_path: Path, contexts: Any, field: str, why: str) -> None:
    p = tmp_path / "c.jsonl"
    p.write_text(json.dumps({"id": "ok", "output": "x"}) + "\n" + json.dumps({"id": "bad", "contexts": contexts})
                 + "\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_cases(p)
    assert exc.value.line == 2 and exc.value.field == field and str(p) in str(exc.value)
    assert why in str(exc.value)


def test_an_empty_chunk_keeps_its_rank() -> None:
    case = cases_from([{"output": "x", "contexts": ["", "  ", "text"]}]).cases[0]
    assert [(c.rank, c.empty) for c in case.contexts] == [(1, True), (2, True), (3, False)]
    assert cases_from([{"output": "x"}]).cases[0].contexts == []


def test_an_image_chunk_keeps_its_rank_and_has_no_text_to_quote(tmp_path: Path) -> None:
    import base64

    from referee.cases import load_cases
    from referee.cases._contexts import chunks_of
    from tests.support.images import png

    data = base64.b64encode(png(2, 2)).decode()
    (tmp_path / "c.jsonl").write_text(json.dumps({"id": "a", "output": "o", "contexts": [
        "first chunk", {"type": "image", "data": data, "media_type": "image/png"}]}) + "\n", encoding="utf-8")
    case = load_cases(tmp_path / "c.jsonl").cases[0]
    chunks = chunks_of(case.get("contexts"))
    assert [(c.id, c.rank, c.empty) for c in chunks] == [("ctx1", 1, False), ("ctx2", 2, True)]
    assert chunks[1].image is not None and chunks[1].image["type"] == "image" and chunks[1].text == ""
