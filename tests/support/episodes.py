"""Episodes played by the local LLM server from scripts: a toy shop environment, a simulated user and an agent
whose replies are functions of the conversation so far (so replies served from the response cache and replies
served live agree, as a real model's would)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from referee.episodes import ModelAgent, Simulator, tool
from referee.testing import FakeLLMServer, Reply
from referee.testing._wire import WireRequest

USER_MODEL = "user-sim"
AGENT_MODEL = "agent-1"


class Shop:
    """A toy stateful environment: orders that can be looked up and refunded."""

    def __init__(self, price: float = 12.5) -> None:
        self.state: dict[str, Any] = {"orders": {"A1": {"status": "delivered", "price": price},
                                                 "B2": {"status": "shipped", "price": 40.0}},
                                      "refunds": []}

    @tool
    def get_order(self, order_id: str) -> dict[str, Any]:
        """Look up an order by its id."""
        order = self.state["orders"].get(order_id)
        if order is None:
            raise KeyError(f"no order {order_id}")
        return {"order_id": order_id, **order}

    @tool
    def refund(self, order_id: str, reason: str = "") -> str:
        """Refund a delivered order."""
        order = self.state["orders"][order_id]
        if order["status"] != "delivered":
            raise ValueError(f"order {order_id} is {order['status']}, not delivered")
        order["status"] = "refunded"
        self.state["refunds"].append({"order_id": order_id, "amount": order["price"]})
        return f"refunded {order['price']:.2f}"


RELEASE_HUNG_TOOLS = threading.Event()
"""Set by a test to let every :class:`Hanging` tool that is still waiting return."""


class Hanging(Shop):
    """A shop whose order lookup never returns (until :data:`RELEASE_HUNG_TOOLS` is set)."""

    @tool
    def get_order(self, order_id: str) -> dict[str, Any]:
        """Look up an order by its id."""
        RELEASE_HUNG_TOOLS.wait()
        self.state["orders"]["A1"]["status"] = "changed after the episode ended"
        return {"order_id": order_id}


class ThreadBound(Shop):
    """A shop whose tools work only in the thread that made it, as a ``sqlite3`` connection does."""

    def __init__(self) -> None:
        super().__init__()
        self.owner = threading.get_ident()

    @tool
    def get_order(self, order_id: str) -> dict[str, Any]:
        """Look up an order by its id."""
        if threading.get_ident() != self.owner:
            raise RuntimeError("used from another thread")
        return {"order_id": order_id, **self.state["orders"][order_id]}


class Unhashable(Shop):
    def __init__(self) -> None:
        super().__init__()
        self.state["tags"] = {"a", "b"}  # a set: not JSON


ENVIRONMENTS = ["tests.support.episodes"]
"""The environment code the test scenarios may name (a scenario file names code only from such a list)."""

SCENARIO: dict[str, Any] = {
    "id": "refund-a1",
    "user": {"persona": "A terse customer.", "instructions": "Get a refund for order A1, which arrived broken.",
             "known": {"order_id": "A1"}, "unknown": "The order's price.", "max_turns": 4},
    "environment": {"class": "tests.support.episodes:Shop"},
    "expected": {"actions": [{"tool": "refund", "args": {"order_id": "A1", "reason": "broken"}}],
                 "outputs": ["12.50"]},
}


def openai_messages(req: WireRequest) -> list[dict[str, Any]]:
    return list(req.body.get("messages", []))


def agent_replies(messages: list[dict[str, Any]], refund_id: str = "A1") -> Reply:
    """A competent scripted agent: looks the order up, refunds it, tells the user the amount."""
    last = messages[-1]
    if last["role"] == "tool":
        prev = [m for m in messages if m["role"] == "assistant" and m.get("tool_calls")][-1]
        name = prev["tool_calls"][0]["function"]["name"]
        if name == "get_order":
            return Reply(tool_calls=[{"name": "refund", "arguments": {"order_id": refund_id, "reason": "broken"}}])
        content = json.loads(last["content"]) if last["content"].startswith(("{", '"')) else last["content"]
        return Reply(text=f"Done: {content}. Anything else?")
    users = [m for m in messages if m["role"] == "user"]
    if len(users) == 1:
        return Reply(tool_calls=[{"name": "get_order", "arguments": {"order_id": "A1"}}])
    return Reply(text="Glad to help.")


def user_replies(prompt: str) -> str:
    """A scripted user: asks for the refund, then thanks and stops."""
    agent_lines = prompt.count("\nAgent: ") + prompt.startswith("Agent: ")
    if "Agent: " not in prompt:
        return "Hi, I want a refund for order A1, it arrived broken."
    return "Thanks, that is all. ###STOP###" if agent_lines else "Hello?"


def play(server: FakeLLMServer, *, agent: Callable[[list[dict[str, Any]]], Reply] = agent_replies,
         user: Callable[[str], str] = user_replies) -> None:
    """Route the server's requests: the simulator's model gets ``user``, the agent's ``agent``."""

    def respond(req: WireRequest) -> Reply | str:
        msgs = openai_messages(req)
        if req.body.get("model") == USER_MODEL:
            return user(str(msgs[-1]["content"]))
        return agent(msgs)

    server.responder = respond


def sides(server: FakeLLMServer, *, agent_model: str = AGENT_MODEL, system: str | None = "You help customers.",
          cache: bool = True) -> tuple[ModelAgent, Simulator]:
    """An agent model with tools and a simulator, both on ``server`` (OpenAI wire format), with the cache."""
    from referee.providers._openai_compat import OpenAICompatProvider
    from referee.runner import JudgeClient, ResponseCache, RetryPolicy
    from referee.targets._wire import with_tools

    tool_cls: Any = with_tools(OpenAICompatProvider)
    agent = ModelAgent(JudgeClient(tool_cls(agent_model, base_url=server.openai_base_url, api_key="k"),
                                   cache=ResponseCache() if cache else None, retry=RetryPolicy(max_retries=0)),
                       system=system)
    sim = Simulator(JudgeClient(OpenAICompatProvider(USER_MODEL, base_url=server.openai_base_url, api_key="k"),
                                cache=ResponseCache() if cache else None, retry=RetryPolicy(max_retries=0)))
    return agent, sim


def count(server: FakeLLMServer, model: str) -> int:
    return sum(1 for r in server.requests if r.body.get("model") == model)
