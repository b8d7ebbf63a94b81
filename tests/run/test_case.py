"""A suite entry's aligned judge (``aligned:``): rows carry the mapped score, the raw one beside it and the
alignment's hash; the verdict is the map's pass mark; a file for another judge or a non-judge entry is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from referee.alignment import AlignedJudge
from referee.cli import cli
from referee.suites import load_suite
from referee.suites._suite import SuiteInvalid

# With references: the stand-in judges correctness only against one (without, it leaves the row unscored).
CASES = [
    {"id": "a", "input": "What is two plus two?", "output": "4", "reference": "4"},
    {"id": "b", "input": "Capital of France?", "output": "I do not know", "reference": "Paris"},
    {"id": "c", "input": "Name a colour", "output": "Blue is a colour that many people like.",
     "reference": "Blue, red or green are colours."},
]


def _aligned(tmp_path: Path, *, model: str = "standin") -> Path:
    judge = AlignedJudge.model_validate({
        "method": ["map"], "judge": {"provider": "standin", "model": model},
        # Raw 0-0.2 -> 0, 0.3 -> 0.5, 0.8+ -> 1: the stand-in's scores pulled onto a reviewer's pass/fail scale.
        "map": {"knots": [[0.2, 0.0], [0.3, 0.5], [0.8, 1.0]], "levels": None, "pass_mark": 0.25},
        "labels": {"path": "l.jsonl", "sha256": "0" * 64, "n": 30, "reviewers": ["ann"], "no_consensus": 0},
        "split": {"seed": 0, "holdout": 0.5, "grouped": False, "heldout_ids": []}, "heldout": {}})
    return judge.save(tmp_path / "judge.aligned.json")


def _suite(tmp_path: Path, entry: str, judge: str = "") -> Path:
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES), encoding="utf-8")
    p = tmp_path / "suite.yaml"
    p.write_text(f"name: s\ncases: cases.jsonl\n{judge}evaluators:\n{entry}", encoding="utf-8")
    return p


def test_rows_keep_the_raw_score_and_name_the_alignment(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    aligned = _aligned(tmp_path)
    suite = _suite(tmp_path, "  - id: judge\n    llm_judge: {criteria: [correctness]}\n    aligned: judge.aligned.json\n")
    out = tmp_path / "out.jsonl"
    assert cli(["run", str(suite), "--provider", "standin", "--out", str(out)]) == 0
    capsys.readouterr()
    rows = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    plain = tmp_path / "plain.jsonl"
    suite2 = _suite(tmp_path, "  - id: judge\n    llm_judge: {criteria: [correctness]}\n")
    assert cli(["run", str(suite2), "--provider", "standin", "--out", str(plain)]) == 0
    raw = {r["id"]: r["score"] for r in map(json.loads, plain.read_text().splitlines())}
    h = AlignedJudge.model_validate_json(aligned.read_text()).hash
    for cid, row in rows.items():
        assert row["details"]["raw_score"] == raw[cid]
        assert row["details"]["alignment"] == h
        expected = min(1.0, max(0.0, AlignedJudge.model_validate_json(aligned.read_text()).map_score(raw[cid])))
        assert row["score"] == pytest.approx(expected, abs=1e-6)
        assert row["passed"] is (raw[cid] >= 0.25)
    # A case below the default pass threshold (0.7) passes by the map's pass mark, as the reviewers would.
    assert any(raw[cid] < 0.7 and row["passed"] is True for cid, row in rows.items())
    assert all(row.get("status", "scored") == "scored" for row in rows.values())


def test_an_alignment_for_another_judge_is_refused(tmp_path: Path) -> None:
    _aligned(tmp_path, model="gpt-x")
    suite = _suite(tmp_path, "  - llm_judge: {criteria: [correctness]}\n    aligned: judge.aligned.json\n",
                   judge="judge:\n  provider: openai\n  model: gpt-y\n")
    with pytest.raises(SuiteInvalid, match="fitted for another judge"):
        load_suite(suite)


def test_a_missing_file_or_a_check_entry_is_refused(tmp_path: Path) -> None:
    suite = _suite(tmp_path, "  - llm_judge: {criteria: [correctness]}\n    aligned: nowhere.json\n")
    with pytest.raises(SuiteInvalid, match="not found"):
        load_suite(suite)
    _aligned(tmp_path)
    suite = _suite(tmp_path, "  - contains: {value: ['x']}\n    aligned: judge.aligned.json\n")
    with pytest.raises(SuiteInvalid, match="not an LLM judge"):
        load_suite(suite)


@pytest.mark.parametrize("evaluators", [1, 2], ids=["one evaluator", "two evaluators"])
def test_rows_of_plain_function_evaluators_reach_the_file_while_the_run_goes(tmp_path: Path,
                                                                             evaluators: int) -> None:
    import referee

    out = tmp_path / "r.jsonl"
    lines_at_case_30: list[int] = []

    def check(output: str, case: Any) -> bool:  # a plain function: its evaluation never yields to the loop
        if case.id == "c30" and not lines_at_case_30:
            lines_at_case_30.append(len(out.read_text().splitlines()) if out.exists() else 0)
        return True

    res = referee.evaluate([{"id": f"c{i}", "output": "x"} for i in range(40)], [check] * evaluators, out=out,
                           progress=False, concurrency=1)
    assert res.scored == 40
    # Rows are written as they complete (a kill -9 keeps them), not all at the end of the run.
    assert lines_at_case_30[0] >= 20
