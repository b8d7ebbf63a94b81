"""The case shape of a simulated conversation: ``user:``, ``environment:`` and ``expected:``.

A case (any format ``load_cases`` reads) is a scenario when it has ``user:`` and ``environment:``::

    id: refund-a1
    user:
      persona: A busy customer who writes short messages.
      instructions: You want a refund for order A1, which arrived broken.
      known: {order_id: A1, email: ana@example.com}
      unknown: You do not know the order's price.
      stop_rules: [End once the agent confirms the refund.]
      max_turns: 8
    environment:
      class: shop_env:Shop          # module:Class, built with options as keyword arguments
      options: {seed_orders: 3}
    expected:
      actions: [{tool: refund, args: {order_id: A1}}]   # replayed on a fresh state: the gold final state
      outputs: ["12.50"]                                  # what the agent must say to the user
      assertions: [The agent apologises for the broken item.]   # judged
      basis: [state, outputs]                             # the reward's parts (default: those given)

Errors name the case's file and line and the field (``user.max_turns``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..cases._case import Case
from ..errors import InputError

STOP_TOKEN = "###STOP###"
"""What the simulated user writes to end the conversation (tau2's token)."""
BASES = ("state", "actions", "outputs", "assertions")
"""The reward's parts: the final state equals the gold one, every gold action was called, every required output
was said to the user, every natural-language assertion holds (judged)."""


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class UserSpec(_M):
    """Who the simulated user is and what they want."""

    instructions: str = Field(min_length=1, alias="instructions")
    persona: str | None = None
    known: str | dict[str, Any] | list[Any] | None = None
    unknown: str | list[str] | None = None
    stop_rules: list[str] = Field(default_factory=list)
    stop_tokens: list[str] = Field(default_factory=lambda: [STOP_TOKEN], min_length=1)
    max_turns: int = Field(default=10, ge=1, le=200)
    """User messages at most; reaching it ends the episode as ``max_turns`` (reward 0)."""
    first_message: str | None = None
    """The user's opening message, sent as written (the simulator writes the rest)."""

    @field_validator("stop_tokens")
    @classmethod
    def _tokens(cls, v: list[str]) -> list[str]:
        if any(not t.strip() for t in v):
            raise ValueError("a stop token cannot be empty")
        return v


class EnvironmentSpec(_M):
    cls: str | None = Field(default=None, alias="class", pattern=r"^[\w.]+:[\w.]+$")
    """``module:Class`` of the user's environment."""
    domain: str | None = None
    """A tau2-bench domain (``mock``, ``retail``, ``airline``): the extra ``tau2``."""
    task: str | None = None
    """The tau2 task id whose initial state the domain starts from."""
    options: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_source(self) -> EnvironmentSpec:
        if (self.cls is None) == (self.domain is None):
            raise ValueError("give exactly one of 'class' (module:Class) or 'domain' (a tau2-bench domain)")
        return self


class GoldAction(_M):
    tool: str = Field(min_length=1, alias="tool")
    args: dict[str, Any] = Field(default_factory=dict)
    compare_args: list[str] | None = None
    """Arguments compared when matching the agent's calls (None: all of the call's)."""


class ExpectedSpec(_M):
    actions: list[GoldAction] | None = None
    state: Any = None
    outputs: list[str] = Field(default_factory=list)
    assertions: list[str] = Field(default_factory=list)
    basis: list[Literal["state", "actions", "outputs", "assertions"]] | None = None

    def reward_basis(self) -> tuple[str, ...]:
        if self.basis is not None:
            return tuple(self.basis)
        parts = []
        if self.actions is not None or self.state is not None:
            parts.append("state")
        if self.outputs:
            parts.append("outputs")
        if self.assertions:
            parts.append("assertions")
        return tuple(parts)


class Scenario(_M):
    """One validated scenario (the case it came from is kept for ids, categories and the record)."""

    user: UserSpec
    environment: EnvironmentSpec
    expected: ExpectedSpec = Field(default_factory=ExpectedSpec)

    @model_validator(mode="after")
    def _gradable(self) -> Scenario:
        basis = self.expected.reward_basis()
        if not basis:
            raise ValueError("expected: nothing to grade (give actions or state, outputs or assertions)")
        if "state" in basis and self.expected.actions is None and self.expected.state is None:
            raise ValueError("expected.basis has 'state' but expected has neither 'actions' nor 'state'")
        if "actions" in basis and not self.expected.actions:
            raise ValueError("expected.basis has 'actions' but expected.actions is empty")
        if "outputs" in basis and not self.expected.outputs:
            raise ValueError("expected.basis has 'outputs' but expected.outputs is empty")
        if "assertions" in basis and not self.expected.assertions:
            raise ValueError("expected.basis has 'assertions' but expected.assertions is empty")
        return self


def is_scenario(case: Case) -> bool:
    return isinstance(case.get("user"), dict) and case.get("environment") is not None


_ALIASES = {"cls": "class"}


def scenario_of(case: Case) -> Scenario:
    """The case's scenario; InputError naming the case's file, line and the first wrong field."""
    raw = {k: case.get(k) for k in ("user", "environment", "expected") if case.get(k) is not None}
    if "user" in raw and isinstance(raw["user"], dict) and "goal" in raw["user"] and "instructions" not in raw[
            "user"]:
        raw["user"] = {**raw["user"], "instructions": raw["user"]["goal"]}
        del raw["user"]["goal"]
    try:
        return Scenario.model_validate(raw)
    except ValidationError as exc:
        e = exc.errors()[0]
        loc = [str(_ALIASES.get(str(p), p)) for p in e["loc"]]
        field = ".".join(loc) if loc else None
        msg = str(e["msg"]).removeprefix("Value error, ")
        raise InputError(f"case '{case.id}': {msg}", file=case.source or None, line=case.line,
                         field=field) from None
