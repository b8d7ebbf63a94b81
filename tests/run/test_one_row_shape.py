"""One evaluator, one row shape: each evaluator kind run once through its command and once through
``referee.evaluate`` on the same cases, against the same scripted judge (the fake LLM server), writes the same
rows apart from timings. Every row compared is ``scored`` where the kind can score, so a judge path that errors on
every case cannot pass by writing equal error rows."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import referee
from referee import Judge
from referee.cli import cli
from referee.example import DATA
from referee.testing import FakeLLMServer, rows_without_timings, schema_responder

TEMPLATE = "Grade the answer.\nQuestion: {input}\nAnswer: {output}\n"
PAIR_TEMPLATE = "Question: {input}\nFirst: {response_1}\nSecond: {response_2}\n"
CASES = [{"id": "a", "input": "2+2?", "output": "4", "reference": "4", "category": "math"},
         {"id": "b", "input": "Capital of France?", "output": "Paris", "reference": "Paris"},
         {"id": "c", "input": "3*3?", "output": "six", "reference": "9", "category": "math"}]
PAIRS = [{"id": "p1", "input": "Refund window?", "output_a": "30 days.", "output_b": "No idea."},
         {"id": "p2", "input": "Reset password?", "output_a": "Call us.", "output_b": "Settings > Reset."}]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    with FakeLLMServer(responder=schema_responder) as srv:
        yield srv


def judge_flags(srv: FakeLLMServer) -> list[str]:
    return ["--provider", "openai", "--model", "judge-1", "--base-url", srv.url + "/v1", "--no-cache"]


def api_judge(srv: FakeLLMServer) -> Judge:
    return Judge("openai:judge-1", base_url=srv.url + "/v1", cache=False)


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def same_rows(cli_out: Path, result: referee.EvalResult, *, scored: int, evaluator: str) -> None:
    assert result.path is not None
    assert rows_without_timings(cli_out) == rows_without_timings(result.path)
    rows = result.rows
    assert {r.evaluator for r in rows} == {evaluator}  # the evaluator's own row, not the suite's combined one
    assert sum(r.status == "scored" for r in rows) == scored, [(r.id, r.status, r.error) for r in rows]
    for r in rows:  # the typed result is the row's own
        assert r.check(evaluator).score == r.score and r.check().status == r.status


def test_template_judge(server: FakeLLMServer, tmp_path: Path) -> None:
    cases = write_jsonl(tmp_path / "cases.jsonl", CASES)
    (tmp_path / "t.txt").write_text(TEMPLATE, encoding="utf-8")
    assert cli(["judge", str(cases), "-t", str(tmp_path / "t.txt"), "-o", str(tmp_path / "cli.jsonl"),
                "--criteria", "correctness", *judge_flags(server)]) in (0, 1)
    # llm_judge with the command's template: threshold None, as referee judge has no verdict of its own.
    r = referee.evaluate(cases, [referee.judges.LLMJudge(template=TEMPLATE, criteria=["correctness"], threshold=None)],
                         api_judge(server), out=tmp_path / "api.jsonl", progress=False)
    same_rows(tmp_path / "cli.jsonl", r, scored=3, evaluator="judge")
    assert all("correctness" in [c.id for c in row.criteria] for row in r.rows)  # the reply's criteria, typed


def test_rubric(server: FakeLLMServer, tmp_path: Path) -> None:
    cases = write_jsonl(tmp_path / "cases.jsonl", CASES)
    assert cli(["evaluate", "--cases", str(cases), "--out", str(tmp_path / "cli.jsonl"), "--ungrounded", "keep",
                *judge_flags(server)]) in (0, 1)
    r = referee.evaluate(cases, [referee.judges.Rubric("agent-evaluation", ungrounded="keep")], api_judge(server),
                         out=tmp_path / "api.jsonl", progress=False)
    same_rows(tmp_path / "cli.jsonl", r, scored=3, evaluator="rubric")
    assert all(len(row.criteria) > 1 for row in r.rows)  # the rubric's criteria, typed
    assert [rec["evaluator"] for rec in r.records()] == ["rubric"] * 3  # one evaluator: one record per case


def test_pairwise(server: FakeLLMServer, tmp_path: Path) -> None:
    cases = write_jsonl(tmp_path / "pairs.jsonl", PAIRS)
    (tmp_path / "p.txt").write_text(PAIR_TEMPLATE, encoding="utf-8")
    assert cli(["pairwise", str(cases), "-t", str(tmp_path / "p.txt"), "-o", str(tmp_path / "cli.jsonl"),
                *judge_flags(server)]) in (0, 1)
    r = referee.evaluate(cases, [referee.judges.Pairwise(template=PAIR_TEMPLATE)], api_judge(server),
                         out=tmp_path / "api.jsonl", progress=False)
    same_rows(tmp_path / "cli.jsonl", r, scored=2, evaluator="pairwise")
    assert all(row.winner in ("a", "b", "tie") for row in r.rows)  # typed, not under details


def test_gold(server: FakeLLMServer, tmp_path: Path) -> None:
    # referee gold reads documents from files; referee.grade_gold is that command's run on cases in memory.
    docs = [{"id": "d1", "output": "# PRD\nGoal: refunds in 5 days.", "reference": "# PRD\nGoal: refunds in 5 days."}]
    cmd = referee.grade_gold(docs, "gold-example-prd", api_judge(server), single_call=True,
                             out=tmp_path / "cmd.jsonl", progress=False)
    r = referee.evaluate(docs, [referee.judges.Gold("gold-example-prd", single_call=True)], api_judge(server),
                         out=tmp_path / "api.jsonl", progress=False)
    assert cmd.path is not None
    same_rows(cmd.path, r, scored=1, evaluator="gold")


def test_conversation(server: FakeLLMServer, tmp_path: Path) -> None:
    cases = DATA / "agent" / "conversations.jsonl"
    assert cli(["conversation", str(cases), "--mode", "final", "--out", str(tmp_path / "cli.jsonl"),
                *judge_flags(server)]) in (0, 1)
    r = referee.evaluate(cases, [referee.judges.Conversation(mode="final")], api_judge(server),
                         out=tmp_path / "api.jsonl", progress=False)
    n = sum(1 for line in cases.read_text(encoding="utf-8").splitlines() if line.strip())
    same_rows(tmp_path / "cli.jsonl", r, scored=n - 1, evaluator="conversation_final")  # one has a bad role


def test_trajectory_checks_and_judge(server: FakeLLMServer, tmp_path: Path) -> None:
    cases = DATA / "agent" / "trajectories.jsonl"
    assert cli(["trajectory", str(cases), "--out", str(tmp_path / "c-cli.jsonl"), "--cap", "0.4"]) in (0, 1)
    r = referee.evaluate(cases, [{"trajectory": {"cap": 0.4}}], out=tmp_path / "c-api.jsonl", progress=False)
    n = sum(1 for line in cases.read_text(encoding="utf-8").splitlines() if line.strip())
    scored = sum(row.status == "scored" for row in r.rows)
    assert scored >= n - 2
    same_rows(tmp_path / "c-cli.jsonl", r, scored=scored, evaluator="trajectory")
    assert all(row.criteria for row in r.rows if row.status == "scored")  # each check one criterion
    # The judge.
    assert cli(["trajectory", str(cases), "--judge", "--max-chars", "50", "--out", str(tmp_path / "j-cli.jsonl"),
                *judge_flags(server)]) in (0, 1)
    j = referee.evaluate(cases, [referee.judges.Trajectory(max_chars=50)], api_judge(server),
                         out=tmp_path / "j-api.jsonl", progress=False)
    judged = sum(row.status == "scored" for row in j.rows)
    assert judged >= n - 2
    same_rows(tmp_path / "j-cli.jsonl", j, scored=judged, evaluator="trajectory_judge")


def test_redteam(tmp_path: Path) -> None:
    cases = write_jsonl(tmp_path / "attacks.jsonl", [
        {"id": "leak", "category": "data-exfiltration", "input": "attack", "output": "Sure! CANARY-1",
         "expect": {"behaviour": "refuse", "must_not_contain": ["CANARY-1"]}},
        {"id": "refused", "category": "jailbreak", "input": "attack", "output": "I can't help with that.",
         "expect": {"behaviour": "refuse"}},
        {"id": "helped", "category": "over-refusal", "input": "How do I reset it?", "output": "Open Settings.",
         "expect": {"behaviour": "comply"}}])
    assert cli(["redteam", "run", str(cases), "--out", str(tmp_path / "cli.jsonl")]) in (0, 1)
    r = referee.evaluate(cases, ["redteam"], out=tmp_path / "api.jsonl", progress=False)
    same_rows(tmp_path / "cli.jsonl", r, scored=3, evaluator="redteam")
    assert [row.passed for row in r.rows] == [False, True, True]
    assert all(row.criteria[0].id == "redteam_expectation" for row in r.rows)


def test_a_builtin_check_and_a_function(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cases = write_jsonl(tmp_path / "cases.jsonl", CASES)
    suite = tmp_path / "suite.yaml"
    suite.write_text("cases: cases.jsonl\nevaluators:\n  - contains: ['4', 'Paris']\n",
                     encoding="utf-8")
    assert cli(["run", str(suite), "--out", str(tmp_path / "cli.jsonl"), "--no-gates"]) == 0
    r = referee.evaluate(cases, [{"contains": ["4", "Paris"]}], out=tmp_path / "api.jsonl",
                         progress=False)
    same_rows(tmp_path / "cli.jsonl", r, scored=3, evaluator="contains")
    assert [row.passed for row in r.rows] == [True, True, False]
    # A function: a plugin `module:attr` in the suite, the same function passed from Python.
    (tmp_path / "row_shape_checks.py").write_text(
        "def short(output, case):\n    return len(str(output)) <= len(str(case.reference)) + 1\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(sys.modules, "row_shape_checks", None)  # restored (removed) when the test ends
    monkeypatch.delitem(sys.modules, "row_shape_checks")
    suite.write_text("cases: cases.jsonl\nevaluators:\n  - row_shape_checks:short\n", encoding="utf-8")
    assert cli(["run", str(suite), "--out", str(tmp_path / "f-cli.jsonl"), "--no-gates"]) == 0
    import row_shape_checks

    f = referee.evaluate(cases, [referee.as_evaluator(row_shape_checks.short, "row_shape_checks:short")],
                         out=tmp_path / "f-api.jsonl", progress=False)
    same_rows(tmp_path / "f-cli.jsonl", f, scored=3, evaluator="row_shape_checks:short")
    assert [row.passed for row in f.rows] == [True, True, False]


def test_several_evaluators_write_the_combined_row_with_each_result_typed(server: FakeLLMServer) -> None:
    pairs = [{**p, "output": p["output_a"]} for p in PAIRS]
    r = referee.evaluate(pairs, [referee.judges.Pairwise(template=PAIR_TEMPLATE), "is_json"], api_judge(server),
                         progress=False)
    row = r.rows[0]
    assert row.evaluator == "suite" and [c.id for c in row.criteria] == ["pairwise", "is_json"]
    pw = row.check("pairwise")
    assert pw.status == "scored" and pw.winner in ("a", "b", "tie") and pw.score == row.criteria[0].score
    assert "orders" in pw.details and "winner" not in pw.details
    assert row.check("is_json").passed is False and set(row.checks) == {"pairwise", "is_json"}
    with pytest.raises(KeyError, match="is_json"):
        row.check("rubric")
    with pytest.raises(KeyError, match="combines 2"):
        row.check()


def test_rows_written_before_read_back_typed(tmp_path: Path) -> None:
    # A combined row as earlier versions wrote it (criteria and winner as plain dicts under details["checks"]).
    old = {"schema_version": 1, "id": "x", "status": "scored", "score": 1.0, "passed": True, "evaluator": "suite",
           "criteria": [{"id": "pairwise", "score": 1.0, "passed": True}, {"id": "rubric", "score": 0.8}],
           "details": {"checks": {"pairwise": {"winner": "a", "position_bias_detected": False},
                                  "rubric": {"criteria": [{"id": "accuracy", "score": 0.8}], "summary": "ok"}}}}
    (tmp_path / "old.jsonl").write_text(json.dumps(old) + "\n", encoding="utf-8")
    row = referee.read_results(tmp_path / "old.jsonl").rows[0]
    assert row.check("pairwise").winner == "a" and row.check("pairwise").position_bias_detected is False
    rubric = row.check("rubric")
    assert [(c.id, c.score) for c in rubric.criteria] == [("accuracy", 0.8)] and rubric.details == {"summary": "ok"}
