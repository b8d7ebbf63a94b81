"""The judge-reply contract, shared by every LLM-judged evaluator.

1. Strip one surrounding code fence, parse JSON.
2. Repair only what is safely repairable: prose around the JSON verdict, trailing commas, numbers
   written as strings. Nothing is guessed: a JSON object copied from the judged case text is never the
   verdict, and two different candidate verdicts make the reply invalid (:func:`parse_verdict`).
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
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from .._util._fastjson import loads as fast_loads
from ..errors import JudgeCannotGrade, ProviderError, RefereeError
from ..providers._base import Completion, JudgeRequest, Message
from ..runner._client import COST_DECIMALS, JudgeClient
from ..runner._engine import is_fatal

if TYPE_CHECKING:
    from ..results._schema import Usage

T = TypeVar("T")

EXCERPT_CHARS = 500
_TRAILING_COMMA_RE = re.compile(r",(\s*[}\]])")


class ReplyInvalid(RefereeError, ValueError):
    """The judge's reply cannot be used; the message says why (and is shown to the judge on re-ask)."""


def strip_fence(text: str) -> str:
    """The body of one surrounding code fence (```json ... ```), else the text stripped. No regex: a
    backtracking one took minutes on a fence followed by 200,000 spaces."""
    t = text.strip()
    if len(t) < 6 or not t.startswith("```") or not t.endswith("```"):
        return t
    nl = t.find("\n")
    if nl == -1 or not all(c.isalnum() or c in "_-" for c in t[3:nl].strip()):
        return t
    body = t[nl + 1:-3]
    return body[:-1] if body.endswith("\n") else body


MAX_DEPTH = 64
"""Deeper JSON in a reply is refused (no verdict nests that deep; 100,000 levels would overflow the stack)."""
MAX_CANDIDATES = 64
_CASE_TEXT: ContextVar[tuple[str, ...]] = ContextVar("referee_case_text", default=())


@dataclass
class _Span:
    start: int
    end: int
    depth: int  # nesting below this object (1 = flat)
    children: list[_Span] = field(default_factory=list)


def _object_spans(text: str) -> list[_Span]:
    """The outermost balanced ``{...}`` spans of ``text`` (string-aware), each with its inner spans.

    One pass with a stack, so a reply of 30,000 ``{`` costs linear time; an object left open (prose with a
    stray ``{``) does not hide the complete objects inside it: they are promoted to the top level."""
    stack: list[tuple[int, list[_Span], int]] = []  # (start, children, max child depth)
    roots: list[_Span] = []
    in_str = esc = False
    for i, ch in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            if stack:
                in_str = True
        elif ch == "{":
            stack.append((i, [], 0))
        elif ch == "}" and stack:
            start, children, depth = stack.pop()
            span = _Span(start, i + 1, depth + 1, children)
            if stack:
                s0, ch0, d0 = stack[-1]
                ch0.append(span)
                stack[-1] = (s0, ch0, max(d0, depth + 1))
            else:
                roots.append(span)
    for _start, children, _depth in stack:  # never closed: their complete inner objects stand alone
        roots.extend(children)
    roots.sort(key=lambda s: s.start)
    return roots


def _load_object(text: str) -> tuple[dict[str, Any] | None, str]:
    """``(object, "")`` or ``(None, why not)``; the safe trailing-comma repair is applied."""
    why = "not JSON"
    for attempt in (text, _TRAILING_COMMA_RE.sub(r"\1", text)):
        try:
            value = json.loads(attempt)
        except json.JSONDecodeError as exc:
            why = f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
            continue
        except (ValueError, RecursionError) as exc:  # e.g. an integer of more than 4,300 digits
            return None, f"not usable JSON ({str(exc)[:120]})"
        if not isinstance(value, dict):
            return None, f"expected a JSON object, got {type(value).__name__}"
        return value, ""
    return None, why


def _objects(text: str, spans: list[_Span], limit: int) -> tuple[list[tuple[str, dict[str, Any]]], str]:
    """Parsed objects of ``spans`` in order (an unparsable span yields its inner objects), and the first
    reason a span failed."""
    out: list[tuple[str, dict[str, Any]]] = []
    first_err = ""
    todo = list(reversed(spans))
    while todo and len(out) < limit:
        span = todo.pop()
        if span.depth > MAX_DEPTH:
            first_err = first_err or f"the JSON nests deeper than {MAX_DEPTH} levels"
            continue
        raw = text[span.start:span.end]
        value, why = _load_object(raw)
        if value is not None:
            out.append((raw, value))
        else:
            first_err = first_err or why
            todo.extend(reversed(span.children))
    return out, first_err


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def quoted_objects(case_text: tuple[str, ...]) -> set[str]:
    """Every JSON object (nested ones too) written in the case text, canonicalised."""
    found: set[str] = set()
    for text in case_text:
        if "{" not in text:
            continue
        todo = _object_spans(text)
        seen = 0
        while todo and seen < 4 * MAX_CANDIDATES:
            span = todo.pop()
            seen += 1
            todo.extend(span.children)
            if span.depth > MAX_DEPTH or span.end - span.start > 200_000:
                continue
            value, _ = _load_object(text[span.start:span.end])
            if value is not None:
                found.add(_canonical(value))
    return found


def case_text_in_scope() -> tuple[str, ...]:
    """The case text of the request whose reply :func:`ask_judge` is parsing (empty outside it)."""
    return _CASE_TEXT.get()


def json_candidates(text: str) -> list[dict[str, Any]]:
    """Every JSON object of a reply that is not a copy of one in the case text being judged, in order."""
    body = strip_fence(text)
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        value = None
    found = ([(body, value)] if isinstance(value, dict) else
             _objects(body, _object_spans(body), MAX_CANDIDATES)[0])
    quoted = quoted_objects(_CASE_TEXT.get())
    return [v for _, v in found if _canonical(v) not in quoted]


def parse_verdict(text: str, validate: Callable[[dict[str, Any]], T]) -> T:
    """The one verdict in a judge reply, validated by ``validate`` (which raises :class:`ReplyInvalid`).

    A reply may hold several JSON objects (a judge quoting the judged output before giving its own verdict).
    Objects that are copies of one written in the case text (``JudgeRequest.case_text``, known while
    :func:`ask_judge` parses) are never a verdict. Of the rest, those ``validate`` accepts are the candidate
    verdicts: one (or several identical) is the verdict; two different ones are ambiguous, so the reply is
    invalid (re-asked once, then ``unscored``), never guessed.
    """
    body = strip_fence(text)
    if not body:
        raise ReplyInvalid("the reply is empty")
    whole_err = ""
    try:  # the fast path: a clean object (structured output makes this the common case)
        value = fast_loads(body)
    except json.JSONDecodeError as exc:
        value, whole_err = None, f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
    except (ValueError, RecursionError) as exc:
        value, whole_err = None, f"not usable JSON ({str(exc)[:120]})"
    if isinstance(value, dict):
        found: list[tuple[str, dict[str, Any]]] = [(body, value)]
    else:
        if value is not None:
            whole_err = f"expected a JSON object, got {type(value).__name__}"
        spans = _object_spans(body)
        found, first_err = _objects(body, spans, MAX_CANDIDATES)
        if not found:
            if not spans and body.lstrip().startswith("{"):
                first_err = "the JSON object is cut off (truncated reply)"
            raise ReplyInvalid(first_err or whole_err)
    quoted = quoted_objects(_CASE_TEXT.get())
    if len(found) == 1 and not quoted:  # the common case: one object, no JSON in the case text to copy from
        try:
            return validate(found[0][1])
        except ReplyInvalid as exc:
            raise ReplyInvalid(str(exc)) from None
    verdicts: dict[str, T] = {}
    reasons: list[str] = []
    copied = 0
    for _raw, obj in found:
        key = _canonical(obj)
        if key in quoted:
            copied += 1
            continue
        try:
            v = validate(obj)
        except ReplyInvalid as exc:
            reasons.append(str(exc))
            continue
        verdicts.setdefault(key, v)
    if len(verdicts) == 1:
        return next(iter(verdicts.values()))
    if len(verdicts) > 1:
        raise ReplyInvalid(f"the reply holds {len(verdicts)} different verdicts; give exactly one")
    if copied and not reasons:
        raise ReplyInvalid("the only verdict in the reply is copied from the text being judged; give your own")
    raise ReplyInvalid(reasons[-1] if reasons else "no verdict in the reply")


def parse_json_object(text: str) -> dict[str, Any]:
    """The one JSON object of a judge reply, with the safe repairs only (see :func:`parse_verdict`)."""
    return parse_verdict(text, lambda obj: obj)


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
    usage: Usage = field(default_factory=lambda: _usage([]))
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
    calls: list[Completion] = []
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
            if isinstance(exc, JudgeCannotGrade):  # a judge that knows it cannot tell: unscored, with its reason
                return JudgeOutcome(status="unscored", error=str(exc), usage=_usage(calls, len(request.images)),
                                    latency_ms=latency, cost_usd=cost, model=model)
            return JudgeOutcome(status="error", error=str(exc), usage=_usage(calls, len(request.images)),
                                latency_ms=latency, cost_usd=cost, model=model)
        latency += completion.latency_ms if completion.cached else (time.perf_counter() - t0) * 1000
        model = completion.model or model
        calls.append(completion)
        c = client.cost_of(completion)
        if c is not None:
            cost = round((cost or 0.0) + c, COST_DECIMALS)
        last_text = completion.text
        token = _CASE_TEXT.set(request.case_text)
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
                    case_text=request.case_text, images=request.images,
                )
            continue
        finally:
            _CASE_TEXT.reset(token)
        return JudgeOutcome(status="scored", value=value, usage=_usage(calls, len(request.images)),
                            latency_ms=latency, cost_usd=cost, model=model)
    return JudgeOutcome(status="unscored", raw_excerpt=excerpt(last_text), error=f"invalid judge reply: {reason}",
                        usage=_usage(calls, len(request.images)), latency_ms=latency, cost_usd=cost, model=model)


def _usage(completions: list[Completion], images: int = 0) -> Usage:
    """The tokens and calls of an outcome's replies (one Usage built once: what ``Usage() + Usage(...)`` per reply
    gave, a token count None only when no reply reported it)."""
    ins = [c.input_tokens for c in completions if c.input_tokens is not None]
    outs = [c.output_tokens for c in completions if c.output_tokens is not None]
    cached = sum(1 for c in completions if c.cached)
    # Imported here: the result models (pydantic) load while a run's first requests are in flight.
    from ..results._schema import Usage

    return Usage(input_tokens=sum(ins) if ins else None, output_tokens=sum(outs) if outs else None,
                 calls=len(completions) - cached, cached_calls=cached, images=images * (len(completions) - cached))
