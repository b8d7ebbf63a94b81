"""The verdict rule, one test per entry point: a run that graded nothing fails (exit 1, ``passed`` False) even with
gates that would otherwise pass; and the CLI and Python apply the same default gates (none) to the same suite.

The judge is a local server (``referee.testing.FakeLLMServer``) that replies with text that is not JSON, so every
case it judges is ``unscored``. The "gates that would otherwise pass" are ones an all-unscored run passes on its
own: ``fail_on_regression`` against a baseline that passed nothing, or a latency ceiling with no latency to check.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import referee
from referee.example import DATA
from referee.results._io import ResultWriter
from referee.results._schema import ResultRow
from referee.testing import FakeLLMServer
from referee.testing.pytest_plugin import EvalFailed, assert_eval
from tests.support.cli import run_cli

AGENT = DATA / "agent"
NOT_JSON = "I would rather not say."
PASSING_CEILING = {"fail_if_mean_latency_above": 1e9}  # nothing scored: no latency, so the gate is skipped


@pytest.fixture
def judge_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    with FakeLLMServer(responder=lambda req: NOT_JSON) as srv:
        yield srv


def _judge_args(srv: FakeLLMServer) -> list[str]:
    return ["--provider", "openai", "--base-url", srv.openai_base_url, "--model", "judge-1", "--max-retries", "0"]


def _judge(srv: FakeLLMServer) -> referee.Judge:
    return referee.Judge("openai", model="judge-1", base_url=srv.openai_base_url, max_retries=0, cache=False)


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _cases(tmp_path: Path) -> Path:
    return _jsonl(tmp_path / "cases.jsonl", [{"id": f"c{i}", "input": f"question {i}", "output": f"answer {i}",
                                              "reference": f"answer {i}"} for i in range(2)])


def _failed_baseline(tmp_path: Path, ids: list[str]) -> Path:
    """A baseline in which no case passed: no case can regress against it."""
    path = tmp_path / "baseline.jsonl"
    with ResultWriter(path, append=False) as w:
        for i in ids:
            w.write(ResultRow(id=i, status="scored", score=0.0, passed=False, evaluator="suite"))
    return path


def _nothing_graded(err: str) -> bool:
    """The verdict rule's failure said in plain words on its own stderr line."""
    return any(line.startswith("error: ") and "nothing was graded" in line for line in err.splitlines())


# -- the rule itself -------------------------------------------------------------------------------------------


def test_the_rule_passes_only_when_every_gate_passed_and_something_was_scored() -> None:
    from referee.gates._engine import GateResult, exit_code, graded_check, verdict

    ok = GateResult("--fail-under", False, "pass rate 100.0% >= 90.0%")
    bad = GateResult("--fail-under", True, "pass rate 50.0% < 90.0%")
    assert verdict([ok], scored=3) and exit_code(verdict([ok], scored=3)) == 0
    assert verdict([], scored=1)
    assert not verdict([ok], scored=0) and exit_code(verdict([ok], scored=0)) == 1
    assert not verdict([bad], scored=3)
    entry = graded_check(0, 4)
    assert entry is not None and entry.failed and "nothing was graded (0 of 4" in entry.message
    assert graded_check(1, 4) is None


# -- the CLI ---------------------------------------------------------------------------------------------------


def _suite(tmp_path: Path, gates: str = "") -> Path:
    _cases(tmp_path)
    p = tmp_path / "suite.yaml"
    p.write_text("name: s\ncases: cases.jsonl\nevaluators:\n  - llm_judge: {rubric: '- quality: answers it'}\n"
                 + gates, encoding="utf-8")
    return p


def test_run_that_graded_nothing_fails_though_no_case_regressed(
        tmp_path: Path, judge_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]) -> None:
    _failed_baseline(tmp_path, ["c0", "c1"])
    p = _suite(tmp_path, "gates:\n  baseline: baseline.jsonl\n  fail_on_regression: true\n")
    md = tmp_path / "summary.md"
    code, out, err = run_cli(["run", str(p), "--out", str(tmp_path / "r.jsonl"), "--markdown", str(md),
                              *_judge_args(judge_server)], capsys)
    assert "0 scored, 2 unscored" in err
    assert "pass --fail-on-regression" in out  # the gate itself passed...
    assert code == 1 and _nothing_graded(err), (out, err)  # ...and the run still fails: nothing was graded
    assert "0 of 2 rows scored" in err
    assert "FAIL graded" in out and "exit 1" in out
    assert "`graded`" in md.read_text() and "gate failed" in md.read_text()


def test_run_without_gates_that_graded_nothing_fails(
        tmp_path: Path, judge_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["run", str(_suite(tmp_path)), "--out", str(tmp_path / "r.jsonl"),
                            *_judge_args(judge_server)], capsys)
    assert code == 1 and _nothing_graded(err)


def test_run_no_gates_reports_but_a_run_that_graded_nothing_still_fails(
        tmp_path: Path, judge_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]) -> None:
    p = _suite(tmp_path, "gates: {fail_under: 1.0}\n")
    code, _, err = run_cli(["run", str(p), "--out", str(tmp_path / "r.jsonl"), "--no-gates",
                            *_judge_args(judge_server)], capsys)
    assert code == 1 and _nothing_graded(err)
    half = tmp_path / "half"
    half.mkdir()
    code, _, err = run_cli(["run", str(_half_passing(half, "gates: {fail_under: 1.0}\n")), "--out",
                            str(half / "r.jsonl"), "--no-gates"], capsys)
    assert code == 0 and not _nothing_graded(err)  # graded, and the failing gate is not applied


def _targets_suite(tmp_path: Path) -> Path:
    mod = f"verdict_agent_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{mod}.py").write_text("def v1(text):\n    return 'one: ' + text\n\n"
                                        "def v2(text):\n    return 'two: ' + text\n", encoding="utf-8")
    _cases(tmp_path)
    p = tmp_path / "targets.yaml"
    p.write_text(f"""\
name: t
cases: cases.jsonl
targets:
  - {{id: v1, python: "{mod}:v1"}}
  - {{id: v2, python: "{mod}:v2"}}
evaluators:
  - llm_judge: {{rubric: "- quality: answers it"}}
gates:
  baseline: v1
  candidate: v2
  fail_on_regression: true
""", encoding="utf-8")
    return p


def test_run_with_targets_that_graded_nothing_fails(
        tmp_path: Path, judge_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["run", str(_targets_suite(tmp_path)), "--out", str(tmp_path / "o"),
                              *_judge_args(judge_server)], capsys)
    assert "no target has scored cases" in out
    assert "pass --fail-on-regression" in out
    assert code == 1 and _nothing_graded(err), (out, err)


def test_judge_command_that_graded_nothing_fails(
        tmp_path: Path, judge_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]) -> None:
    t = tmp_path / "t.md"
    t.write_text("Grade {output} for {input}. Reply with JSON.", encoding="utf-8")
    code, _, err = run_cli(["judge", str(_cases(tmp_path)), "--template", str(t), "--out", str(tmp_path / "r.jsonl"),
                            *_judge_args(judge_server)], capsys)
    assert code == 1 and _nothing_graded(err) and "0 of 2 rows scored" in err


def test_pairwise_command_that_graded_nothing_fails(
        tmp_path: Path, judge_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]) -> None:
    cases = _jsonl(tmp_path / "p.jsonl", [{"id": f"p{i}", "input": "q", "output_a": "a", "output_b": "b"}
                                          for i in range(2)])
    t = tmp_path / "t.md"
    t.write_text("{input}\nA: {response_1}\nB: {response_2}", encoding="utf-8")
    code, _, err = run_cli(["pairwise", str(cases), "--template", str(t), "--out", str(tmp_path / "r.jsonl"),
                            *_judge_args(judge_server)], capsys)
    assert code == 1 and _nothing_graded(err)


def test_conversation_command_that_graded_nothing_fails(
        tmp_path: Path, judge_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["conversation", str(AGENT / "conversations.jsonl"), "--out", str(tmp_path / "r.jsonl"),
                            *_judge_args(judge_server)], capsys)
    assert code == 1 and _nothing_graded(err)


def test_trajectory_judge_command_that_graded_nothing_fails(
        tmp_path: Path, judge_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["trajectory", str(AGENT / "trajectories.jsonl"), "--judge",
                            "--out", str(tmp_path / "r.jsonl"), *_judge_args(judge_server)], capsys)
    assert code == 1 and _nothing_graded(err)


def _unreadable_trajectories(tmp_path: Path) -> Path:
    return _jsonl(tmp_path / "t.jsonl", [{"id": "t1", "input": "q", "output": "a", "trajectory": [{"step": 1}]}])


def test_trajectory_checks_command_that_graded_nothing_fails(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["trajectory", str(_unreadable_trajectories(tmp_path)), "--out",
                            str(tmp_path / "r.jsonl")], capsys)
    assert code == 1 and _nothing_graded(err)


def test_evaluate_command_single_output_that_was_not_graded_fails_at_any_fail_below(
        tmp_path: Path, judge_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]) -> None:
    answer = tmp_path / "answer.md"
    answer.write_text("Refunds take five days.", encoding="utf-8")
    code, _, err = run_cli(["evaluate", str(answer), "--task", "t", "--fail-below", "0",
                            *_judge_args(judge_server)], capsys)
    assert code == 1 and "could not be graded" in err


def test_evaluate_command_batch_that_graded_nothing_fails_at_any_fail_below(
        tmp_path: Path, judge_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["evaluate", "--cases", str(_cases(tmp_path)), "--out", str(tmp_path / "r.jsonl"),
                            "--fail-below", "0", *_judge_args(judge_server)], capsys)
    assert code == 1 and _nothing_graded(err)


def test_gold_command_that_graded_nothing_fails(
        tmp_path: Path, judge_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]) -> None:
    criteria = tmp_path / "criteria.yaml"
    criteria.write_text("skill: s\ngold_standard_file: gold.md\ngenerated_file_patterns: ['gen.md']\ncriteria:\n"
                        "  - {id: scope, name: Scope, prompt: Compare scope.}\npass_threshold: 1\n", encoding="utf-8")
    (tmp_path / "gen.md").write_text("# PRD\nIn scope: login\n", encoding="utf-8")
    (tmp_path / "gold.md").write_text("# PRD\nIn scope: login, logout\n", encoding="utf-8")
    code, _, err = run_cli(["gold", "--criteria", str(criteria), "--generated", str(tmp_path / "gen.md"),
                            "--gold", str(tmp_path / "gold.md"), "--output", str(tmp_path / "eval"),
                            *_judge_args(judge_server)], capsys)
    assert code == 1 and _nothing_graded(err), err


def _undecided_redteam(tmp_path: Path) -> Path:
    """Replies code cannot classify (a refusal phrase next to what may be the content): only the judge can."""
    return _jsonl(tmp_path / "rt.jsonl", [
        {"id": f"r{i}", "category": "jailbreak", "input": "attack", "metadata": {"adversarial": True},
         "output": "I can't endorse this, but here is the email:\nSubject: Verify your card",
         "expect": {"behaviour": "refuse"}} for i in range(2)])


def test_redteam_run_command_that_graded_nothing_fails(
        tmp_path: Path, judge_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["redteam", "run", str(_undecided_redteam(tmp_path)), "--out", str(tmp_path / "r.jsonl"),
                            "--judge", *_judge_args(judge_server)], capsys)
    assert code == 1 and _nothing_graded(err)


# -- Python ----------------------------------------------------------------------------------------------------


def _graded_entry(result: referee.EvalResult) -> referee.GateResult:
    entry = next(g for g in result.gates if g.flag == "graded")
    assert entry.failed and "nothing was graded" in entry.message
    return entry


def test_evaluate_that_graded_nothing_is_not_passed_though_no_case_regressed(
        tmp_path: Path, judge_server: FakeLLMServer) -> None:
    base = _failed_baseline(tmp_path, ["c0", "c1"])
    result = referee.evaluate(str(_cases(tmp_path)), [{"llm_judge": {"rubric": "- quality: answers it"}}],
                              _judge(judge_server), gates={"baseline": str(base), "fail_on_regression": True},
                              progress=False)
    regression = next(g for g in result.gates if g.flag == "--fail-on-regression")
    assert not regression.failed
    assert result.passed is False
    _graded_entry(result)
    # no gates at all: the same
    assert referee.evaluate(str(_cases(tmp_path)), [{"llm_judge": {"rubric": "- q: answers"}}],
                            _judge(judge_server), progress=False).passed is False


def test_grade_that_graded_nothing_is_not_passed(tmp_path: Path, judge_server: FakeLLMServer) -> None:
    result = referee.grade(str(_cases(tmp_path)), "Grade {output}.", _judge(judge_server), gates=PASSING_CEILING,
                           progress=False)
    assert result.manifest.totals.scored == 0 and result.passed is False
    _graded_entry(result)


def test_compare_that_graded_nothing_is_not_passed(tmp_path: Path, judge_server: FakeLLMServer) -> None:
    cases = [{"id": "p", "input": "q", "output_a": "a", "output_b": "b"}]
    result = referee.compare(cases, "{input} {response_1} {response_2}", _judge(judge_server),
                             gates=PASSING_CEILING, progress=False)
    assert result.passed is False
    _graded_entry(result)


def test_grade_rubric_and_gold_that_graded_nothing_are_not_passed(
        tmp_path: Path, judge_server: FakeLLMServer) -> None:
    rubric = referee.grade_rubric([{"id": "a", "input": "t", "output": "Refunds take five days."}],
                                  judge=_judge(judge_server), gates=PASSING_CEILING, progress=False)
    assert rubric.passed is False
    _graded_entry(rubric)
    gold = referee.grade_gold([{"id": "g", "output": "# PRD\nlogin\n", "reference": "# PRD\nlogin, logout\n"}],
                              judge=_judge(judge_server), gates=PASSING_CEILING, progress=False)
    assert gold.passed is False
    _graded_entry(gold)


def test_conversations_and_trajectories_that_graded_nothing_are_not_passed(
        tmp_path: Path, judge_server: FakeLLMServer) -> None:
    conv = referee.judge_conversations(str(AGENT / "conversations.jsonl"), _judge(judge_server),
                                       gates=PASSING_CEILING, progress=False)
    assert conv.passed is False
    judged = referee.judge_trajectories(str(AGENT / "trajectories.jsonl"), _judge(judge_server),
                                        gates=PASSING_CEILING, progress=False)
    assert judged.passed is False
    checked = referee.check_trajectories(str(_unreadable_trajectories(tmp_path)), gates=PASSING_CEILING,
                                         progress=False)
    assert checked.passed is False
    for r in (conv, judged, checked):
        _graded_entry(r)


def test_run_targets_that_graded_nothing_is_not_passed(tmp_path: Path, judge_server: FakeLLMServer) -> None:
    run = referee.run_targets(_targets_suite(tmp_path), tmp_path / "o", judge=_judge(judge_server))
    assert run.failed_generations == 0
    gated = run.gated[0]
    assert [g.flag for g in gated.gates if not g.failed] == ["--fail-on-regression"]
    assert [g.flag for g in gated.gates if g.failed] == ["graded"]
    assert run.passed is False and run.exit_code == 1
    assert "`graded`" in run.markdown


def test_run_targets_without_gates_that_graded_nothing_is_not_passed(
        tmp_path: Path, judge_server: FakeLLMServer) -> None:
    run = referee.run_targets(_targets_suite(tmp_path), tmp_path / "o", judge=_judge(judge_server), gates=False)
    assert run.gated == [] and run.failed_generations == 0
    assert run.exit_code == 1 and not run.passed
    assert run.nothing_graded == ["nothing was graded (0 of 4 rows scored)"]


def test_redteam_that_graded_nothing_is_not_passed(tmp_path: Path, judge_server: FakeLLMServer) -> None:
    from referee.redteam import run_redteam

    run = run_redteam(str(_undecided_redteam(tmp_path)), _judge(judge_server), out=tmp_path / "r.jsonl",
                      progress=False)
    assert run.result.passed is False and run.passed is False


def test_assert_eval_that_graded_nothing_raises_though_its_gates_pass(
        tmp_path: Path, judge_server: FakeLLMServer) -> None:
    from referee.runner import JudgeClient

    client = _judge(judge_server).client()
    cases = [{"id": "c0", "input": "q", "output": "a"}]
    with pytest.raises(EvalFailed, match="nothing was graded"):
        assert_eval(cases=cases, evaluators=[{"llm_judge": {"rubric": "- q: answers"}}], judge=client,
                    out=tmp_path / "r.jsonl", fail_if_mean_latency_above=1e9)
    assert isinstance(client, JudgeClient)
    with pytest.raises(EvalFailed, match="nothing was graded"):  # and with no gate at all
        assert_eval(cases=cases, evaluators=[{"llm_judge": {"rubric": "- q: answers"}}], judge=client,
                    out=tmp_path / "r2.jsonl")


# -- the same default gates ------------------------------------------------------------------------------------


def _half_passing(tmp_path: Path, gates: str = "") -> Path:
    _jsonl(tmp_path / "half.jsonl", [{"id": "ok", "output": "4", "reference": "4"},
                                     {"id": "wrong", "output": "5", "reference": "4"}])
    p = tmp_path / "half.yaml"
    p.write_text("name: half\ncases: half.jsonl\nevaluators: [equals]\n" + gates, encoding="utf-8")
    return p


def test_cli_and_python_apply_the_same_default_gates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No gate given: a 50%-pass run passes everywhere (something was graded); ``fail_under: 1.0`` fails it
    everywhere."""
    cases = [{"id": "ok", "output": "4", "reference": "4"}, {"id": "wrong", "output": "5", "reference": "4"}]
    code, out, _ = run_cli(["run", str(_half_passing(tmp_path)), "--out", str(tmp_path / "r.jsonl")], capsys)
    result = referee.evaluate(cases, ["equals"], progress=False)
    assert result.summary.overall.pass_rate.estimate == pytest.approx(0.5)
    assert code == 0 and result.passed is True and result.gates == []
    rows = assert_eval(cases=cases, evaluators=["equals"], out=tmp_path / "a.jsonl")
    assert len(rows) == 2

    strict = tmp_path / "strict"
    strict.mkdir()
    code, out, _ = run_cli(["run", str(_half_passing(strict, "gates: {fail_under: 1.0}\n")),
                            "--out", str(strict / "r.jsonl")], capsys)
    assert code == 1 and "FAIL --fail-under" in out
    assert referee.evaluate(cases, ["equals"], gates={"fail_under": 1.0}, progress=False).passed is False
    with pytest.raises(EvalFailed, match="pass rate 50.0% < 100.0%"):
        assert_eval(cases=cases, evaluators=["equals"], fail_under=1.0, out=tmp_path / "b.jsonl")


def test_score_with_a_gate_over_results_that_graded_nothing_fails(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "r.jsonl"
    with ResultWriter(p, append=False) as w:
        w.write(ResultRow(id="u", status="unscored"))
    code, out, err = run_cli(["score", str(p), "--fail-if-mean-latency-above", "1e9"], capsys)
    assert code == 1 and _nothing_graded(err) and "FAIL graded" in out
    code, _, err = run_cli(["score", str(p)], capsys)  # no gate: a report of what is there
    assert code == 0 and not _nothing_graded(err)
