"""The columnar reader: same rows as read_results, bad lines named by file and line, duplicates, strictness."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import referee.aggregate._load as load_mod
from referee.aggregate import load_table
from referee.aggregate._load import SCORED, UNSCORED, _Reader, load_tables
from referee.errors import InputError
from referee.results import ResultRow, ResultWriter, read_results
from tests.support.scores import write_rows


def test_seed_rows_load_unchanged_and_match_read_results(tmp_path: Path) -> None:
    rows = [{"id": 7, "score": True, "category": "Billing"}, {"id": "b", "score": 0.25, "cost_usd": 0.002,
                                                             "latency_ms": 120, "custom": "kept"},
            {"id": "c", "score": False, "category": " billing "}]
    p = write_rows(tmp_path / "r.jsonl", rows)
    t = load_table(p)
    ref = read_results(p)
    assert t.ids == [r.id for r in ref.rows] == ["7", "b", "c"]
    assert t.score.tolist() == [r.score for r in ref.rows] == [1.0, 0.25, 0.0]
    assert t.categories == ["billing", ""] and t.category_names == ["Billing", "(uncategorized)"]
    assert t.category.tolist() == [0, 1, 0]
    assert np.isnan(t.cost[0]) and t.cost[1] == 0.002 and t.latency[1] == 120


def test_referee_rows_with_unscored_and_repeats(tmp_path: Path) -> None:
    p = tmp_path / "r.jsonl"
    with ResultWriter(p) as w:
        w.write(ResultRow(id="a", score=0.9, repeat=0, category="x"))
        w.write(ResultRow(id="a", score=0.2, repeat=1, category="x"))
        w.write(ResultRow(id="b", status="unscored", error="reply was not JSON", category="x"))
    t = load_table(p)
    assert t.status.tolist() == [SCORED, SCORED, UNSCORED]
    assert t.repeat.tolist() == [0, 1, -1] and t.has_repeats
    assert np.isnan(t.score[2])
    assert t.read_rows([2])[2]["error"] == "reply was not JSON"


@pytest.mark.parametrize(("line", "needle"), [
    ("not json at all", "malformed JSON"),
    ('{"score": 0.5}', "missing field 'id'"),
    ('{"id": "x"}', "missing field 'score'"),
    ('{"id": "x", "score": 1.5}', "outside 0-1"),
    ('{"id": "x", "score": -0.1}', "outside 0-1"),
    ('{"id": "x", "score": NaN}', "score is NaN"),
    ('{"id": "x", "score": "high"}', "must be a number"),
    ('{"id": "x", "score": "nan"}', "score is NaN"),
    ('{"id": "x", "score": "2"}', "outside 0-1"),
    ('{"id": "x", "score": 0.5, "cost_usd": -1}', "cost_usd"),
    ('{"id": "x", "status": "unscored", "score": 0.5}', "must not carry a score"),
    ('[1, 2]', "expected a JSON object"),
])
def test_bad_lines_are_skipped_with_file_and_line(tmp_path: Path, line: str, needle: str) -> None:
    p = write_rows(tmp_path / "r.jsonl", [{"id": "ok", "score": 0.8}], [line, '{"id": "ok2", "score": 0.1}'])
    t = load_table(p)
    assert t.ids == ["ok", "ok2"]
    assert len(t.warnings) == 1
    assert f"{p}:2" in t.warnings[0] and needle in t.warnings[0]
    with pytest.raises(InputError, match=needle) as exc:
        load_table(p, strict=True)
    assert exc.value.line == 2 and exc.value.file == p


def test_duplicate_ids_keep_the_first_and_name_both_lines(tmp_path: Path) -> None:
    rows = [{"id": "a", "score": 0.9}, {"id": "b", "score": 0.5}, {"id": "a", "score": 0.1}]
    p = write_rows(tmp_path / "r.jsonl", rows)
    t = load_table(p)
    assert t.ids == ["a", "b"] and t.score.tolist() == [0.9, 0.5]
    assert any(":3" in w and "duplicate row for id 'a'" in w and "first on line 1" in w for w in t.warnings)
    with pytest.raises(InputError, match="duplicate"):
        load_table(p, strict=True)


def test_same_id_with_distinct_repeats_is_not_a_duplicate(tmp_path: Path) -> None:
    rows = [{"id": "a", "score": 0.9, "repeat": 0}, {"id": "a", "score": 0.1, "repeat": 1},
            {"id": "a", "score": 0.3, "repeat": 1}]
    t = load_table(write_rows(tmp_path / "r.jsonl", rows))
    assert len(t) == 2 and len(t.warnings) == 1 and "repeat 1" in t.warnings[0]


def test_empty_file_is_an_input_error(tmp_path: Path) -> None:
    p = tmp_path / "empty.jsonl"
    p.write_text("\n\n", encoding="utf-8")
    with pytest.raises(InputError, match="no result rows"):
        load_table(p)
    q = write_rows(tmp_path / "bad.jsonl", [], ["nope"])
    with pytest.raises(InputError, match="1 line"):
        load_table(q)


def test_fast_and_row_by_row_paths_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(4)
    rows = [{"id": f"c{i}", "score": float(round(rng.random(), 2)), "category": ["A", "b", None][i % 3],
             "cost_usd": None if i % 7 == 0 else 0.001 * i, "latency_ms": 10 * i} for i in range(500)]
    for i in range(0, 500, 9):  # unscored and error rows stay on the fast path
        rows[i] = {"id": f"c{i}", "status": "unscored" if i % 2 else "error", "error": "no reply"}
    for i in range(5, 500, 11):  # the seed's boolean pass/fail scores stay on the fast path too
        if "score" in rows[i]:
            rows[i]["score"] = bool(i % 2)
    with monkeypatch.context() as m:
        m.setattr(_Reader, "_slow", lambda *a: pytest.fail("the row-by-row reader was used"))
        fast = load_table(write_rows(tmp_path / "fast.jsonl", rows))
    # A blank line forces the whole chunk through the row-by-row reader.
    slow = load_table(write_rows(tmp_path / "slow.jsonl", rows, [""]))
    assert fast.ids == slow.ids and fast.categories == slow.categories
    for col in ("score", "cost", "latency", "category", "status", "line", "offset", "repeat"):
        np.testing.assert_array_equal(getattr(fast, col), getattr(slow, col))
    assert not slow.warnings
    assert int((fast.status != 0).sum()) == len(range(0, 500, 9))
    assert fast.score[5] == 1.0 and fast.score[16] == 0.0


def test_offsets_point_at_each_row(tmp_path: Path) -> None:
    rows = [{"id": f"c{i}", "score": 0.5, "rationale": f"reason {i} é"} for i in range(50)]
    t = load_table(write_rows(tmp_path / "r.jsonl", rows))
    got = t.read_rows([0, 17, 49])
    assert [got[i]["rationale"] for i in (0, 17, 49)] == ["reason 0 é", "reason 17 é", "reason 49 é"]


def test_manifest_marks_a_file_adversarial(tmp_path: Path) -> None:
    from referee.results import RunManifest

    p = write_rows(tmp_path / "rt.jsonl", [{"id": "a", "score": 1.0, "category": "jailbreak"}])
    RunManifest(kind="redteam", adversarial=True).write(p)
    assert load_table(p).adversarial
    (tmp_path / "rt.manifest.json").write_text(json.dumps({"adversarial": "maybe", "bogus": 1}))
    t = load_table(p)
    assert not t.adversarial and any("manifest" in w for w in t.warnings)


def test_a_byte_order_mark_does_not_cost_the_first_row(tmp_path: Path) -> None:
    p = tmp_path / "bom.jsonl"
    p.write_bytes(b'\xef\xbb\xbf{"id": "a", "score": 0.9, "rationale": "first"}\n{"id": "b", "score": 0.1}\n')
    t = load_table(p)
    assert t.ids == ["a", "b"] and not t.warnings
    assert t.read_rows([0])[0]["rationale"] == "first"  # offsets still point at the rows


def _same_tables(a: object, b: object) -> None:
    for name, va in vars(a).items():
        vb = getattr(b, name)
        if isinstance(va, np.ndarray):
            np.testing.assert_array_equal(va, vb, err_msg=name)
        else:
            assert va == vb, name


FORKS = sys.platform == "linux" and len(os.sched_getaffinity(0)) >= 2
"""Whether a forked reader can run here (the tests force it on whatever threads earlier tests left running: the
reader's child only reads a file and writes a pipe)."""


@pytest.fixture
def forking(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Forked readers on (whatever the thread count), and the start methods they asked for."""
    monkeypatch.setattr(load_mod, "_parallel_ok", lambda: True)
    spawned: list[str] = []
    real = load_mod.multiprocessing.get_context

    def spy(method: str) -> object:
        spawned.append(method)
        return real(method)

    monkeypatch.setattr(load_mod.multiprocessing, "get_context", spy)
    return spawned


@pytest.mark.skipif(not FORKS, reason="the forked reader runs on Linux with 2+ CPUs only")
@pytest.mark.parametrize("newline_in_id", [False, True])
def test_a_large_file_read_in_two_halves_gives_the_same_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              forking: list[str], newline_in_id: bool) -> None:
    rows: list[dict[str, Any]] = [{"id": f"c{i}", "score": round(i / 400, 3), "cost_usd": 0.001,
                                   "category": ("Alpha" if i < 200 else " alpha ") if i % 2 else "B"}
                                  for i in range(400)]
    rows[150]["category"] = None
    rows[330]["category"] = "new in the second half"
    rows[340]["passed"] = "yes"  # ignored, and counted
    rows[345]["flags"] = ["self_grading"]
    rows[350]["id"] = "c10"  # a duplicate across the halves: the first is kept
    rows[360] = {"id": "u", "status": "unscored"}
    if newline_in_id:
        rows[300]["id"] = "two\nlines"
    p = tmp_path / "big.jsonl"
    lines = [json.dumps(r) for r in rows]
    lines.insert(320, "{not json")  # a bad line in the second half: its warning names its own line
    p.write_bytes(b"\xef\xbb\xbf" + ("\n".join(lines) + "\n").encode())
    whole = load_table(p, split=False)
    assert forking == []
    monkeypatch.setattr(load_mod, "_SPLIT_MIN_BYTES", 0)
    halves = load_table(p)
    assert forking == ["fork"]
    _same_tables(whole, halves)
    assert any("big.jsonl:321" in w for w in halves.warnings)
    assert any("duplicate row for id 'c10'" in w for w in halves.warnings)
    assert halves.category_names[:2] == ["B", "Alpha"] and "new in the second half" in halves.category_names
    assert halves.self_graded_rows == 1


@pytest.mark.skipif(not FORKS, reason="the forked reader runs on Linux with 2+ CPUs only")
@pytest.mark.parametrize("newline_in_id", [False, True])
def test_forked_reading_gives_the_same_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              forking: list[str], newline_in_id: bool) -> None:
    rows = [{"id": f"c{i}", "score": round(i / 300, 3), "category": "AB"[i % 2], "cost_usd": 0.001}
            for i in range(300)]
    if newline_in_id:  # ids travel back joined by newlines unless one holds a newline
        rows[4]["id"] = "two\nlines"
    cur = write_rows(tmp_path / "c.jsonl", rows, ["{not json"])
    base = write_rows(tmp_path / "b.jsonl", rows[::-1] + [{"id": "c1", "score": 0.5}])
    sequential = [load_table(cur), load_table(base)]
    monkeypatch.setattr(load_mod, "_PARALLEL_MIN_BYTES", 0)
    parallel = load_tables([cur, base])
    assert forking == ["fork"]
    for a, b in zip(sequential, parallel, strict=True):
        _same_tables(a, b)
    assert parallel[1].ids[0] == "c299" and any("duplicate" in w for w in parallel[1].warnings)
    assert any("c.jsonl:301" in w for w in parallel[0].warnings)


@pytest.mark.skipif(not FORKS, reason="the forked reader runs on Linux with 2+ CPUs only")
def test_forked_reading_raises_the_baselines_own_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        forking: list[str]) -> None:
    cur = write_rows(tmp_path / "c.jsonl", [{"id": "a", "score": 0.5}])
    base = write_rows(tmp_path / "b.jsonl", [{"id": "a", "score": 0.5}], ["{broken"])
    monkeypatch.setattr(load_mod, "_PARALLEL_MIN_BYTES", 0)
    with pytest.raises(InputError) as err:
        load_tables([cur, base], strict=True)
    assert err.value.file == base and err.value.line == 2
    missing = str(tmp_path / "nope.jsonl")
    with pytest.raises(InputError, match="file not found"):
        load_tables([cur, missing])


@pytest.mark.parametrize("extra", [
    '{"id": "big", "score": 0.5, "details": {"n": 12345678901234567890123}}',  # past 64 bits: orjson refuses
    '{"id": "deep", "score": 0.5, "details": ' + "[" * 2000 + "]" * 2000 + "}",
    '{"id": "sur", "score": 0.5, "rationale": "\\ud800"}',  # a lone surrogate
    '{"id": "two", "score": 0.5} {"id": "three", "score": 0.5}',  # two objects on one line
    "",  # a blank line
    '[{"id": "list", "score": 0.5}]',
    '{"id": "dup", "score": 0.1, "score": 0.9}',
    '{"id": "nan", "score": NaN}',
])
def test_the_column_decoder_reads_exactly_what_the_full_parse_reads(tmp_path: Path, extra: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """msgspec decodes the columns of a chunk and orjson the chunks msgspec would read differently: the table,
    its warnings and its errors are the same as with the full parse alone."""
    rows = [json.dumps({"id": f"c{i}", "score": i / 10, "category": "ab"[i % 2],
                        "criteria": [{"id": "x", "evidence": ["q"]}]}) for i in range(10)]
    p = tmp_path / "r.jsonl"
    p.write_text("\n".join([*rows[:5], extra, *rows[5:]]) + "\n", encoding="utf-8")

    def read() -> Any:
        try:
            return load_table(str(p))
        except Exception as exc:  # noqa: BLE001 - the error itself is compared
            return exc

    with_columns = read()
    monkeypatch.setattr(load_mod, "_DECODER", False)  # the full parse only
    full = read()
    if isinstance(full, Exception):
        assert type(with_columns) is type(full) and str(with_columns) == str(full)
        return
    _same_tables(with_columns, full)
    assert with_columns.warnings == full.warnings


def test_clean_chunks_go_through_the_column_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [(json.dumps({"id": f"c{i}", "score": 0.5, "passed": i % 2 == 0, "details": {"a": [1, 2]}}) + "\n")
             .encode() for i in range(5)]
    assert load_mod._column_decoder() is not None
    calls: list[int] = []
    real = load_mod._fast_loads

    def counted(raw: bytes) -> Any:
        calls.append(1)
        return real(raw)

    monkeypatch.setattr(load_mod, "_fast_loads", counted)
    cols = load_mod._columns(lines, b"".join(lines))
    assert calls == []  # not parsed in full
    assert cols[0] == [f"c{i}" for i in range(5)] and cols[8] == [True, False, True, False, True]
