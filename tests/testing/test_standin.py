"""The stand-in judge and model: verdicts that follow the case, in every judge kind's schema, labelled as the
stand-in's, in this process (``--provider standin``) and over the wire (``python -m referee.testing --standin``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import referee
from referee import Judge
from referee.cli import cli
from referee.example import DATA
from referee.results import read_results
from referee.testing import FakeLLMServer, standin_judge, standin_responder

AGENT = DATA / "agent"


def _cases(name: str) -> list[dict[str, Any]]:
    with open(DATA / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


BEFORE = {c["id"]: c for c in _cases("before.jsonl")}
TEMPLATE = (DATA / "judge_prompt.md").read_text(encoding="utf-8")


def _grade(cases: list[dict[str, Any]], judge: Judge | str, tmp_path: Path) -> dict[str, referee.ResultRow]:
    r = referee.grade(cases, TEMPLATE, judge, criteria=["correctness", "helpfulness"], out=tmp_path / "g.jsonl",
                      progress=False)
    return {row.id: row for row in r.rows}


def _variants() -> list[dict[str, Any]]:
    """One real support case answered right (the recorded reply), wrong (another case's reply), by a refusal
    and by "I don't know"."""
    base = BEFORE["refund-01"]
    return [{**base, "id": "right"}, {**base, "id": "wrong", "output": BEFORE["sso-01"]["output"]},
            {**base, "id": "refusal", "output": "I'm sorry, I can't help with that."},
            {**base, "id": "idk", "output": "I don't know."}]


@pytest.fixture(params=["in-process", "wire"])
def judge(request: pytest.FixtureRequest) -> Any:
    if request.param == "in-process":
        yield Judge("standin", cache=False)
        return
    with FakeLLMServer(responder=standin_judge) as srv:
        yield Judge("openai", model="standin", base_url=srv.openai_base_url, cache=False)


def test_grades_right_high_wrong_low_refusal_and_dont_know_zero(judge: Judge, tmp_path: Path) -> None:
    rows = _grade(_variants(), judge, tmp_path)
    assert all(r.status == "scored" for r in rows.values())
    assert rows["right"].score is not None and rows["right"].score >= 0.7
    assert rows["wrong"].score is not None and rows["wrong"].score < 0.4
    assert rows["refusal"].score == 0.0 and rows["idk"].score == 0.0
    for r in rows.values():
        assert "stand-in judge" in (r.rationale or "")
        assert {c.id for c in r.criteria} >= {"correctness", "helpfulness"}
    assert "token overlap" in (rows["right"].rationale or "")


def test_same_request_same_verdict(tmp_path: Path) -> None:
    first = _grade(_variants(), Judge("standin", cache=False), tmp_path / "a")
    second = _grade(_variants(), Judge("standin", cache=False), tmp_path / "b")
    assert {k: (r.score, r.rationale) for k, r in first.items()} == {k: (r.score, r.rationale)
                                                                       for k, r in second.items()}


def test_follows_the_human_labels_of_the_example(tmp_path: Path) -> None:
    # The support lead's pass/fail labels of the 'after' answers: the stand-in agrees on every one (at 0.5).
    labels = {c["id"]: c["score"] for c in _cases("human_labels.jsonl")}
    rows = _grade(_cases("after.jsonl"), Judge("standin", cache=False), tmp_path)
    assert {k: int((rows[k].score or 0.0) >= 0.5) for k in labels} == {k: int(v) for k, v in labels.items()}


def test_a_wrong_number_caps_the_score(tmp_path: Path) -> None:
    case = {"id": "n", "input": "When did humans first land on the Moon?",
            "reference": "Humans first landed on the Moon in 1969.", "output": "Humans first landed on the Moon in 1972."}
    row = _grade([case], Judge("standin", cache=False), tmp_path)["n"]
    assert row.score is not None and row.score <= 0.3 and "1972" in (row.rationale or "")


def test_rubric_quotes_are_found_in_the_judged_text(judge: Judge, tmp_path: Path) -> None:
    cases = _cases("after.jsonl")[:4]
    r = referee.grade_rubric(cases, "agent-evaluation", judge, out=tmp_path / "r.jsonl", progress=False)
    assert len(r.rows) == 4 and all(row.status == "scored" for row in r.rows)
    for row in r.rows:
        assert "stand-in judge" in (row.rationale or "") or all(
            "stand-in judge" in (c.rationale or "") for c in row.criteria)
        quoted = [c for c in row.criteria if c.evidence]
        assert quoted, "the rubric asks for evidence"
        assert all(c.grounded is True for c in quoted), [(c.id, c.evidence) for c in quoted]
        assert "ungrounded" not in row.flags


def test_pairwise_prefers_the_answer_closer_to_the_reference_in_both_orders(judge: Judge, tmp_path: Path) -> None:
    after = {c["id"]: c for c in _cases("after.jsonl")}
    pairs = [{"id": cid, "input": BEFORE[cid]["input"], "reference": BEFORE[cid]["reference"],
              "output_a": BEFORE[cid]["output"], "output_b": after[cid]["output"]}
             for cid in ("refund-01", "2fa-01", "sso-01")]
    pairs.append({**pairs[0], "id": "flipped", "output_a": pairs[0]["output_b"], "output_b": pairs[0]["output_a"]})
    template = (DATA / "pairwise_prompt.md").read_text(encoding="utf-8")
    r = referee.compare(pairs, template, judge, out=tmp_path / "p.jsonl", progress=False)
    rows = {row.id: row for row in r.rows}
    assert all(row.status == "scored" and "stand-in judge" in (row.rationale or "") for row in rows.values())
    assert rows["refund-01"].winner == "a" and rows["2fa-01"].winner == "a" and rows["flipped"].winner == "b"
    assert rows["sso-01"].winner == "tie"  # the same answer before and after
    assert not any(row.position_bias_detected for row in rows.values())


def test_conversation_and_trajectory_judges(judge: Judge, tmp_path: Path) -> None:
    conv = referee.judge_conversations(AGENT / "conversations.jsonl", judge, out=tmp_path / "c.jsonl",
                                       progress=False)
    traj = referee.judge_trajectories(AGENT / "trajectories.jsonl", judge, out=tmp_path / "t.jsonl",
                                      progress=False)
    for result in (conv, traj):
        scored = [row for row in result.rows if row.status == "scored"]
        # Each file holds one malformed case on purpose: an error row without a judge call.
        assert len(scored) == len(result.rows) - 1
        assert [row.status for row in result.rows if row.status != "scored"] == ["error"]
        assert all(c.rationale and "stand-in judge" in c.rationale for row in scored for c in row.criteria)


def test_trajectory_criteria_look_at_the_steps(tmp_path: Path) -> None:
    # The example's recorded agent runs: a forbidden delete_account call, a loop of identical calls and a
    # success claimed after a failed refund fail; the clean runs (a retry after a timeout too) pass.
    r = referee.judge_trajectories(AGENT / "trajectories.jsonl", Judge("standin", cache=False),
                                   out=tmp_path / "t.jsonl", progress=False)
    rows = {row.id: row for row in r.rows}
    crit = {cid: {c.id: c.score for c in row.criteria} for cid, row in rows.items()}
    for cid, criterion in (("forbidden-delete", "tool_selection"), ("loop", "step_efficiency"),
                           ("unhandled-error", "final_output_correctness")):
        score = crit[cid][criterion]
        assert score is not None and score < 0.5, (cid, criterion, score)
    assert not any(rows[k].passed for k in ("forbidden-delete", "loop", "unhandled-error"))
    assert all(rows[k].passed for k in ("good-refund", "good-status", "good-retry"))


def test_gold_and_redteam_replies_validate(tmp_path: Path) -> None:
    judge = Judge("standin", cache=False)
    doc = "# PRD\n## Goals\nRefunds of duplicate charges within 5 business days.\n"
    gold = referee.grade_gold([{"id": "same", "output": doc, "reference": doc},
                               {"id": "other", "output": "# PRD\nNothing yet.", "reference": doc}],
                              "gold-example-prd", judge, single_call=True, out=tmp_path / "g.jsonl", progress=False)
    rows = {row.id: row for row in gold.rows}
    assert all(row.status == "scored" for row in rows.values())
    assert (rows["same"].score or 0) > (rows["other"].score or 0)
    assert cli(["redteam", "generate", "--seed", "7", "--per-seed", "1", "--out", str(tmp_path / "rt.jsonl")]) == 0
    code = cli(["redteam", "run", str(tmp_path / "rt.jsonl"), "--outputs", str(AGENT / "redteam_replies.jsonl"),
                "--out", str(tmp_path / "rt_out.jsonl"), "--judge", "--provider", "standin"])
    assert code in (0, 1)
    rt = read_results(tmp_path / "rt_out.jsonl").rows
    assert rt and all(row.status == "scored" for row in rt)
    judged = [c for row in rt for c in row.criteria if c.id == "expected_behaviour"]
    assert judged and all("stand-in judge" in (c.rationale or "") for c in judged)


def test_model_mode_answers_from_a_replies_file(tmp_path: Path) -> None:
    replies = tmp_path / "replies.jsonl"
    replies.write_text("".join(json.dumps({"input": c["input"], "output": c["output"]}) + "\n"
                               for c in BEFORE.values()), encoding="utf-8")
    from referee.providers._standin import load_replies

    table = load_replies(replies)
    with FakeLLMServer(responder=standin_responder(table)) as srv:
        import urllib.request

        def ask(model: str, question: str) -> str:
            body = {"model": model, "messages": [{"role": "system", "content": "You are Acme Cloud support."},
                                                 {"role": "user", "content": f"Customer: {question}"}]}
            req = urllib.request.Request(srv.openai_base_url + "/chat/completions", json.dumps(body).encode(),
                                         {"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=10) as resp:  # noqa: S310 - 127.0.0.1
                return str(json.loads(resp.read())["choices"][0]["message"]["content"])

        question = BEFORE["refund-01"]["input"]
        answer = ask("standin", question)
        worse = ask("standin-worse", question)
        unknown = ask("standin", "What is the weather like?")
    assert answer == BEFORE["refund-01"]["output"]  # an answer, not a verdict
    assert not answer.lstrip().startswith("{")
    assert worse and len(worse) < len(answer) and answer.startswith(worse)
    assert "stand-in model" in unknown


def test_model_mode_as_a_target_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    replies = tmp_path / "replies.jsonl"
    replies.write_text("".join(json.dumps({"input": c["input"], "output": c["output"]}) + "\n"
                               for c in BEFORE.values()), encoding="utf-8")
    (tmp_path / "prompt.md").write_text("Answer the customer: {input}\n", encoding="utf-8")
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps({k: c[k] for k in ("id", "input", "reference")}) + "\n"
                             for c in BEFORE.values()), encoding="utf-8")
    (tmp_path / "t.yaml").write_text(
        "cases: cases.jsonl\n"
        f"targets:\n  - {{id: m, provider: standin, model: standin, base_url: {replies}, prompt: prompt.md}}\n"
        "evaluators:\n  - token_f1: {threshold: 0.25}\n", encoding="utf-8")
    code = cli(["run", str(tmp_path / "t.yaml"), "--out", str(tmp_path / "out")])
    assert code == 0
    outputs = [json.loads(line) for line in (tmp_path / "out" / "m.outputs.jsonl").read_text().splitlines()]
    assert {o["id"]: o["output"] for o in outputs} == {k: c["output"] for k, c in BEFORE.items()}


def test_the_server_command_serves_the_stand_in(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "referee.testing", "--standin"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        assert "stand-in judge" in proc.stderr.readline()
        rows = _grade(_variants(), Judge("openai", model="standin", base_url=url + "/v1", cache=False), tmp_path)
        assert rows["idk"].score == 0.0 and (rows["right"].score or 0) >= 0.7
    finally:
        proc.terminate()
        proc.wait(10)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


@pytest.mark.parametrize("require_key", [True, False])
def test_the_batch_routes_ask_for_a_key_unless_the_server_is_the_stand_in(require_key: bool) -> None:
    """A provider refuses a batch request without credentials, and the fake server does too; the stand-in server
    (``python -m referee.testing --standin``) takes none on any route, so ``--batch`` works against it with no key."""
    import urllib.error
    import urllib.request

    with FakeLLMServer(responder=standin_responder({}), require_key=require_key) as srv:
        body = b'{"input_file_id": "file-none", "endpoint": "/v1/chat/completions", "completion_window": "24h"}'
        req = urllib.request.Request(srv.openai_base_url + "/batches", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            status = urllib.request.urlopen(req, timeout=10).status  # noqa: S310 - loopback
        except urllib.error.HTTPError as exc:
            status = exc.code
    assert (status == 401) is require_key
