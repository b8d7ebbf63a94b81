"""Pairwise reconciliation --reconcile average|strict, and both rules reported by rank."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.cli import cli
from referee.evaluators._pairwise import reconciled_score
from referee.testing import FakeLLMServer, WireRequest

TEMPLATE = "Question: {input}\n<r1>{response_1}</r1>\n<r2>{response_2}</r2>\nReply with JSON.\n"
CASES = [
    # The judge picks "4" when it is shown first and calls it a tie when it is shown second.
    {"id": "win-tie", "input": "2+2?", "output_a": "4", "output_b": "five"},
    # A consistent win for A.
    {"id": "clean", "input": "capital of France?", "output_a": "Paris", "output_b": "Lyon"},
]


def _judge(req: WireRequest) -> str:
    r1 = req.prompt_text.split("<r1>")[1].split("</r1>")[0]
    if r1 == "4":
        return json.dumps({"winner": "response_1", "rationale": "4 is right"})
    if r1 == "five":
        return json.dumps({"winner": "tie", "rationale": "both fine"})
    return json.dumps({"winner": "response_1" if r1 == "Paris" else "response_2", "rationale": "Paris"})


def test_reconciled_score_rules() -> None:
    assert reconciled_score("a", "tie", "average") == (0.75, "a", True)
    assert reconciled_score("a", "tie", "strict") == (0.5, "tie", True)
    assert reconciled_score("a", "b", "average") == (0.5, "tie", True)
    assert reconciled_score("tie", "b", "average") == (0.25, "b", True)
    assert reconciled_score("b", "b", "average") == (0.0, "b", False)


@pytest.mark.parametrize(("mode", "expected"), [("average", 0.75), ("strict", 0.5)])
def test_pairwise_reconcile_flag(tmp_path: Path, fake_server: FakeLLMServer, mode: str, expected: float) -> None:
    c = tmp_path / "pairs.jsonl"
    c.write_text("".join(json.dumps(x) + "\n" for x in CASES))
    t = tmp_path / "t.md"
    t.write_text(TEMPLATE)
    out = tmp_path / f"{mode}.jsonl"
    fake_server.responder = _judge
    assert cli(["pairwise", str(c), "-t", str(t), "-o", str(out), "--provider", "openai", "--base-url",
                fake_server.openai_base_url, "--model", "m", "--reconcile", mode,
                "--name-a", "v1", "--name-b", "v2"]) == 0
    rows = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert rows["win-tie"]["score"] == expected and rows["win-tie"]["position_bias_detected"] is True
    assert rows["win-tie"]["details"]["scores"] == {"strict": 0.5, "average": 0.75}
    assert rows["clean"]["score"] == 1.0


def test_rank_reports_both_rules(tmp_path: Path, fake_server: FakeLLMServer,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    c = tmp_path / "pairs.jsonl"
    c.write_text("".join(json.dumps(x) + "\n" for x in CASES))
    t = tmp_path / "t.md"
    t.write_text(TEMPLATE)
    out = tmp_path / "pw.jsonl"
    fake_server.responder = _judge
    assert cli(["pairwise", str(c), "-t", str(t), "-o", str(out), "--provider", "openai", "--base-url",
                fake_server.openai_base_url, "--model", "m", "--name-a", "v1", "--name-b", "v2"]) == 0
    capsys.readouterr()
    j = tmp_path / "rank.json"
    assert cli(["rank", str(out), "--json-out", str(j)]) == 0
    text = capsys.readouterr().out
    assert "Reconciliation of the two orders: strict" in text and "under both reconciliation rules" in text
    data = json.loads(j.read_text())
    assert data["reconcile"] == "strict"
    strict = data["by_reconcile"]["strict"]["pairs"][0]["win_rate_a"]["estimate"]
    average = data["by_reconcile"]["average"]["pairs"][0]["win_rate_a"]["estimate"]
    assert (strict, average) == (pytest.approx(0.75), pytest.approx(0.875))
    html = tmp_path / "lb.html"
    assert cli(["rank", str(out), "--html", str(html)]) == 0
    page = html.read_text()
    assert "under both reconciliation rules" in page and "0.750" in page and "0.875" in page
    assert cli(["rank", str(out), "--json-out", str(j), "--reconcile", "average"]) == 0
    data = json.loads(j.read_text())
    assert data["reconcile"] == "average" and data["pairs"][0]["win_rate_a"]["estimate"] == pytest.approx(0.875)
