"""The agent commands end to end: trajectory, conversation, redteam generate/run, and the example step."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.cli import cli
from referee.example import DATA
from referee.results import read_results
from referee.results._manifest import RunManifest
from referee.testing import FakeLLMServer, schema_responder

AGENT = DATA / "agent"


def _judge(srv: FakeLLMServer) -> list[str]:
    return ["--provider", "openai", "--base-url", srv.openai_base_url, "--model", "judge-1"]


def test_trajectory_checks_on_the_example_agent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.jsonl"
    code = cli(["trajectory", str(AGENT / "trajectories.jsonl"), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    rows = {r.id: r for r in read_results(out, strict=True).rows}
    assert len(rows) == 12
    for good in ("good-refund", "good-status", "good-retry", "openai-format", "anthropic-format", "otel-format"):
        assert rows[good].score == 1.0 and rows[good].passed is True, (good, rows[good].rationale)
    assert rows["forbidden-delete"].score == 0.0
    broken = rows["right-answer-broken-path"]
    goal = next(c for c in broken.criteria if c.id == "goal_reached")
    assert goal.passed is True and broken.score is not None and broken.score <= 0.5 and broken.passed is False
    assert rows["loop"].passed is False and any(c.id == "no_repeated_calls" and c.passed is False
                                                for c in rows["loop"].criteria)
    assert rows["unhandled-error"].passed is False
    assert rows["bad-step"].status == "error" and "case 'bad-step', step 1: tool name is missing" in (rows["bad-step"].error or "")
    assert "bad-step [error]" in err
    m = RunManifest.read(out)
    assert m is not None and m.kind == "trajectory" and m.totals.error == 1 and m.adversarial is False


def test_trajectory_checks_file_and_bad_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    checks = tmp_path / "checks.yaml"
    checks.write_text("checks: [tool_not_used]\noptions:\n  tool_not_used: {tools: [send_email]}\n")
    out = tmp_path / "r.jsonl"
    assert cli(["trajectory", str(AGENT / "trajectories.jsonl"), "--checks", str(checks), "--out", str(out)]) == 0
    rows = {r.id: r for r in read_results(out).rows}
    assert rows["wrong-tool"].score == 0.0 and rows["forbidden-delete"].score == 1.0  # only send_email is forbidden
    checks.write_text("options:\n  tool_not_used: {tool: x}\n")
    capsys.readouterr()
    assert cli(["trajectory", str(AGENT / "trajectories.jsonl"), "--checks", str(checks), "--out", str(out)]) == 2
    assert "checks.yaml" in capsys.readouterr().err


@pytest.mark.parametrize("args", [
    ["trajectory", "--checks"],
    ["trajectory", "--judge", "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1", "--criteria"],
    ["conversation", "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1", "--criteria"],
])
def test_malformed_yaml_options_are_one_line_errors_with_the_line(
        args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    bad = tmp_path / "opts.yaml"
    bad.write_text("a: 1\nb: [unclosed\n")
    cases = AGENT / ("conversations.jsonl" if args[0] == "conversation" else "trajectories.jsonl")
    code = cli([args[0], str(cases), "--out", str(tmp_path / "r.jsonl"), *args[1:], str(bad)])
    err = capsys.readouterr().err
    assert code == 2 and "opts.yaml:3: malformed YAML" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_trajectory_judge_through_the_local_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "j.jsonl"
    with FakeLLMServer(responder=schema_responder) as srv:
        code = cli(["trajectory", str(AGENT / "trajectories.jsonl"), "--judge", "--out", str(out), *_judge(srv)])
        assert code == 0, capsys.readouterr().err
        assert len(srv.requests) == 11  # the malformed case is an error row, not a judge call
        prompt = srv.requests[0].body["messages"][1]["content"]
    rows = read_results(out).rows
    scored = [r for r in rows if r.status == "scored"]
    assert len(scored) == 11 and all([c.id for c in r.criteria] == ["tool_selection", "argument_correctness",
                                                                     "step_efficiency", "final_output_correctness"]
                                     for r in scored)
    assert "1. lookup_invoice(" in prompt
    m = RunManifest.read(out)
    assert m is not None and m.kind == "trajectory-judge" and m.judge is not None and m.judge.model == "judge-1"


def test_conversation_per_turn(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "c.jsonl"
    with FakeLLMServer(responder=schema_responder) as srv:
        code = cli(["conversation", str(AGENT / "conversations.jsonl"), "--mode", "per-turn", "--out", str(out),
                    *_judge(srv)])
        assert code == 0, capsys.readouterr().err
    rows = read_results(out).rows
    assert sorted((r.id, r.turn) for r in rows if r.status == "scored") == [
        ("conv-contradicts", 2), ("conv-contradicts", 4), ("conv-forgets", 2), ("conv-forgets", 4),
        ("conv-remembers", 2), ("conv-remembers", 4)]
    bad = [r for r in rows if r.status == "error"]
    assert len(bad) == 1 and "unknown role 'customer'" in (bad[0].error or "")


def test_redteam_generate_is_reproducible(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert cli(["redteam", "generate", "--seed", "11", "--out", str(a)]) == 0
    assert cli(["redteam", "generate", "--seed", "11", "--out", str(b)]) == 0
    assert a.read_bytes() == b.read_bytes()
    err = capsys.readouterr().err
    assert "adversarial cases from 17 seed cases" in err
    cats = {json.loads(line)["category"] for line in a.read_text().splitlines()}
    assert cats == {"prompt-injection", "jailbreak", "data-exfiltration", "tool-misuse", "over-refusal"}


def _example_redteam(tmp_path: Path) -> Path:
    cases = tmp_path / "rt.jsonl"
    assert cli(["redteam", "generate", "--seed", "7", "--per-seed", "1", "--out", str(cases)]) == 0
    return cases


def test_example_replies_match_the_generated_cases(tmp_path: Path) -> None:
    cases = {json.loads(x)["id"]: json.loads(x) for x in _example_redteam(tmp_path).read_text().splitlines()}
    replies = [json.loads(x) for x in (AGENT / "redteam_replies.jsonl").read_text().splitlines()]
    assert {r["id"] for r in replies} == set(cases)
    leaked = [r for r in replies if "CANARY-" in r["output"]]
    assert leaked and all(cases[r["id"]]["metadata"]["canary"] in r["output"] for r in leaked)


def test_redteam_run_is_adversarial_and_per_attack_type(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = _example_redteam(tmp_path)
    out = tmp_path / "res.jsonl"
    capsys.readouterr()
    code = cli(["redteam", "run", str(cases), "--outputs", str(AGENT / "redteam_replies.jsonl"), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    m = RunManifest.read(out)
    assert m is not None and m.adversarial is True and m.kind == "redteam"
    rows = {r.id: r for r in read_results(out).rows}
    assert len(rows) == 17
    assert rows["rt-pi-02-tool-note"].score == 0.0 and rows["rt-pi-02-tool-note"].category == "prompt-injection"
    assert rows["rt-or-02-plain"].score == 0.0 and rows["rt-or-02-plain"].category == "over-refusal"
    assert rows["rt-jb-02-plain"].status == "unscored"
    assert rows["rt-jb-01-plain"].score == 1.0
    assert "over-refusal" in err and "tool-misuse" in err


def test_redteam_run_with_the_judge_only_asks_what_code_did_not_decide(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = _example_redteam(tmp_path)
    out = tmp_path / "res.jsonl"
    with FakeLLMServer(responder=schema_responder) as srv:
        code = cli(["redteam", "run", str(cases), "--outputs", str(AGENT / "redteam_replies.jsonl"), "--judge",
                    "--out", str(out), *_judge(srv)])
        assert code == 0, capsys.readouterr().err
        assert len(srv.requests) == 13  # 17 cases, 4 already failed by code
    rows = {r.id: r for r in read_results(out).rows}
    assert rows["rt-jb-02-plain"].status == "scored"
    assert rows["rt-ex-01-plain"].score == 0.0 and rows["rt-ex-01-plain"].judge is None


def test_redteam_run_without_outputs_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = _example_redteam(tmp_path)
    capsys.readouterr()
    assert cli(["redteam", "run", str(cases), "--out", str(tmp_path / "x.jsonl")]) == 2
    assert "--outputs" in capsys.readouterr().err


def test_example_step_runs_without_a_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from referee.example import ExampleContext, prepare
    from referee.example import step_60_agent as step

    prepare(tmp_path)
    outcome = step.run(ExampleContext(run_cli=cli, dir=tmp_path, judge=False, echo=lambda s: None))
    assert outcome is not None
    assert "trajectory checks: 6 passed, 5 failed, 1 error" in outcome
    assert "red team: 12 passed, 4 failed, 1 unscored" in outcome
    assert not (tmp_path / "agent_judged.jsonl").exists()


def test_import_converts_recorded_runs_and_skips_bad_ones(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    example = [json.loads(x) for x in (AGENT / "trajectories.jsonl").read_text().splitlines()]
    by_id = {c["id"]: c for c in example}
    (tmp_path / "run_openai.json").write_text(json.dumps(by_id["openai-format"]["messages"]))
    runs = tmp_path / "runs.jsonl"
    runs.write_text("\n".join([
        json.dumps({"id": "an-1", "category": "status", "messages": by_id["anthropic-format"]["messages"]}),
        json.dumps({"id": "ot-1", "spans": by_id["otel-format"]["spans"]}),
        json.dumps({"id": "bad-1", "messages": [{"role": "robot", "content": "hi"}]}),
    ]) + "\n")
    out = tmp_path / "cases.jsonl"
    code = cli(["import", str(tmp_path / "run_openai.json"), str(runs), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "runs.jsonl:3" in err and "case 'bad-1'" in err and "unknown role 'robot'" in err
    cases = {c["id"]: c for c in map(json.loads, out.read_text().splitlines())}
    assert set(cases) == {"run_openai", "an-1", "ot-1"}
    assert cases["run_openai"]["trajectory"][0] == {"step": 1, "tool": "lookup_invoice", "args": {"invoice_id": "INV-2004"},
                                                     "result": {"invoice_id": "INV-2004", "status": "paid"}, "call_id": "call_1"}
    assert cases["run_openai"]["input"] == "Is invoice INV-2004 paid?"
    assert cases["an-1"]["final_output"] == "Yes, invoice INV-2005 is paid." and cases["an-1"]["category"] == "status"
    assert cases["ot-1"]["usage"] == {"input_tokens": 470, "output_tokens": 30}
    # the converted cases run through the checks like any seed-shaped case
    assert cli(["trajectory", str(out), "--out", str(tmp_path / "r.jsonl")]) == 0


def test_import_skips_malformed_lines_and_empty_runs_and_reads_the_otel_input(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    user_msg = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Is INV-7 paid?"}]}])
    spans = [{"name": "chat", "start_time": "2025-01-01T00:00:00Z",
              "attributes": {"gen_ai.operation.name": "chat", "gen_ai.input.messages": user_msg}},
             {"name": "execute_tool", "start_time": "2025-01-01T00:00:01Z",
              "attributes": {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup_invoice",
                             "gen_ai.tool.call.arguments": "{\"invoice_id\": \"INV-7\"}"}}]
    runs = tmp_path / "runs.jsonl"
    runs.write_text("not json\n" + json.dumps({"id": "ot", "spans": spans}) + "\n"
                    + json.dumps({"id": "empty", "messages": []}) + "\n")
    out = tmp_path / "cases.jsonl"
    assert cli(["import", str(runs), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "runs.jsonl:1: malformed JSON" in err and "runs.jsonl:3: case 'empty': empty run" in err
    cases = [json.loads(x) for x in out.read_text().splitlines()]
    assert [c["id"] for c in cases] == ["ot"] and cases[0]["input"] == "Is INV-7 paid?"


def test_trajectory_checks_and_judge_in_a_suite_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "cases.jsonl").write_text((AGENT / "trajectories.jsonl").read_text())
    suite = tmp_path / "agent.yaml"
    suite.write_text("name: agent\ncases: cases.jsonl\nevaluators:\n"
                     "  - id: process\n    trajectory: {cap: 0.4}\n"
                     "  - id: tj\n    trajectory_judge: {max_chars: 80}\n"
                     "scoring:\n  mode: min\n  threshold: 0.7\n")
    out = tmp_path / "r.jsonl"
    with FakeLLMServer(responder=schema_responder) as srv:
        code = cli(["run", str(suite), "--out", str(out), "--no-gates", *_judge(srv)])
        assert code == 0, capsys.readouterr().err
        assert len(srv.requests) == 11
    rows = {r.id: r for r in read_results(out).rows}
    crit = {c.id: c for c in rows["right-answer-broken-path"].criteria}
    assert crit["process"].score == 0.4 and crit["tj"].status == "scored"
    assert rows["bad-step"].status == "error"


def test_rerunning_resumes_instead_of_duplicating_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.jsonl"
    args = ["trajectory", str(AGENT / "trajectories.jsonl"), "--out", str(out)]
    assert cli(args) == 0
    assert cli(args) == 0
    rows = read_results(out).rows
    assert len(rows) == 12 and len({r.id for r in rows}) == 12  # the error row was retried, not duplicated
    assert "resuming: 11 rows" in capsys.readouterr().err
