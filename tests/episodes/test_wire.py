"""The agent as a model with tools on each wire format (OpenAI, Anthropic, Gemini), built by name, playing a whole
episode against the local server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from referee.episodes import model_agent, run_episodes, simulator
from referee.testing import FakeLLMServer, Reply
from referee.testing._wire import WireRequest
from tests.support.episodes import ENVIRONMENTS, SCENARIO, USER_MODEL, user_replies


def _tool_results(req: WireRequest) -> list[Any]:
    b = req.body
    if req.format == "openai":
        return [m["content"] for m in b["messages"] if m["role"] == "tool"]
    if req.format == "anthropic":
        return [blk["content"] for m in b["messages"] if isinstance(m["content"], list)
                for blk in m["content"] if blk.get("type") == "tool_result"]
    return [p["functionResponse"] for c in b["contents"] for p in c["parts"] if "functionResponse" in p]


def _agent(req: WireRequest) -> Reply:
    done = _tool_results(req)
    if not done:
        return Reply(tool_calls=[{"name": "get_order", "arguments": {"order_id": "A1"}}])
    if len(done) == 1:
        return Reply(tool_calls=[{"name": "refund", "arguments": {"order_id": "A1", "reason": "broken"}}])
    return Reply(text="Refunded 12.50 for order A1.")


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_an_agent_model_on_each_wire_format_plays_the_episode(fake_server: FakeLLMServer, provider: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(var, "k-test")

    def respond(req: WireRequest) -> Reply | str:
        if req.body.get("model") == USER_MODEL:
            return user_replies(str(req.body["messages"][-1]["content"]))
        return _agent(req)

    fake_server.responder = respond
    base = fake_server.openai_base_url if provider == "openai" else fake_server.url
    agent = model_agent(provider, "agent-m", base_url=base, system="Help customers.")
    sim = simulator("openai", USER_MODEL, base_url=fake_server.openai_base_url)
    [row] = run_episodes([SCENARIO], agent, sim, environments=ENVIRONMENTS).rows
    assert row.details["episode"]["termination"] == "user_stop" and row.score == 1.0
    agent_reqs = [r for r in fake_server.requests if r.format == provider and r.body.get("model") != USER_MODEL]
    assert len(agent_reqs) == 3
    last = agent_reqs[-1].body
    if provider == "gemini":
        decl = last["tools"][0]["functionDeclarations"]
        assert {d["name"] for d in decl} == {"get_order", "refund"}
        assert decl[0]["parameters"]["properties"]
        responses = _tool_results(agent_reqs[-1])
        assert [r["name"] for r in responses] == ["get_order", "refund"]
        assert responses[0]["response"]["status"] == "delivered" and responses[1]["response"] == {
            "result": "refunded 12.50"}
        assert last["systemInstruction"]["parts"][0]["text"] == "Help customers."
        assert [p for c in last["contents"] for p in c["parts"] if "functionCall" in p][0]["functionCall"] == {
            "name": "get_order", "args": {"order_id": "A1"}}
    else:
        assert json.dumps(last).count("get_order") >= 2
