"""``referee run`` with ``targets:``: generate, evaluate, one results file per target, the comparison, the gates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from referee.cli import cli
from referee.results._io import read_results
from referee.results._manifest import RunManifest
from referee.testing import FakeLLMServer, Reply

CASES = [{"id": f"q{i}", "input": f"question {i}", "category": "billing" if i % 2 else "account"}
         for i in range(30)]

AGENT = """\
import os
CALLS = os.path.join(os.path.dirname(__file__), "calls.txt")

def _count():
    with open(CALLS, "a") as f:
        f.write("x")

def good(text):
    _count()
    return "Refunds take 5 business days: " + text

def worse(text):
    _count()
    n = int(text.split()[-1])
    if n == 7:
        raise RuntimeError("agent crashed")
    return "Refunds take 5 business days." if n % 3 else "no idea"
"""


def _suite(tmp_path: Path, mod: str, extra: str = "") -> Path:
    (tmp_path / f"{mod}.py").write_text(AGENT, encoding="utf-8")
    with open(tmp_path / "cases.jsonl", "w", encoding="utf-8") as f:
        for c in CASES:
            f.write(json.dumps(c) + "\n")
    p = tmp_path / "suite.yaml"
    p.write_text(f"""\
cases: cases.jsonl
targets:
  - id: v1
    python: {mod}:good
  - id: v2
    python: {mod}:worse
evaluators:
  - contains: {{value: "5 business days"}}
  - length: {{min: 10}}
scoring: {{mode: all_pass}}
{extra}""", encoding="utf-8")
    return p


def _calls(tmp_path: Path) -> int:
    f = tmp_path / "calls.txt"
    return len(f.read_text()) if f.exists() else 0


def test_run_generates_evaluates_compares_and_gates_the_candidate(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                                  ) -> None:
    p = _suite(tmp_path, "agent_gates", "gates:\n  baseline: v1\n  candidate: v2\n  fail_on_regression: true\n")
    out = tmp_path / "out"
    code = cli(["run", str(p), "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 1  # v2 regresses against v1 (and one generation failed)
    v1, v2 = read_results(out / "v1.jsonl").rows, read_results(out / "v2.jsonl").rows
    assert len(v1) == len(v2) == 30
    assert all(r.target is not None and r.target.id == "v1" and r.target.kind == "python" for r in v1)
    assert all(r.status == "scored" and r.passed for r in v1)
    crashed = next(r for r in v2 if r.id == "q7")
    assert crashed.status == "error" and crashed.error == "generation failed (target v2): RuntimeError: agent crashed"
    assert crashed.criteria == []  # never judged
    assert sum(1 for r in v2 if r.status == "scored" and not r.passed) == 10  # q0, q3, ..., q27
    m = RunManifest.read(out / "v2.jsonl")
    assert m is not None and m.extra["target"]["id"] == "v2" and m.extra["generation"]["failed"] == 1
    assert m.system_under_test == "agent_gates:worse"
    # outputs file: a cases file with the generated outputs, other commands read it
    outs = [json.loads(line) for line in (out / "v1.outputs.jsonl").read_text().splitlines()]
    assert outs[0]["output"].startswith("Refunds take 5 business days") and outs[0]["_generation"]["target"] == "v1"
    # the comparison table: both targets, intervals, the best named with the significance of its lead
    assert "v1" in captured.out and "v2" in captured.out and "[" in captured.out
    assert "best target: v1" in captured.out and "the lead is significant" in captured.out
    assert "gates on target v2 against baseline v1" in captured.err
    assert "1 generation(s) failed" in captured.err
    assert f"v1: generated 30 (0 reused from v1.outputs.jsonl, 0 failed); 30 scored, 0 unscored, 0 error -> " \
           f"{out / 'v1.jsonl'}\n" in captured.err  # one line per target, from totals_line
    # the existing score command compares the two files unchanged
    assert cli(["score", str(out / "v2.jsonl"), "--baseline", str(out / "v1.jsonl")]) == 0
    assert cli(["score", str(out / "v2.jsonl"), "--baseline", str(out / "v1.jsonl"), "--fail-on-regression"]) == 1


def test_an_unchanged_rerun_generates_nothing_and_a_crash_resumes(tmp_path: Path) -> None:
    p = _suite(tmp_path, "agent_rerun")
    out = tmp_path / "out"
    cli(["run", str(p), "--out", str(out), "--no-gates"])
    assert _calls(tmp_path) == 60
    cli(["run", str(p), "--out", str(out), "--no-gates"])
    assert _calls(tmp_path) == 60 + 1  # only the failed generation (q7 of v2) is tried again
    # A crash that lost the results file: the outputs already generated are reused, nothing is generated again.
    (out / "v1.jsonl").unlink()
    (out / "v1.manifest.json").unlink()
    cli(["run", str(p), "--out", str(out), "--no-gates", "--targets", "v1"])
    assert _calls(tmp_path) == 61
    rows = read_results(out / "v1.jsonl").rows
    assert len(rows) == 30 and all(r.target and r.target.reused for r in rows)


def test_changed_target_code_is_generated_again(tmp_path: Path) -> None:
    p = _suite(tmp_path, "agent_changed")
    out = tmp_path / "out"
    cli(["run", str(p), "--out", str(out), "--no-gates", "--targets", "v1"])
    (tmp_path / "agent_changed.py").write_text(AGENT + "\n# changed\n", encoding="utf-8")
    cli(["run", str(p), "--out", str(out), "--no-gates", "--targets", "v1"])
    assert _calls(tmp_path) == 60
    assert list(out.glob("v1.outputs.prev*.jsonl"))  # the other configuration's outputs are set aside, not lost


def test_targets_flag_and_bad_input_exit_2_before_any_call(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = _suite(tmp_path, "agent_bad")
    assert cli(["run", str(p), "--out", str(tmp_path / "o"), "--targets", "v1,nope"]) == 2
    assert "unknown target id(s) nope" in capsys.readouterr().err
    assert cli(["run", str(p), "--out", str(tmp_path / "o.jsonl")]) == 2
    assert "--out is a folder" in capsys.readouterr().err
    assert cli(["validate", str(p)]) == 0
    assert "2 target(s): v1, v2" in capsys.readouterr().out
    bad = tmp_path / "bad.yaml"
    bad.write_text("cases: cases.jsonl\ntargets:\n  - id: v1\n    provider: openai\n    prompt: prompts/v9.md\n"
                   "evaluators: [is_json]\n", encoding="utf-8")
    assert cli(["validate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml:5 targets[0].prompt: target 'v1': prompt file not found" in err
    assert cli(["run", str(bad), "--out", str(tmp_path / "o2")]) == 2
    assert _calls(tmp_path) == 0 and not (tmp_path / "o2").exists()
    gated = _suite(tmp_path, "agent_bad2", "gates:\n  baseline: v1\n  fail_on_regression: true\n")
    assert cli(["run", str(gated), "--out", str(tmp_path / "o3"), "--targets", "v2"]) == 2
    assert "gates.baseline 'v1' is not among the targets run" in capsys.readouterr().err
    assert _calls(tmp_path) == 0


def test_model_targets_and_judge_costs_are_kept_apart(tmp_path: Path, fake_server: FakeLLMServer,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    def responder(req: Any) -> Reply:
        if req.schema is not None:  # the judge
            return Reply(text=json.dumps({"quality": {"score": 0.9, "rationale": "ok"}, "overall_score": 0.9}),
                         input_tokens=1000, output_tokens=100)
        return Reply(text=f"answer from {req.model}", input_tokens=10, output_tokens=5)

    fake_server.responder = responder
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "v1.md").write_text("Answer: {input}", encoding="utf-8")
    (tmp_path / "prompts" / "v2.md").write_text("Answer briefly: {input}", encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES[:4]), encoding="utf-8")
    p = tmp_path / "suite.yaml"
    p.write_text(f"""\
cases: cases.jsonl
prompts: [prompts/v1.md, prompts/v2.md]
models:
  - {{provider: openai, model: small, base_url: "{fake_server.openai_base_url}",
      input_price_per_mtok: 1.0, output_price_per_mtok: 1.0}}
evaluators:
  - contains: {{value: answer}}
  - llm_judge: {{rubric: "- quality: answers the question"}}
judge: {{input_price_per_mtok: 10.0, output_price_per_mtok: 10.0}}
""", encoding="utf-8")
    out = tmp_path / "out"
    code = cli(["run", str(p), "--out", str(out), "--provider", "openai", "--base-url", fake_server.openai_base_url,
                "--model", "judge-model"])
    assert code == 0
    rows = read_results(out / "v1@small.jsonl").rows
    assert len(rows) == 4 and {r.target.prompt for r in rows if r.target} == {"prompts/v1.md"}
    r = rows[0]
    assert r.target is not None and r.target.model == "small" and r.target.provider == "openai"
    assert r.cost_usd == pytest.approx(15 / 1e6)  # the output's own cost
    assert r.details["judge_cost_usd"] == pytest.approx(1100 * 10 / 1e6)  # the judge's, apart
    gen_prompts = [q.last_user_text for q in fake_server.requests if q.schema is None]
    assert sorted(set(gen_prompts))[:1] == ["Answer briefly: question 0"]
    m = RunManifest.read(out / "v2@small.jsonl")
    assert m is not None and m.extra["generation"]["cost_usd"] == pytest.approx(4 * 15 / 1e6)
    assert m.system_under_test == "small"
    n = len(fake_server.requests)
    assert cli(["run", str(p), "--out", str(out), "--provider", "openai", "--base-url", fake_server.openai_base_url,
                "--model", "judge-model"]) == 0
    assert len(fake_server.requests) == n  # an unchanged rerun calls nothing


def test_the_examples_target_step_generates_the_after_answers_and_the_gate_catches_the_regression(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from referee.example import prepare

    prepare(tmp_path)
    code = cli(["run", str(tmp_path / "targets.yaml"), "--out", str(tmp_path / "o"), "--no-judge"])
    assert code == 1 and "FAIL --fail-on-regression" in capsys.readouterr().out
    after = {c["id"]: c["output"] for c in map(json.loads, (tmp_path / "after.jsonl").read_text().splitlines())}
    generated = [json.loads(line) for line in (tmp_path / "o" / "v2.outputs.jsonl").read_text().splitlines()]
    assert len(generated) == 12 and all(g["output"] == after[g["id"]] for g in generated)


def test_markdown_summary_for_a_pull_request_escapes_labels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = _suite(tmp_path, "agent_md", "gates:\n  baseline: v1\n  fail_on_regression: true\n")
    text = p.read_text().replace("  - length: {min: 10}", "  - id: '[click](https://evil.example) @team'\n"
                                                          "    length: {min: 10}")
    p.write_text(text, encoding="utf-8")
    step = tmp_path / "step_summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    md = tmp_path / "summary.md"
    assert cli(["run", str(p), "--out", str(tmp_path / "out"), "--markdown", str(md)]) == 1
    body = md.read_text()
    assert "| `v1` **(best)** | 100% [100%, 100%] | 1.000 | 30 |" in body
    assert "#### target `v2` against baseline `v1`" in body and "gate failed" in body
    assert "[click](" not in body and "@team" not in body  # a label is data: no link, no mention
    assert step.read_text().strip() == body.strip()


def test_a_replayed_conversation_is_what_the_judge_sees(tmp_path: Path, fake_server: FakeLLMServer,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    def responder(req: Any) -> Reply:
        if req.schema is not None:
            return Reply(text=json.dumps({"quality": {"score": 1.0, "rationale": "ok"}, "overall_score": 1.0}))
        return Reply(text=f"reply to {req.last_user_text}")

    fake_server.responder = responder
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    case = {"id": "conv", "input": "second", "turns": [{"role": "user", "content": "first"},
                                                       {"role": "assistant", "content": "RECORDED OLD REPLY"},
                                                       {"role": "user", "content": "second"}]}
    (tmp_path / "cases.jsonl").write_text(json.dumps(case) + "\n", encoding="utf-8")
    (tmp_path / "suite.yaml").write_text(f"""\
cases: cases.jsonl
targets:
  - {{id: bot, provider: openai, model: m, base_url: "{fake_server.openai_base_url}", template: "{{input}}"}}
evaluators:
  - llm_judge: {{template: "Grade this conversation: {{transcript}}"}}
""", encoding="utf-8")
    assert cli(["run", str(tmp_path / "suite.yaml"), "--out", str(tmp_path / "out"), "--provider", "openai",
                "--base-url", fake_server.openai_base_url, "--model", "judge"]) == 0
    judged = next(q for q in fake_server.requests if q.schema is not None).prompt_text
    assert "Assistant: reply to first" in judged and "Assistant: reply to second" in judged
    assert "RECORDED OLD REPLY" not in judged


def test_a_killed_run_resumes_without_generating_twice(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    (tmp_path / "slow_agent.py").write_text(
        "import os, time\n"
        "HERE = os.path.dirname(__file__)\n"
        "def answer(text):\n"
        "    time.sleep(0.05)\n"
        "    with open(os.path.join(HERE, 'calls.txt'), 'a') as f:\n"
        "        f.write(text + '\\n')\n"
        # Past 30 calls, wait for the test to have killed the run: on a busy machine it might finish first.
        "    if int(text[1:]) >= 30:\n"
        "        while not os.path.exists(os.path.join(HERE, 'go')):\n"
        "            time.sleep(0.02)\n"
        "    return 'Refunds take 5 business days: ' + text\n", encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"k{i}", "input": f"q{i}"}) + "\n"
                                                  for i in range(200)), encoding="utf-8")
    (tmp_path / "suite.yaml").write_text("cases: cases.jsonl\ntargets:\n  - {id: slow, python: 'slow_agent:answer', "
                                         "concurrency: 4}\nevaluators:\n  - contains: {value: business}\n",
                                         encoding="utf-8")
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "referee", "run", str(tmp_path / "suite.yaml"), "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    outputs = out / "slow.outputs.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not outputs.exists() or len(outputs.read_text().splitlines()) < 20):
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    (tmp_path / "go").touch()
    done_before = {json.loads(line)["id"] for line in outputs.read_text().splitlines() if line.endswith("}")}
    assert 20 <= len(done_before) < 200
    assert cli(["run", str(tmp_path / "suite.yaml"), "--out", str(out)]) == 0
    calls = (tmp_path / "calls.txt").read_text().splitlines()
    # Every case generated once, except at most the few in flight when the process was killed.
    assert set(calls) == {f"q{i}" for i in range(200)} and len(calls) <= 200 + 4
    rows = read_results(out / "slow.jsonl").rows
    assert len(rows) == 200 and all(r.status == "scored" for r in rows)


def test_gates_baseline_may_be_a_results_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    p = _suite(tmp_path, "agent_filebase")
    assert cli(["run", str(p), "--out", str(tmp_path / "first"), "--targets", "v1", "--no-gates"]) == 0
    shutil.copy(tmp_path / "first" / "v1.jsonl", tmp_path / "production.jsonl")
    p.write_text(p.read_text() + "gates:\n  baseline: production.jsonl\n  fail_on_regression: true\n",
                 encoding="utf-8")
    capsys.readouterr()
    assert cli(["run", str(p), "--out", str(tmp_path / "second"), "--targets", "v2"]) == 1
    err = capsys.readouterr().err
    assert "gates on target v2 against baseline production.jsonl" in err


def test_a_judge_grading_its_own_models_outputs_is_flagged(tmp_path: Path, fake_server: FakeLLMServer,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    fake_server.responder = lambda req: Reply(
        text=json.dumps({"quality": {"score": 0.9, "rationale": "ok"}, "overall_score": 0.9}) if req.schema
        else "an answer")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "s1", "input": "hi"}) + "\n", encoding="utf-8")
    (tmp_path / "suite.yaml").write_text(f"""\
cases: cases.jsonl
targets:
  - {{id: same, provider: openai, model: gpt-4o-mini, base_url: "{fake_server.openai_base_url}", template: "{{input}}"}}
  - {{id: other, provider: openai, model: other-model, base_url: "{fake_server.openai_base_url}", template: "{{input}}"}}
evaluators:
  - llm_judge: {{rubric: "- quality: answers"}}
""", encoding="utf-8")
    assert cli(["run", str(tmp_path / "suite.yaml"), "--out", str(tmp_path / "out"), "--provider", "openai",
                "--base-url", fake_server.openai_base_url, "--model", "gpt-4o-mini"]) == 0
    assert "self_grading" in read_results(tmp_path / "out" / "same.jsonl").rows[0].flags
    assert "self_grading" not in read_results(tmp_path / "out" / "other.jsonl").rows[0].flags


def test_outputs_holding_line_separators_are_reused_not_generated_again(tmp_path: Path) -> None:
    """U+2028 / U+0085 in an output are written unescaped (ensure_ascii=False); the outputs file is re-read
    by newlines only, so a rerun after a crash still reuses every output instead of paying for it again."""
    p = _suite(tmp_path, "agent_odd").read_text().replace("agent_odd:good", "agent_odd:odd")
    (tmp_path / "suite.yaml").write_text(p, encoding="utf-8")
    (tmp_path / "agent_odd.py").write_text(AGENT + '\n\ndef odd(text):\n    _count()\n'
                                           '    return "Refunds take 5 business days.\\u2028Line two\\u0085" + text\n',
                                           encoding="utf-8")
    out = tmp_path / "out"
    cli(["run", str(tmp_path / "suite.yaml"), "--out", str(out), "--no-gates", "--targets", "v1"])
    assert _calls(tmp_path) == 30 and "\u2028" in (out / "v1.outputs.jsonl").read_text(encoding="utf-8")
    (out / "v1.jsonl").unlink()
    (out / "v1.manifest.json").unlink()
    cli(["run", str(tmp_path / "suite.yaml"), "--out", str(out), "--no-gates", "--targets", "v1"])
    assert _calls(tmp_path) == 30  # every output reused
    rows = read_results(out / "v1.jsonl").rows
    assert len(rows) == 30 and all(r.target and r.target.reused for r in rows)
