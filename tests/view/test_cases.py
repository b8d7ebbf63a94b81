"""A large cases file read by offset gives the viewer the same cases as loading it whole; a bad line hides only
its own case."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import referee.view._store as store
from referee.cases import load_cases
from referee.view import build_app, close_app
from referee.view._cases import LazyCases


def test_offsets_read_the_same_cases_as_load_cases(tmp_path: Path) -> None:
    p = tmp_path / "c.jsonl"
    lines = [json.dumps({"id": f"c{i}", "input": f"q{i}", "output": "é\u2028x", "category": "a"}) for i in range(5)]
    lines.insert(2, "")
    lines.append(json.dumps({"id": 7, "input": "int id"}))
    p.write_bytes(b"\xef\xbb\xbf" + "\n".join(lines).encode() + b"\n")
    lazy = LazyCases(p)
    whole = {c.id: c for c in load_cases(p).cases}
    assert list(lazy) == list(whole) and len(lazy) == 6 and "7" in lazy
    for cid, c in whole.items():
        got = lazy[cid]
        assert (got.id, got.data, got.line) == (c.id, c.data, c.line)
    assert lazy.get("nope") is None and lazy.warnings == []


def test_a_bad_line_hides_only_its_case(tmp_path: Path) -> None:
    p = tmp_path / "c.jsonl"
    p.write_text("\n".join([json.dumps({"id": "a", "input": "x"}), '{"id": "b", "input": ',
                            json.dumps({"id": "c", "metadata": "not an object"}), json.dumps({"input": "no id"}),
                            json.dumps({"id": "a", "input": "second a"}), json.dumps({"id": "d", "input": "y"})]) + "\n",
                 encoding="utf-8")
    lazy = LazyCases(p)
    assert lazy["a"].input == "x" and lazy["d"].input == "y"  # the first 'a' wins, as load_cases + setdefault
    assert "b" not in lazy and lazy.get("c") is None
    assert any(":4: no id" in w for w in lazy.warnings) and any("'c' not shown" in w for w in lazy.warnings)


def test_the_viewer_reads_a_large_cases_file_by_offset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store, "LAZY_BYTES", 0)
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps({"id": f"q{i}", "input": f"in {i}", "output": f"out {i}"}) + "\n"
                             for i in range(30)), encoding="utf-8")
    res = tmp_path / "r.jsonl"
    res.write_text("".join(json.dumps({"id": f"q{i}", "score": 0.9}) + "\n" for i in range(30)), encoding="utf-8")
    app = build_app([str(res)], cases=[str(cases)], lock=False, index_now=False)
    try:
        assert isinstance(app.runs["0"].cases(), LazyCases)
        rows = app.api_grid({"offset": "20", "limit": "2"})["rows"]
        assert [(r["id"], r["input"], r["cells"][0]["output"]) for r in rows] == [("q20", "in 20", "out 20"),
                                                                                  ("q21", "in 21", "out 21")]
        assert app.api_case("0", 29, {})["case"]["output"] == "out 29"
        found = app.api_cases("0", {"q": "out 17"})
        assert [r["id"] for r in found["rows"]] == ["q17"]  # the index searches the outputs read by offset
    finally:
        close_app(app)
