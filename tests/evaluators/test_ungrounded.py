"""Ungrounded evidence invalidates a dimension of the 5-dimension rubric (re-asked once)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.cli import cli
from referee.testing import FakeLLMServer
from tests.support.rubrics import OUTPUT, QUOTES, rubric_reply

INVENTED = {k: f"We guarantee a full refund in {n} hours and a free upgrade" for n, k in enumerate(QUOTES, 1)}
EXCELLENT = {"accuracy": 5, "groundedness": 5, "completeness": 5, "coherence": 5, "helpfulness": 5}


def _args(srv: FakeLLMServer, answer: Path, *extra: str) -> list[str]:
    return ["evaluate", str(answer), "--task", "Refund my duplicate charge", "--provider", "openai",
            "--base-url", srv.openai_base_url, "--model", "judge-1", *extra]


@pytest.fixture
def answer(tmp_path: Path) -> Path:
    p = tmp_path / "answer.md"
    p.write_text(OUTPUT)
    return p


def test_five_invented_quotes_are_not_excellent(fake_server: FakeLLMServer, answer: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    fake_server.responder = lambda req: rubric_reply(EXCELLENT, quotes=INVENTED)
    code = cli(_args(fake_server, answer, "--json-out", str(tmp_path / "v.json")))
    cap = capsys.readouterr()
    assert code == 1
    assert len(fake_server.requests) == 2  # re-asked once with the unfound quotes named
    assert "not found" in fake_server.requests[1].last_user_text
    assert "EXCELLENT" not in cap.out and "### Verdict: UNSCORED" in cap.out
    assert "assertions without grounding are invalid" in cap.err and "--ungrounded reask" in cap.err
    v = json.loads((tmp_path / "v.json").read_text())
    assert v["status"] == "unscored" and v["verdict"] is None and "score" not in v


def test_one_invented_quote_unscores_that_dimension_only(fake_server: FakeLLMServer, answer: Path,
                                                         tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake_server.responder = lambda req: rubric_reply(quotes={"helpfulness": INVENTED["helpfulness"]})
    out = tmp_path / "rows.jsonl"
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "c1", "input": "Refund my duplicate charge", "output": OUTPUT}) + "\n")
    assert cli(["evaluate", "--cases", str(cases), "--out", str(out), "--provider", "openai", "--base-url",
                fake_server.openai_base_url, "--model", "judge-1"]) == 1
    row = json.loads(out.read_text().splitlines()[0])
    assert row["status"] == "unscored" and "score" not in row
    by_id = {c["id"]: c for c in row["criteria"]}
    assert by_id["helpfulness"]["status"] == "unscored" and by_id["helpfulness"]["grounded"] is False
    assert all(by_id[k].get("status", "scored") == "scored" for k in ("accuracy", "groundedness", "completeness", "coherence"))
    assert "composite" not in row["details"]


def test_ungrounded_reask_keeps_todays_flag_only_behaviour(fake_server: FakeLLMServer, answer: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    fake_server.responder = lambda req: rubric_reply(EXCELLENT, quotes=INVENTED)
    assert cli(_args(fake_server, answer, "--ungrounded", "reask")) == 0
    out = capsys.readouterr().out
    assert "### Verdict: EXCELLENT" in out and "**Ungrounded evidence**: 5 dimension(s)" in out
