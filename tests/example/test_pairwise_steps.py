"""The example's pairwise (step 50) and calibration (step 55) steps, with and without a judge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.cli import cli
from referee.example import ExampleContext, prepare
from referee.example import step_50_pairwise as step50
from referee.example import step_55_calibrate as step55
from referee.testing import FakeLLMServer, WireRequest


def _ctx(tmp_path: Path, judge_args: list[str] | None = None) -> tuple[ExampleContext, list[str]]:
    prepare(tmp_path)
    lines: list[str] = []
    return ExampleContext(run_cli=cli, dir=tmp_path, judge=judge_args is not None, judge_args=judge_args or [],
                          echo=lines.append), lines


def test_pairwise_step_skips_without_a_judge(tmp_path: Path) -> None:
    ctx, lines = _ctx(tmp_path)
    assert step50.run(ctx) == "skipped (no judge configured)"
    assert any("REFEREE_PROVIDER" in ln for ln in lines)
    pairs = [json.loads(x) for x in (tmp_path / "pairs.jsonl").read_text().splitlines()]
    assert len(pairs) == 12 and all(p["output_a"] and p["output_b"] for p in pairs)


def test_pairwise_step_with_a_judge(tmp_path: Path) -> None:
    def judge(req: WireRequest) -> str:
        t = req.prompt_text
        r1 = t.split("<response_1>")[1].split("</response_1>")[0]
        r2 = t.split("<response_2>")[1].split("</response_2>")[0]
        win = "tie" if r1 == r2 else ("response_1" if len(r1) > len(r2) else "response_2")
        return json.dumps({"winner": win, "rationale": "longer"})

    with FakeLLMServer(responder=judge) as srv:
        ctx, _ = _ctx(tmp_path, ["--provider", "vllm", "--base-url", srv.openai_base_url, "--model", "m"])
        outcome = step50.run(ctx)
    assert outcome is not None and "leaderboard" in outcome
    rows = [json.loads(x) for x in (tmp_path / "pairwise.jsonl").read_text().splitlines()]
    assert len(rows) == 12
    assert {r["details"]["system_a"] for r in rows} == {"before"}
    assert (tmp_path / "leaderboard.html").exists()


def test_calibration_step_replays_verdicts_without_judged_results(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    ctx, lines = _ctx(tmp_path)
    outcome = step55.run(ctx)
    assert outcome is not None and "replayed" in outcome
    assert "0.870" in capsys.readouterr().out  # GPT-4's order consistency on MT-Bench


def test_calibration_step_with_judged_results(tmp_path: Path) -> None:
    ctx, _ = _ctx(tmp_path)
    human = {r["id"]: r["score"] for r in map(json.loads, (tmp_path / "human_labels.jsonl").read_text().splitlines())}
    (tmp_path / "judged_after.jsonl").write_text("".join(
        json.dumps({"id": k, "score": 0.9 if v else 0.1}) + "\n" for k, v in human.items()), encoding="utf-8")
    outcome = step55.run(ctx)
    assert outcome is not None and "within the threshold" in outcome
    log = (tmp_path / "judge_prompt.md").read_text()
    assert "| Date | Cases checked | Mean delta vs human | Action taken |" in log
    assert "| 12 | 0.100 | example run |" in log
