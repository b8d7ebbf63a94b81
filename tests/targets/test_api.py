"""Targets from the Python API: ``referee.evaluate(..., target=...)``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import referee
from referee.testing import FakeLLMServer, Reply

CASES = [{"id": "a", "input": "refund?"}, {"id": "b", "input": "crash"}, {"id": "c", "input": "hours?"}]


def test_evaluate_runs_a_function_target_first(tmp_path: Path) -> None:
    calls: list[str] = []

    def agent(text: str) -> str:
        calls.append(text)
        if text == "crash":
            raise TimeoutError("upstream model timed out")
        return "Refunds take 5 business days." if "refund" in text else "We open at 9."

    out = tmp_path / "res.jsonl"
    result = referee.evaluate(CASES, [{"contains": {"value": "5 business days"}}], target=agent, out=out,
                              gates={"fail_under": 0.0})
    rows = {r.id: r for r in result.rows}
    assert rows["a"].passed is True and rows["c"].passed is False
    assert rows["b"].status == "error" and "TimeoutError: upstream model timed out" in (rows["b"].error or "")
    assert all(r.target is not None and r.target.id == "agent" and r.target.kind == "python" for r in result.rows)
    assert [c.output for c in result.cases] == ["Refunds take 5 business days.", None, "We open at 9."]
    assert result.manifest.extra["target"]["id"] == "agent"
    assert (tmp_path / "res.outputs.jsonl").exists()
    referee.evaluate(CASES, [{"contains": {"value": "5 business days"}}], target=agent, out=out,
                     gates={"fail_under": 0.0})
    assert calls.count("refund?") == 1 and calls.count("crash") == 2  # reused; the failure is tried again


def test_evaluate_async_with_a_model_target_inside_a_running_loop(fake_server: FakeLLMServer) -> None:
    fake_server.responder = lambda req: Reply(text=f"echo {req.last_user_text}")
    target: dict[str, Any] = {"id": "m", "provider": "openai", "model": "sut", "base_url": fake_server.openai_base_url,
                              "template": "Q: {input}"}

    async def main() -> Any:
        return await referee.evaluate_async(CASES[:1], [{"contains": {"value": "echo Q: refund?"}}], target=target)

    result = asyncio.run(main())
    assert result.passed and result.rows[0].target is not None and result.rows[0].target.model == "sut"


def test_a_replayed_conversation_through_the_conversation_judge_contract() -> None:
    seen: list[str] = []

    def judge_reply(req: Any) -> str:
        seen.append("\n".join(m.content for m in req.messages))
        crit = (req.response_schema or {}).get("properties", {})
        return json.dumps({k: {"score": 0.9, "rationale": "fine"} for k in crit if k != "overall_score"}
                          | {"overall_score": 0.9})

    def bot(case: dict[str, Any]) -> str:
        return f"bot answer {len(case['turns'])}"

    case = {"id": "c", "input": "b", "turns": [{"role": "user", "content": "a"},
                                              {"role": "assistant", "content": "OLD"},
                                              {"role": "user", "content": "b"}]}
    result = referee.evaluate([case], [referee.judges.Conversation(mode="conversation")],
                              judge=referee.Judge.fake(judge_reply), target=bot, gates={"fail_under": 0.0})
    row = result.rows[0]
    assert row.status == "scored" and row.target is not None and row.target.id == "bot"
    assert seen and "bot answer 1" in seen[0] and "bot answer 3" in seen[0] and "OLD" not in seen[0]
