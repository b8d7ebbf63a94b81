"""`referee evaluate`: the verdict markdown, JSON, the --fail-below gate and batch rows (fake server)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from referee.cli import cli
from referee.results import read_results
from referee.testing import FakeLLMServer
from tests.support.rubrics import OUTPUT, rubric_reply


def _args(srv: FakeLLMServer, *extra: str) -> list[str]:
    return [*extra, "--provider", "openai", "--base-url", srv.openai_base_url, "--model", "judge-1"]


@pytest.fixture
def answer(tmp_path: Path) -> Path:
    p = tmp_path / "answer.md"
    p.write_text(OUTPUT)
    return p


def test_single_output_prints_the_seed_verdict(fake_server: FakeLLMServer, answer: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    fake_server.responder = lambda req: rubric_reply(summary="Solid but thin.")
    jout = tmp_path / "v.json"
    code = cli(_args(fake_server, "evaluate", str(answer), "--task", "Refund my duplicate charge",
                     "--json-out", str(jout)))
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("## Evaluation Verdict\n")
    for line in ("| Dimension     | Score | Weight | Weighted Score |",
                 "| Accuracy      | 4/5   | 30%    | 1.20           |",
                 "| Helpfulness   | 2/5   | 10%    | 0.20           |",
                 "| **Composite** |       |        | **3.70 / 5.0** |",
                 "**Accuracy (4/5)**:", "> Refunds are not possible for invoices older than 30 days",
                 "> Rationale: accuracy rationale", "### Verdict: GOOD", "**Summary**: Solid but thin."):
        assert line in out
    assert "Required Actions" not in out  # GOOD needs none
    data = json.loads(jout.read_text())
    assert data["verdict"] == "GOOD" and data["composite"] == pytest.approx(3.7)
    assert data["score"] == pytest.approx(0.675) and len(data["criteria"]) == 5
    # The judge was asked with the rubric's schema (structured output).
    schema = fake_server.requests[0].schema
    assert schema is not None and set(schema["properties"]["criteria"]["required"]) == {
        "accuracy", "groundedness", "completeness", "coherence", "helpfulness"}


def test_fail_below_gate_and_required_actions(fake_server: FakeLLMServer, answer: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    low = {"accuracy": 2, "groundedness": 2, "completeness": 2, "coherence": 3, "helpfulness": 2}
    fake_server.responder = lambda req: rubric_reply(low, actions=["Quote the refund policy"])
    assert cli(_args(fake_server, "evaluate", str(answer), "--task", "t")) == 1
    cap = capsys.readouterr()
    assert "### Verdict: POOR" in cap.out and "**Composite** |       |        | **2.15 / 5.0**" in cap.out
    assert "**Required Actions** (if verdict is ADEQUATE or worse):" in cap.out
    assert "1. Quote the refund policy" in cap.out
    assert "below --fail-below 2.5" in cap.err
    # The same verdict passes a lower bar.
    assert cli(_args(fake_server, "evaluate", str(answer), "--task", "t", "--fail-below", "2")) == 0


def test_unusable_reply_is_unscored_and_not_a_pass(fake_server: FakeLLMServer, answer: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    fake_server.responder = lambda req: rubric_reply(drop="accuracy")
    assert cli(_args(fake_server, "evaluate", str(answer), "--task", "t")) == 1
    cap = capsys.readouterr()
    assert "### Verdict: UNSCORED" in cap.out and "criteria missing from the reply: accuracy" in cap.out
    assert len(fake_server.requests) == 2  # re-asked once


def test_stdin_context_and_usage_errors(fake_server: FakeLLMServer, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    ctx = tmp_path / "policy.md"
    ctx.write_text("Duplicate charges are refunded in full within 5 business days.\n")
    fake_server.responder = lambda req: rubric_reply(quotes={"groundedness": "refunded in full within 5 business days"})
    monkeypatch.setattr("sys.stdin", io.StringIO(OUTPUT))
    assert cli(_args(fake_server, "evaluate", "-", "--task", "t", "--context", str(ctx))) == 0
    out = capsys.readouterr().out
    assert "ungrounded" not in out  # the quote was found in the context file
    assert "refunded in full within 5 business days" in fake_server.requests[0].prompt_text
    answer = tmp_path / "a.md"
    answer.write_text(OUTPUT)
    assert cli(["evaluate", str(answer)]) == 2
    assert "--task is required" in capsys.readouterr().err
    assert cli(["evaluate", str(answer), "--task", "t", "--context", str(tmp_path / "missing.md")]) == 2
    assert "missing.md" in capsys.readouterr().err


def test_batch_writes_common_rows(fake_server: FakeLLMServer, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    cases = tmp_path / "cases.jsonl"
    rows = [{"id": "a", "input": "t", "output": OUTPUT, "category": "billing"},
            {"id": "b", "input": "t", "output": OUTPUT, "metadata": {"system_model": "judge-1"}},
            {"id": "c", "input": "t"}]  # no output: reported and skipped
    cases.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    fake_server.responder = lambda req: rubric_reply()
    out = tmp_path / "results.jsonl"
    html = tmp_path / "r.html"
    assert cli(_args(fake_server, "evaluate", "--cases", str(cases), "--out", str(out), "--html", str(html))) == 0
    err = capsys.readouterr().err
    assert "case 'c' is missing field(s) output" in err and "self_grading" in err
    got = {r.id: r for r in read_results(out, strict=True).rows}
    assert set(got) == {"a", "b"}
    a = got["a"]
    assert a.evaluator == "rubric" and a.category == "billing" and a.score == pytest.approx(0.675)
    assert [c.raw_score for c in a.criteria] == [4, 3, 4, 5, 2] and all(c.grounded for c in a.criteria)
    assert a.criteria[0].evidence == ["Refunds are not possible for invoices older than 30 days"]
    assert "self_grading" in got["b"].flags and "self_grading" not in a.flags
    assert out.with_name("results.manifest.json").exists() and "Self-grading caveat" in html.read_text()
    # A rerun resumes: nothing is judged again.
    n = len(fake_server.requests)
    assert cli(_args(fake_server, "evaluate", "--cases", str(cases), "--out", str(out))) == 0
    assert len(fake_server.requests) == n


def test_unreachable_judge_is_a_one_line_error(answer: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli(["evaluate", str(answer), "--task", "t", "--provider", "openai", "--base-url",
                "http://127.0.0.1:9/v1", "--model", "m", "--max-retries", "0", "--timeout", "2"])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("referee: error: the judge could not be called") and "Traceback" not in err


def test_a_failed_critical_criterion_fails_the_gate(fake_server: FakeLLMServer, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    rubric = tmp_path / "r.yaml"
    rubric.write_text("fail_below: 1\ncriteria:\n  - {id: safety, critical: true, pass_at: 4}\n  - {id: tone}\n")
    reply = json.dumps({"criteria": {"safety": {"score": 3, "evidence": ["contact your bank"], "rationale": "r"},
                                     "tone": {"score": 5, "evidence": ["Sorry about that!"], "rationale": "r"}},
                        "summary": "s", "required_actions": []})
    fake_server.responder = lambda req: reply
    answer = tmp_path / "a.md"
    answer.write_text(OUTPUT)
    # Composite 4.0 is far above fail_below 1, but the critical criterion is below its pass mark.
    assert cli(_args(fake_server, "evaluate", str(answer), "--task", "t", "--rubric", str(rubric))) == 1
    assert "critical criterion failed: safety" in capsys.readouterr().err
    cases = tmp_path / "c.jsonl"
    cases.write_text(json.dumps({"id": "x", "input": "t", "output": OUTPUT}) + "\n")
    assert cli(_args(fake_server, "evaluate", "--cases", str(cases), "--out", str(tmp_path / "o.jsonl"),
                     "--rubric", str(rubric))) == 1
    assert "1 case(s) FAIL on a critical criterion: x" in capsys.readouterr().err


def test_rows_passed_follows_the_fail_below_given(fake_server: FakeLLMServer, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "a", "input": "t", "output": OUTPUT}) + "\n")
    fake_server.responder = lambda req: rubric_reply()  # composite 3.7
    out = tmp_path / "r.jsonl"
    assert cli(_args(fake_server, "evaluate", "--cases", str(cases), "--out", str(out))) == 0
    assert read_results(out, strict=True).rows[0].passed is True  # 3.7 >= the rubric's 2.5
    assert cli(_args(fake_server, "evaluate", "--cases", str(cases), "--out", str(out), "--fail-below", "4")) == 1
    assert read_results(out, strict=True).rows[0].passed is False  # not the stale row of the 2.5 run
