"""One episode: the simulated user and the agent alternate, the agent's tool calls run against the environment.

The loop ends on the first of: the user's stop token (``user_stop``), the agent's stop token (``agent_stop``),
``max_turns`` user messages, the agent calling one tool with the same arguments ``repeat_limit`` times in a row
(``agent_loop``), ``max_steps`` model calls in one agent turn (``agent_max_steps``), the agent failing
(``agent_error``), the simulator failing (``user_error``) or naming a gold action (``user_leak``). Everything is
recorded: the transcript with every tool call and result, the tool calls as trajectory steps (so the trajectory
checks read the episode as any run), the initial and final states and their diff.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import ProviderError
from ..providers._standin import NO_REPLY, is_standin
from ..trajectories._model import Step
from ._agents import Agent, AgentFailed, AgentTurn
from ._environment import Environment, EnvironmentFailed, state_diff
from ._scenario import GoldAction, Scenario
from ._simulator import Simulator

AGENT_STOP_TOKEN = "###TRANSFER###"
"""What an agent writes to hand the conversation over (tau2's transfer token): a normal end."""
NORMAL_ENDS = ("user_stop", "agent_stop")
"""Ends after which the episode is graded; every other end is premature and its reward is 0."""
TERMINATIONS = ("user_stop", "agent_stop", "max_turns", "agent_loop", "agent_max_steps", "agent_error",
                "user_error", "user_leak", "user_silent", "environment_error")


@dataclass
class Limits:
    """The agent's limits in an episode (the user's is its scenario's ``max_turns``)."""

    max_steps: int = 20
    """Model calls in one agent turn (each may make tool calls) before the turn is cut: ``agent_max_steps``."""
    repeat_limit: int = 5
    """The same tool call (tool and arguments) this many times in a row ends the episode: ``agent_loop``."""
    tool_timeout: float | None = None
    """Seconds one tool call may take; past it the episode ends as ``environment_error`` (a tool that hangs is
    the environment's failure, never the agent's, and never stops the other episodes). With a bound each call
    runs in a worker thread, so an environment holding thread-bound handles (a ``sqlite3`` connection) needs
    them opened with ``check_same_thread=False``; None (the default): tools run in the episode's own thread."""

    def __post_init__(self) -> None:
        t = self.tool_timeout
        if t is None:
            return
        if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t) or t <= 0:
            raise ValueError(f"tool_timeout must be a finite number of seconds > 0, got {t!r}")


async def _bounded(fn: Callable[..., Any], *args: Any, timeout: float) -> Any:
    """``fn(*args)`` in a daemon thread of its own, awaited at most ``timeout`` seconds (asyncio.TimeoutError past
    it). Not the default executor: its threads are joined when the interpreter exits, so a hung tool would hang
    the process; a daemon thread is left behind instead."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[Any] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if not fut.done():
            (fut.set_result if ok else fut.set_exception)(value)

    def run() -> None:
        try:
            outcome: tuple[bool, Any] = (True, fn(*args))
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting episode
            outcome = (False, exc)
        try:
            loop.call_soon_threadsafe(settle, *outcome)
        except RuntimeError:  # the run is over (its loop closed): nobody waits for a tool that returned too late
            pass

    threading.Thread(target=run, name="referee-tool", daemon=True).start()
    return await asyncio.wait_for(fut, timeout)


@dataclass
class Spend:
    calls: int = 0
    cached: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None

    def add(self, inp: int | None, out: int | None, cost: float | None, cached: bool) -> None:
        self.cached += cached
        self.calls += not cached
        self.input_tokens += inp or 0
        self.output_tokens += out or 0
        if cost is not None:
            self.cost_usd = round((self.cost_usd or 0.0) + cost, 8)

    def to_dict(self) -> dict[str, Any]:
        return {"calls": self.calls, "cached_calls": self.cached, "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens, "cost_usd": self.cost_usd}


@dataclass
class Episode:
    """What one episode did: the transcript, the tool calls as steps, how it ended, the states and the spend."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    """The whole conversation, neutral messages (user, assistant with tool_calls, tool results)."""
    steps: list[dict[str, Any]] = field(default_factory=list)
    """The agent's tool calls as trajectory steps (the seed shape)."""
    termination: str = "max_turns"
    error: str | None = None
    user_turns: int = 0
    initial_state: Any = None
    final_state: Any = None
    final_hash: str | None = None
    flags: list[str] = field(default_factory=list)
    agent: Spend = field(default_factory=Spend)
    user: Spend = field(default_factory=Spend)
    latency_ms: float = 0.0

    @property
    def normal_end(self) -> bool:
        return self.termination in NORMAL_ENDS

    @property
    def final_output(self) -> str | None:
        for m in reversed(self.messages):
            if m["role"] == "assistant" and m.get("content"):
                return str(m["content"])
        return None

    def turns(self) -> list[dict[str, Any]]:
        """The words of the conversation (user and assistant text), the shape the conversation judge reads."""
        return [{"role": m["role"], "content": m["content"]} for m in self.messages
                if m["role"] in ("user", "assistant") and m.get("content")]

    def to_record(self) -> dict[str, Any]:
        return {"termination": self.termination, "error": self.error, "user_turns": self.user_turns,
                "messages": self.messages, "final_hash": self.final_hash,
                "state_diff": state_diff(self.initial_state, self.final_state, limit=100),
                "agent_usage": self.agent.to_dict(), "user_usage": self.user.to_dict(), "flags": self.flags}


def _strip_token(text: str, tokens: list[str]) -> tuple[str, bool]:
    hit = False
    for t in tokens:
        if t in text:
            hit = True
            text = text.replace(t, "")
    return text.strip(), hit


def names_gold_action(text: str, gold: list[GoldAction]) -> str | None:
    """The gold action a user message spells out (its tool's identifier used as one, ``refund_order`` or
    ``refund(``), else None: the simulator never sees ``expected:``, so this is a leak from elsewhere (a
    scenario that quotes the answer) and the episode no longer tests the agent."""
    for a in gold:
        call = re.search(rf"\b{re.escape(a.tool)}\s*\(", text)
        ident = "_" in a.tool and re.search(rf"(?<![\w]){re.escape(a.tool)}(?![\w])", text)
        if call or ident:
            return a.tool
    return None


async def run_episode(scenario: Scenario, env: Environment, agent: Agent, simulator: Simulator, *,
                      limits: Limits | None = None, seed: int | None = None) -> Episode:
    """Play one episode to its end; never raises for the agent, the simulator or a tool failing (the end and
    its reason are recorded). An environment whose state cannot be hashed ends as ``environment_error``."""
    limits = limits or Limits()
    user = scenario.user
    ep = Episode()
    t0 = time.perf_counter()
    try:  # an unhashable state is found before anything is paid for
        ep.initial_state = env.snapshot()
        env.state_hash()
    except EnvironmentFailed as exc:
        ep.termination, ep.error = "environment_error", str(exc)
        return ep
    except Exception as exc:  # noqa: BLE001 - the user's copy hook
        ep.termination, ep.error = "environment_error", f"the state cannot be copied: {type(exc).__name__}: {exc}"
        return ep
    tools = env.tool_schemas()
    gold = scenario.expected.actions or []
    last_sig: str | None = None
    same = 0
    done = hung = False
    while not done:
        if ep.user_turns >= user.max_turns:
            ep.termination = "max_turns"
            break
        # -- the user's turn
        if ep.user_turns == 0 and user.first_message is not None:
            text = user.first_message
        else:
            sim = simulator.request(user, ep.messages, seed)
            try:
                c = await simulator.client.complete(sim, use_cache=simulator.use_cache)
            except ProviderError as exc:
                ep.termination, ep.error = "user_error", f"the simulated user failed: {exc}"
                break
            ep.user.add(c.input_tokens, c.output_tokens, simulator.client.cost_of(c), c.cached)
            text = c.text.strip()
            if text == NO_REPLY and is_standin(simulator.client.provider):
                ep.termination, ep.error = "user_silent", (
                    "the stand-in user has no recorded reply at user turn "
                    f"{ep.user_turns + 1}{' (the scenario has no first_message)' if ep.user_turns == 0 else ''}: "
                    "give it a replies file (--user-base-url replies.jsonl, docs/agents.md) or a real model "
                    "(--user-model)")
                break
        text, stopped = _strip_token(text, user.stop_tokens)
        ep.user_turns += 1
        if text:
            ep.messages.append({"role": "user", "content": text})
            leaked = names_gold_action(text, gold)
            if leaked is not None:
                ep.flags.append("user_named_gold_action")
                ep.termination, ep.error = "user_leak", (f"the simulated user named the gold action '{leaked}': "
                                                         "the episode does not test the agent")
                break
        if stopped:
            ep.termination = "user_stop"
            break
        if not text:
            ep.termination, ep.error = "user_error", "the simulated user wrote nothing"
            break
        # -- the agent's turn: model calls until it answers the user in words
        for _ in range(limits.max_steps):
            try:
                turn: AgentTurn = await agent.turn(ep.messages, tools, seed)
            except (AgentFailed, ProviderError) as exc:
                ep.termination, ep.error = "agent_error", f"the agent failed: {exc}"
                done = True
                break
            ep.agent.add(turn.input_tokens, turn.output_tokens, turn.cost_usd, turn.cached)
            if not turn.tool_calls:
                reply, handed = _strip_token(turn.content or "", [AGENT_STOP_TOKEN])
                ep.messages.append({"role": "assistant", "content": reply})
                if handed:
                    ep.termination, done = "agent_stop", True
                break
            ep.messages.append({"role": "assistant", "content": turn.content, "tool_calls": turn.tool_calls})
            for call in turn.tool_calls:
                s0 = time.perf_counter()
                try:
                    result, error = (env.call(call["name"], call["arguments"]) if limits.tool_timeout is None
                                     else await _bounded(env.call, call["name"], call["arguments"],
                                                         timeout=limits.tool_timeout))
                except TimeoutError:
                    ep.termination, ep.error = "environment_error", (
                        f"tool {call['name']} did not return within {limits.tool_timeout:g} s (tool_timeout)")
                    hung = done = True
                    break
                ep.steps.append(Step(
                    index=len(ep.steps) + 1, tool=call["name"],
                    args=call["arguments"] if isinstance(call["arguments"], dict) else {},
                    result=None if error is not None else result, error=error, call_id=call["id"],
                    latency_ms=round((time.perf_counter() - s0) * 1000, 3),
                    extra={"turn": ep.user_turns},
                ).to_seed())
                ep.messages.append({"role": "tool", "tool_call_id": call["id"], "name": call["name"],
                                    "is_error": error is not None,
                                    "content": {"error": error} if error is not None else result})
                sig = ep_signature(call)
                same = same + 1 if sig == last_sig else 1
                last_sig = sig
            if hung:
                break
            if same >= limits.repeat_limit:
                ep.termination, ep.error = "agent_loop", (f"the agent called {last_sig} {same} times in a row "
                                                          f"(repeat limit {limits.repeat_limit})")
                done = True
                break
        else:
            ep.termination, ep.error = "agent_max_steps", (f"the agent's turn did not end within "
                                                           f"max_steps={limits.max_steps} model calls")
            done = True
    try:
        if not hung:  # a hung tool may still be changing the state: no snapshot of it is the final one
            ep.final_state = env.snapshot()
            ep.final_hash = env.state_hash()
    except EnvironmentFailed as exc:
        ep.termination, ep.error = "environment_error", str(exc)
    except Exception as exc:  # noqa: BLE001 - the user's copy hook
        ep.termination, ep.error = "environment_error", f"the state cannot be copied: {type(exc).__name__}: {exc}"
    ep.latency_ms = round((time.perf_counter() - t0) * 1000, 3)
    return ep


def ep_signature(call: dict[str, Any]) -> str:
    return f"{call['name']}({json.dumps(call['arguments'], sort_keys=True, default=str)})"
