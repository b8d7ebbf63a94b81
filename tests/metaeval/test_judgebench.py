"""`referee metaeval judgebench` breaks accuracy down by the paper's four categories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.cli import cli
from referee.metaeval._judgebench import category_of, judgebench_by_category, read_outputs


def _line(pid: str, source: str, label: str, d1: str, d2_swapped: str) -> str:
    return json.dumps({"pair_id": pid, "source": source, "label": label,
                       "judgments": [{"decision": d1}, {"decision": d2_swapped}]})


def test_categories_from_sources_and_accuracy_per_category(tmp_path: Path) -> None:
    assert [category_of(s) for s in ("mmlu-pro-biology", "livebench-reasoning", "livebench-math",
                                     "livecodebench")] == ["knowledge", "reasoning", "math", "coding"]
    p = tmp_path / "out.jsonl"
    p.write_text("\n".join([
        _line("k1", "mmlu-pro-law", "A>B", "A>B", "B>A"),        # right in both orders
        _line("k2", "mmlu-pro-history", "A>B", "B>A", "A>B"),    # wrong in both
        _line("r1", "livebench-reasoning", "B>A", "B>A", "B>A"),  # right once, wrong once: sum 0, not correct
        _line("m1", "livebench-math", "B>A", "A=B", "A>B"),       # tie + right: correct
        _line("c1", "livecodebench", "A>B", "A>B", "A=B"),        # right + tie: correct
    ]) + "\n")
    per = judgebench_by_category(read_outputs(p))
    assert list(per) == ["knowledge", "reasoning", "math", "coding"]
    assert per == {"knowledge": (2, 0.5), "reasoning": (1, 0.0), "math": (1, 1.0), "coding": (1, 1.0)}


def test_cli_prints_and_writes_the_breakdown_on_judgebench_data(shared_data: Path, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_data / "judgebench" / "outputs" / "gpt-4o-2024-05-13__arena_hard__o1-mini-2024-09-12.jsonl"
    out = tmp_path / "jb.json"
    assert cli(["metaeval", "judgebench", str(path), "--json-out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "JudgeBench accuracy per category" in text
    per = json.loads(out.read_text())[path.stem]["judgebench_by_category"]
    assert {c: v["pairs"] for c, v in per.items()} == {"knowledge": 154, "reasoning": 98, "math": 56, "coding": 42}
    got = {c: round(v["accuracy"] * 100, 2) for c, v in per.items()}
    assert got == {"knowledge": 58.44, "reasoning": 62.24, "math": 82.14, "coding": 78.57}
