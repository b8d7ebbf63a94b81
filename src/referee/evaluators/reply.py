"""The judge-reply contract, shared by every LLM-judged evaluator.

1. Strip one surrounding code fence, parse JSON.
2. Repair only what is safely repairable: prose around a single JSON object, trailing commas, numbers
   written as strings. Nothing is guessed.
3. Validate (the caller's ``parse``: scores in range, every criterion present, ...).
4. Still invalid: re-ask once, telling the judge what was wrong.
5. Still invalid: the case is ``unscored`` and an excerpt of the raw reply is kept. Never a pass or a fail.

An API failure after the client's retries is ``error``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from ..errors import ProviderError
from ..providers.base import JudgeRequest, Message
from ..results.schema import Usage
from ..runner.client import COST_DECIMALS, JudgeClient
from ..runner.engine import is_fatal

T = TypeVar("T")

EXCERPT_CHARS = 500
_FENCE_RE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n(.*?)\n?\s*```\s*$", re.DOTALL)
_TRAILING_COMMA_RE = re.compile(r",(\s*[}\]])")


class ReplyInvalid(ValueError):
    """The judge's reply cannot be used; the message says why (and is shown to the judge on re-ask)."""


def strip_fence(text: str) -> str:
    m = _FENCE_RE.match(text)
    return m.group(1) if m else text.strip()


def _first_object(text: str) -> str | None:
    """The first balanced ``{...}`` in ``text`` (string-aware), or None."""
    start = text.find("{")
    while start != -1:
        depth = 0
        in_str = False
        esc = False
        for i in range(start, len(text)):
            ch = text[i]
            if in_str:
                if esc:
                    esc = False
                elif ch == "\\":
                    esc = True
                elif ch == '"':
                    in_str = False
            elif ch == '"':
                in_str = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    return text[start : i + 1]
        start = text.find("{", start + 1)
    return None


def parse_json_object(text: str) -> dict[str, Any]:
    """Parse a judge reply into a JSON object, with the safe repairs only."""
    body = strip_fence(text)
    if not body:
        raise ReplyInvalid("the reply is empty")
    try:  # the fast path: a clean object (structured output makes this the common case)
        value = json.loads(body)
    except json.JSONDecodeError:
        value = None
    if isinstance(value, dict):
        return value
    candidates = [body]
    inner = _first_object(body)
    if inner is not None and inner != body:
        candidates.append(inner)
    last_err = "not JSON"
    for cand in candidates:
        for attempt in (cand, _TRAILING_COMMA_RE.sub(r"\1", cand)):
            try:
                value = json.loads(attempt)
            except json.JSONDecodeError as exc:
                last_err = f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
                continue
            if not isinstance(value, dict):
                last_err = f"expected a JSON object, got {type(value).__name__}"
                continue
            return value
    if inner is None and body.lstrip().startswith("{"):
        last_err = "the JSON object is cut off (truncated reply)"
    raise ReplyInvalid(last_err)


def as_number(value: Any, what: str) -> float:
    """A score as float; numeric strings are accepted (a safe repair), anything else is invalid."""
    if isinstance(value, bool):
        raise ReplyInvalid(f"{what} is a boolean, expected a number")
    if isinstance(value, int | float):
        f = float(value)
    elif isinstance(value, str):
        try:
            f = float(value.strip())
        except ValueError as exc:
            raise ReplyInvalid(f"{what} is {value!r}, expected a number") from exc
    else:
        raise ReplyInvalid(f"{what} is missing or not a number")
    if f != f:
        raise ReplyInvalid(f"{what} is NaN")
    return f


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more chars]"


@dataclass
class JudgeOutcome(Generic[T]):
    """Result of asking the judge under the contract: a parsed value, or why there is none."""

    status: Literal["scored", "unscored", "error"]
    value: T | None = None
    raw_excerpt: str | None = None
    error: str | None = None
    usage: Usage = field(default_factory=Usage)
    latency_ms: float = 0.0
    cost_usd: float | None = None
    model: str = ""


REASK = (
    "Your previous reply could not be used: {reason}. Reply again with only the JSON object that was asked "
    "for, no other text."
)


async def ask_judge(client: JudgeClient, request: JudgeRequest, parse: Callable[[str], T], *,
                    use_cache: bool = True) -> JudgeOutcome[T]:
    """Ask ``client`` (a :class:`referee.runner.JudgeClient`) and apply the reply contract.

    ``parse`` turns reply text into a value or raises :class:`ReplyInvalid`.
    """
    usage = Usage()
    latency = 0.0
    cost: float | None = None
    model = ""
    req = request
    last_text = ""
    reason = ""
    for attempt in range(2):
        t0 = time.perf_counter()
        try:
            completion = await client.complete(req, use_cache=use_cache)
        except ProviderError as exc:
            if is_fatal(exc):
                raise  # a bad key, an unknown model, a server that is down: stop the run (exit 2)
            latency += (time.perf_counter() - t0) * 1000
            return JudgeOutcome(status="error", error=str(exc), usage=usage, latency_ms=latency,
                                cost_usd=cost, model=model)
        latency += completion.latency_ms if completion.cached else (time.perf_counter() - t0) * 1000
        model = completion.model or model
        usage = usage + Usage(input_tokens=completion.input_tokens, output_tokens=completion.output_tokens,
                              calls=0 if completion.cached else 1, cached_calls=1 if completion.cached else 0)
        c = client.cost_of(completion)
        if c is not None:
            cost = round((cost or 0.0) + c, COST_DECIMALS)
        last_text = completion.text
        try:
            value = parse(completion.text)
        except ReplyInvalid as exc:
            reason = str(exc)
            if attempt == 0:
                req = JudgeRequest(
                    messages=(*request.messages, Message("assistant", completion.text or "(empty)"),
                              Message("user", REASK.format(reason=reason))),
                    response_schema=request.response_schema, schema_name=request.schema_name,
                    max_tokens=request.max_tokens, temperature=request.temperature, seed=request.seed,
                )
            continue
        return JudgeOutcome(status="scored", value=value, usage=usage, latency_ms=latency, cost_usd=cost,
                            model=model)
    return JudgeOutcome(status="unscored", raw_excerpt=excerpt(last_text), error=f"invalid judge reply: {reason}",
                        usage=usage, latency_ms=latency, cost_usd=cost, model=model)
