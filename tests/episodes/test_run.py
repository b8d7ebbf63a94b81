"""Tries, pass^k against hand-computed values, paired comparison of two agent versions, and replay from the
response cache (requests counted at the local server)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from referee.episodes import PythonAgent, pass_at_k, pass_hat_k, reliability, run_episodes
from referee.testing import FakeLLMServer, Reply
from tests.support.episodes import AGENT_MODEL, ENVIRONMENTS, SCENARIO, USER_MODEL, count, play, sides

# Three customers; the agent below refunds for them on these tries (seeds) only.
SUCCEEDS = {"ana": {0, 1, 2}, "bo": {3}, "cy": {0, 1, 2, 3}}


def _case(name: str) -> dict[str, Any]:
    return {**SCENARIO, "id": name, "user": {**SCENARIO["user"], "persona": f"name={name}"}}


def _named_user(prompt: str) -> str:
    name = re.search(r"name=(\w+)", prompt)
    assert name is not None
    if "Agent: " not in prompt:
        return f"I am {name.group(1)}; refund order A1 please."
    return "OK. ###STOP###"


def _seeded_agent(conversation: list[dict[str, Any]], tools: list[dict[str, Any]], seed: int) -> dict[str, Any]:
    name = conversation[0]["content"].split()[2].rstrip(";")
    if conversation[-1]["role"] == "tool":
        return {"content": f"Done: {conversation[-1]['content']}"}
    if seed in SUCCEEDS[name]:
        return {"tool_calls": [{"name": "refund", "arguments": {"order_id": "A1"}}]}
    return {"content": "I cannot help with that."}


def test_pass_hat_k_and_pass_at_k_against_hand_computed_values(fake_server: FakeLLMServer) -> None:
    play(fake_server, user=_named_user)
    _, sim = sides(fake_server)
    run = run_episodes([_case(n) for n in SUCCEEDS], PythonAgent(_seeded_agent), sim, repeat=4,
                       environments=ENVIRONMENTS)
    assert len(run.rows) == 12 and {r.repeat for r in run.rows} == {0, 1, 2, 3}
    got = {(r.id, r.repeat): r.passed for r in run.rows}
    assert got == {(n, s): s in SUCCEEDS[n] for n in SUCCEEDS for s in range(4)}
    r1, r2 = run.reliability(1), run.reliability(2)
    # k=1: (3/4 + 1/4 + 4/4) / 3; k=2: (C(3,2)/C(4,2) + 0 + 1) / 3 = (1/2 + 0 + 1) / 3.
    assert r1.pass_hat_k.estimate == pytest.approx(2 / 3)
    assert r2.pass_hat_k.estimate == pytest.approx(0.5)
    # pass@2: 1 - C(n-c,2)/C(4,2): ana 1, bo 1 - 3/6, cy 1.
    assert r2.pass_at_k.estimate == pytest.approx((1 + 0.5 + 1) / 3)
    assert r2.pass_hat_k.lo is not None and r2.pass_hat_k.lo <= 0.5 <= (r2.pass_hat_k.hi or 0)
    assert sorted(r2.flaky) == ["ana", "bo"] and r2.per_case["ana"] == (3, 4)
    assert run.reliability(4).pass_hat_k.estimate == pytest.approx(1 / 3)
    assert run.reliability(5).too_few == ["ana", "bo", "cy"] and run.reliability(5).pass_hat_k.estimate is None


def test_formulas_refuse_impossible_counts() -> None:
    assert pass_hat_k(2, 5, 2) == pytest.approx(1 / 10) and pass_at_k(0, 5, 3) == 0.0
    for c, n, k in ((3, 2, 1), (1, 3, 0), (1, 3, 4)):
        with pytest.raises(ValueError):
            pass_hat_k(c, n, k)


def test_unscored_tries_count_neither_way() -> None:
    class R:
        def __init__(self, i: str, status: str, passed: bool | None) -> None:
            self.id, self.status, self.passed = i, status, passed

    rows = [R("a", "scored", True), R("a", "error", None), R("a", "scored", False)]
    rel = reliability(rows, 2)
    assert rel.per_case["a"] == (1, 2) and rel.pass_hat_k.estimate == 0.0 and rel.pass_at_k.estimate == 1.0


def test_two_agent_versions_compared_on_paired_episodes(fake_server: FakeLLMServer, tmp_path: Path) -> None:
    from referee.aggregate import summarize
    from referee.gates import GateConfig, evaluate_gates

    play(fake_server, user=_named_user)
    cases = [_case(n) for n in SUCCEEDS]
    _, sim = sides(fake_server)
    run_episodes(cases, PythonAgent(_seeded_agent), sim, repeat=4, out=tmp_path / "old.jsonl",
                 environments=ENVIRONMENTS)

    def worse(conversation: list[dict[str, Any]], tools: list[dict[str, Any]], seed: int) -> dict[str, Any]:
        if conversation[0]["content"].startswith("I am cy"):
            return {"content": "I cannot help with that."}
        return _seeded_agent(conversation, tools, seed)

    _, sim = sides(fake_server)
    run_episodes(cases, PythonAgent(worse), sim, repeat=4, out=tmp_path / "new.jsonl", environments=ENVIRONMENTS)
    s = summarize(tmp_path / "new.jsonl", baseline=tmp_path / "old.jsonl")
    assert s.comparison is not None and s.comparison.shared == 3
    assert [c.id for c in s.comparison.regressions] == ["cy"]
    assert s.overall.pass_all_k == pytest.approx(0.0) and s.comparison.baseline_overall.pass_all_k == pytest.approx(
        1 / 3)
    [gate] = evaluate_gates(s, GateConfig(fail_on_regression=True))
    assert gate.failed is True and "cy" in gate.message


def _three_turn_user(prompt: str) -> str:
    agent_lines = prompt.count("Agent: ")
    return ["Is order A1 delivered?", "Is it refundable?", "Thanks. ###STOP###"][min(agent_lines, 2)]


def _talker(second: str) -> Any:
    def agent(messages: list[dict[str, Any]]) -> Reply:
        users = [m for m in messages if m["role"] == "user"]
        return Reply(text="Yes, A1 is delivered, 12.50." if len(users) == 1 else second)

    return agent


def test_an_unchanged_rerun_makes_zero_calls_and_a_changed_agent_repays_from_its_first_new_reply(
        fake_server: FakeLLMServer) -> None:
    case = {**SCENARIO, "expected": {"outputs": ["12.50"]}}
    play(fake_server, user=_three_turn_user, agent=_talker("Yes, it is refundable."))
    agent, sim = sides(fake_server, system="v1")
    first = run_episodes([case], agent, sim, environments=ENVIRONMENTS).rows[0]
    assert first.score == 1.0 and (count(fake_server, USER_MODEL), count(fake_server, AGENT_MODEL)) == (3, 2)
    fake_server.requests.clear()

    agent, sim = sides(fake_server, system="v1")
    again = run_episodes([case], agent, sim, environments=ENVIRONMENTS).rows[0]
    assert fake_server.requests == []  # zero calls: every turn replayed from the cache
    assert again.details["episode"]["messages"] == first.details["episode"]["messages"]
    assert again.usage is not None and again.usage.calls == 0 and again.usage.cached_calls == 5

    # A new agent version (another system prompt): its own calls are new requests; the user's first two turns
    # read the same conversation as before and replay; only the turn after its first different reply is paid.
    play(fake_server, user=_three_turn_user, agent=_talker("No, sorry."))
    agent, sim = sides(fake_server, system="v2")
    changed = run_episodes([case], agent, sim, environments=ENVIRONMENTS).rows[0]
    assert count(fake_server, AGENT_MODEL) == 2 and count(fake_server, USER_MODEL) == 1
    assert changed.details["episode"]["messages"][3]["content"] == "No, sorry."


def test_each_try_has_its_own_user_and_agent_samples(fake_server: FakeLLMServer) -> None:
    # Two tries of one case, run at once: neither may be served the other's replies from the cache.
    play(fake_server)
    agent, sim = sides(fake_server)
    run = run_episodes([SCENARIO], agent, sim, repeat=2, seed=7, concurrency=2, environments=ENVIRONMENTS)
    assert [r.passed for r in run.rows] == [True, True]
    seeds = sorted({(r.body["model"], r.body.get("seed")) for r in fake_server.requests})
    assert seeds == [(AGENT_MODEL, 7), (AGENT_MODEL, 8), (USER_MODEL, 7), (USER_MODEL, 8)]
    assert count(fake_server, USER_MODEL) == 4 and count(fake_server, AGENT_MODEL) == 6
