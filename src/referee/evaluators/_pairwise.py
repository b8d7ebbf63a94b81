"""Pairwise judging: the seed's ``run_pairwise.py`` behaviour on referee's pipeline.

Every case ``{id, input, output_a, output_b, category?}`` is judged in **both orders**: once with A shown as
``{response_1}`` and once with B shown first. The judge answers ``{"winner": "response_1"|"response_2"|"tie",
"rationale"}``. Each order's pick is mapped back to a/b; when the orders disagree (a tie against a win included)
the row is a tie with ``position_bias_detected: true`` and both rationales are kept. Score: a 1.0, b 0.0,
tie 0.5. Usage and cost of both calls are summed.

If either order is unscored or failed, the row is unscored (or error): a winner is never taken from half the
evidence.

``reconcile="average"`` (``--reconcile average``) scores the mean of the two orders instead: a win in one order
and a tie in the other is 0.75 (the seed's SKILL.md: "run both orderings and average"). The default, ``strict``,
is the seed runner's. Both scores are kept in ``details.scores``.

The reply parser also reads the plain-text verdicts of published judge prompts ("Output (a)" / "Output (b)",
"Therefore, Output (b) is better."), so recorded judge text can be replayed (see ``referee metaeval``).
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ..cases._case import Case
from ..cases._templates import case_values
from ..providers._base import JudgeRequest
from ..results._schema import ResultRow, Usage
from ..runner._client import COST_DECIMALS, JudgeClient
from ._base import CheckResult, JudgeSettings, LLMEvaluator, result_row
from ._prompt_guard import REQUEST_FORMATS, fill_template, judge_request, seed_request, system_prompt
from ._reply import JudgeOutcome, ReplyInvalid, ask_judge, case_text_in_scope, json_candidates, parse_verdict

REFERENCE_BLOCK = "\n<reference>\n{reference}\n</reference>\n"
"""What ``{reference_block}`` in a prompt becomes for a case with a reference (nothing for one without)."""

Pick = Literal["1", "2", "tie"]
"""A verdict by position as shown to the judge: ``1`` = the response shown first."""
Winner = Literal["a", "b", "tie"]

PAIRWISE_SYSTEM = system_prompt(
    "You are a careful evaluation judge comparing two responses to the same input. The order in which the "
    "responses are shown must not affect your verdict. The JSON object to reply with: "
    '{"winner": "response_1" | "response_2" | "tie", "rationale": "..."}.'
)

PAIRWISE_REPLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "winner": {"type": "string", "enum": ["response_1", "response_2", "tie"]},
        "rationale": {"type": "string"},
    },
    "required": ["winner", "rationale"],
    "additionalProperties": False,
}

SCORES: dict[str, float] = {"a": 1.0, "b": 0.0, "tie": 0.5}

# Spellings of the three verdicts accepted in the JSON ``winner`` field (compared lower-cased, stripped).
_JSON_WINNERS: dict[str, Pick] = {
    "response_1": "1", "response 1": "1", "response1": "1", "1": "1",
    "response_2": "2", "response 2": "2", "response2": "2", "2": "2",
    "tie": "tie",
}
# Plain-text verdict labels of common pairwise prompts (LLMBar's "Output (a)", MT-Bench's "[[A]]").
_LABEL = r"output \(([ab])\)|response[_ ]?([12])|\[\[([abc])\]\]|(tie)"
# A reply that is nothing but a label ("Output (a)", "**Response 2**.", "Verdict: [[B]]").
_BARE = re.compile(r"(?:(?:final\s+)?(?:verdict|answer|winner)\s*:\s*)?[*_\"'`\s]*(?:" + _LABEL
                   + r")[*_\"'`\s]*[.!]?", re.IGNORECASE)
_BRACKETS = re.compile(r"\[\[([abc])\]\]", re.IGNORECASE)
_CONCLUSION = re.compile(
    r"(output \(([ab])\)|response[_ ]?([12]))\s+is\s+(?:the\s+|clearly\s+|slightly\s+)?better", re.IGNORECASE)
_NEGATION = re.compile(r"\b(neither|nor)\b", re.IGNORECASE)
_BRACKET_PICK: dict[str, Pick] = {"a": "1", "b": "2", "c": "tie"}


@dataclass(frozen=True)
class PositionVerdict:
    """One order's verdict: which position won, and why."""

    pick: Pick
    rationale: str | None = None


def _pick_from_match(m: re.Match[str], a_group: int, n_group: int) -> Pick | None:
    if m.group(a_group):
        return "1" if m.group(a_group).lower() == "a" else "2"
    if m.group(n_group):
        return "1" if m.group(n_group) == "1" else "2"
    return None


def _parse_text(text: str) -> Pick:
    """A verdict from judge prose; raises :class:`ReplyInvalid` unless the text states one winner.

    Accepted, in order: a reply that is only a label (``Output (a)``, ``Response 2``, ``[[B]]``, ``tie``); one
    distinct MT-Bench verdict bracket (``[[A]]``, ``[[B]]``, ``[[C]]`` = tie); else the last "X is better"
    conclusion, unless negated ("neither Output (a) nor Output (b) is better"). A label merely mentioned
    ("Response 1 is wrong") is no verdict: guessing a winner from it would invent one.
    """
    bare = _BARE.fullmatch(text.strip())
    if bare:
        if bare.group(3):
            return _BRACKET_PICK[bare.group(3).lower()]
        if bare.group(4):
            return "tie"
        pick = _pick_from_match(bare, 1, 2)
        assert pick is not None
        return pick
    # A bracket verdict written in the judged responses ("[[B]]" planted in response 2) is never the verdict.
    planted = {m.group(1).lower() for t in case_text_in_scope() for m in _BRACKETS.finditer(t)}
    brackets = {m.group(1).lower() for m in _BRACKETS.finditer(text)} - planted
    if len(brackets) == 1:
        return _BRACKET_PICK[brackets.pop()]
    conclusions = list(_CONCLUSION.finditer(text))
    if not conclusions:
        raise ReplyInvalid("the reply states no winner (expected JSON with \"winner\": \"response_1\", "
                           "\"response_2\" or \"tie\")")
    last = conclusions[-1]
    # "neither Output (a) nor Output (b) is better" names no winner; look just before the conclusion only,
    # since reasoning earlier in the sentence ("Output (a) does not ...") is not a negation of it.
    if _NEGATION.search(text[max(0, last.start() - 40):last.start()]):
        raise ReplyInvalid("the reply's conclusion names no single winner")
    pick = _pick_from_match(last, 2, 3)
    assert pick is not None
    return pick


def parse_pairwise_reply(text: str) -> PositionVerdict:
    """Parse a pairwise judge reply into a positional verdict; raises :class:`ReplyInvalid`.

    JSON first (``{"winner": "response_1"|"response_2"|"tie", "rationale": ...}``); a reply that is not JSON
    may still name its winner in prose (see :func:`_parse_text`). A JSON reply with another ``winner`` value
    is invalid, never guessed.
    """
    if not text or not text.strip():
        raise ReplyInvalid("the reply is empty")
    objects = json_candidates(text)  # copies of objects in the judged responses are left out
    if any("winner" in o for o in objects):
        return parse_verdict(text, _json_verdict)
    if objects:
        try:
            return PositionVerdict(_parse_text(text), text.strip())
        except ReplyInvalid:
            raise ReplyInvalid(
                "'winner' is missing (expected \"response_1\", \"response_2\" or \"tie\")") from None
    return PositionVerdict(_parse_text(text), text.strip())


def _json_verdict(data: dict[str, Any]) -> PositionVerdict:
    if "winner" not in data:
        raise ReplyInvalid("'winner' is missing (expected \"response_1\", \"response_2\" or \"tie\")")
    raw = data["winner"]
    key = raw.strip().lower() if isinstance(raw, str) else str(raw)
    if isinstance(raw, bool) or key not in _JSON_WINNERS:
        raise ReplyInvalid(f"winner is {raw!r}; expected \"response_1\", \"response_2\" or \"tie\"")
    rationale = data.get("rationale")
    return PositionVerdict(_JSON_WINNERS[key], None if rationale is None else str(rationale))


def to_winner(pick: Pick, shown_first: Literal["a", "b"]) -> Winner:
    """Map a positional pick back to a/b given which output was shown first."""
    if pick == "tie":
        return "tie"
    if shown_first == "a":
        return "a" if pick == "1" else "b"
    return "b" if pick == "1" else "a"


Reconcile = Literal["strict", "average"]
RECONCILE_MODES: tuple[Reconcile, ...] = ("strict", "average")


def reconcile(first: Winner, second: Winner) -> tuple[Winner, bool]:
    """The row's winner from the two orders' winners, and whether position bias was detected (strict rule:
    any disagreement, a tie against a win included, is a tie)."""
    if first == second:
        return first, False
    return "tie", True


def reconciled_score(first: Winner, second: Winner, mode: Reconcile = "strict") -> tuple[float, Winner, bool]:
    """(score of A, winner, position bias) under ``mode``.

    ``strict`` (the seed's ``run_pairwise.py``): orders that disagree make a tie, 0.5. ``average`` (the seed's
    SKILL.md: "always run both orderings and average"): the mean of the two orders' scores, so a win in one
    order and a tie in the other is 0.75 and its winner is the side it leans to; opposite wins are 0.5."""
    winner, bias = reconcile(first, second)
    if mode == "strict":
        return SCORES[winner], winner, bias
    score = (SCORES[first] + SCORES[second]) / 2
    return score, ("a" if score > 0.5 else "b" if score < 0.5 else "tie"), bias


def _combine(outcomes: list[JudgeOutcome[PositionVerdict]]) -> dict[str, Any]:
    usage = Usage()
    costs = [o.cost_usd for o in outcomes if o.cost_usd is not None]
    for o in outcomes:
        usage = usage + o.usage
    return {
        "usage": usage,
        "cost_usd": round(sum(costs), COST_DECIMALS) if costs else None,
        "latency_ms": round(sum(o.latency_ms for o in outcomes), 3),
    }


@dataclass
class PairwiseJudge(LLMEvaluator):
    """Judges one case in both orders and reconciles the two verdicts (``referee pairwise``'s judge, and
    :func:`referee.compare`'s). An :class:`LLMEvaluator`: the run binds the judge settings.

    :meth:`judge_row` gives the seed's row (``winner``, ``position_bias_detected``, both orders in
    ``details``); :meth:`evaluate_async` the same verdict as a :class:`CheckResult` (score 1 = a better)."""

    name: ClassVar[str] = "pairwise_template"
    evaluator: ClassVar[str] = "pairwise"
    template: str = ""
    category: str | None = None
    name_a: str | None = None
    name_b: str | None = None
    reconcile: Reconcile = "strict"
    template_hash: str | None = None
    """Recorded in each row's judge info (default: the template's sha256)."""
    request_format: str = "referee"
    """``referee`` or ``seed`` (the seed's exact request: see ``_prompt_guard.REQUEST_FORMATS``)."""

    def __post_init__(self) -> None:
        from ..results._manifest import text_sha256

        if self.request_format not in REQUEST_FORMATS:
            raise ValueError(f"request_format must be one of {', '.join(REQUEST_FORMATS)}, not "
                             f"{self.request_format!r}")
        if self.reconcile not in RECONCILE_MODES:
            raise ValueError(f"reconcile must be one of {', '.join(RECONCILE_MODES)}, not {self.reconcile!r}")
        if self.template_hash is None:
            self.template_hash = text_sha256(self.template)

    def _bound(self) -> tuple[JudgeClient, JudgeSettings]:
        s = self._settings
        if s is None or s.client is None:
            raise RuntimeError("PairwiseJudge: bind the judge settings first (a run does)")
        return s.client, s

    def request(self, case: Case, output: Any = None,  # noqa: ARG002 - the outputs are output_a/output_b
                shown_first: Literal["a", "b"] = "a") -> JudgeRequest:
        s = self._settings or JudgeSettings(client=None)
        values = case_values(case)
        a, b = case.get("output_a"), case.get("output_b")
        first, second = (a, b) if shown_first == "a" else (b, a)
        values.update(response_1=first, response_2=second)
        template = self.template
        if "{reference_block}" in template:  # referee's default prompt: the reference when the case has one
            template = template.replace("{reference_block}", REFERENCE_BLOCK if case.reference is not None else "")
        if self.request_format == "seed":
            user, case_text = fill_template(template, values, neutralised=False)
            return seed_request(user, case_text, max_tokens=s.max_tokens, temperature=s.temperature, seed=s.seed)
        user, case_text = fill_template(template, values)
        return judge_request(PAIRWISE_SYSTEM, user, case_text, response_schema=PAIRWISE_REPLY_SCHEMA,
                             schema_name="pairwise_verdict", max_tokens=s.max_tokens,
                             temperature=s.temperature, seed=s.seed)

    def call_requests(self, case: Case, output: Any = None) -> list[JudgeRequest]:
        """Both orders: two calls per case."""
        return [self.request(case, output, shown_first="a"), self.request(case, output, shown_first="b")]

    async def evaluate_async(self, case: Case, output: Any) -> CheckResult:
        if (none := self.unbound()) is not None:
            return none
        missing = [k for k in ("output_a", "output_b") if case.get(k) is None]
        if missing:
            return CheckResult.error(f"pairwise needs the case fields {' and '.join(missing)}")
        return await self.judge(case)

    async def judge_row(self, case: Case) -> ResultRow:
        """The verdict on ``case`` in both orders as the command's row."""
        return result_row(case, await self.judge(case), evaluator=self.evaluator, category=self.category)

    async def judge(self, case: Case) -> CheckResult:
        """The verdict on ``case`` in both orders: the winner, position bias, both orders in ``details``; a
        comparison, not a pass/fail verdict (``passed`` is None: the run's threshold decides)."""
        client, s = self._bound()
        order_pair: tuple[Literal["a", "b"], Literal["a", "b"]] = ("a", "b")
        outcomes = list(await asyncio.gather(*(
            ask_judge(client, self.request(case, shown_first=order), parse_pairwise_reply, use_cache=s.use_cache)
            for order in order_pair
        )))
        orders: list[dict[str, Any]] = []
        shown: tuple[Literal["a", "b"], Literal["a", "b"]] = ("a", "b")
        for shown_first, o in zip(shown, outcomes, strict=True):
            entry: dict[str, Any] = {"shown_first": shown_first, "status": o.status}
            if o.value is not None:
                entry.update(verdict={"1": "response_1", "2": "response_2", "tie": "tie"}[o.value.pick],
                             winner=to_winner(o.value.pick, shown_first), rationale=o.value.rationale)
            if o.error:
                entry["error"] = o.error
            if o.raw_excerpt:
                entry["raw_reply"] = o.raw_excerpt
            orders.append(entry)
        details: dict[str, Any] = {"orders": orders, "len_a": len(str(case.get("output_a"))),
                                   "len_b": len(str(case.get("output_b")))}
        system_a = self.name_a or case.get("system_a")
        system_b = self.name_b or case.get("system_b")
        if system_a is not None:
            details["system_a"] = str(system_a)
        if system_b is not None:
            details["system_b"] = str(system_b)
        res = CheckResult(score=None, judge=client.judge_info(self.template_hash), details=details,
                          **_combine(outcomes))
        if all(o.usage.cached_calls and not o.usage.calls for o in outcomes):
            res.flags = ["cached"]
        bad = [(order, o) for order, o in zip(("a first", "b first"), outcomes, strict=True)
               if o.status != "scored"]
        if bad:
            # Never a winner from half the evidence: one failed order makes the whole row unscored/error.
            res.status = "error" if any(o.status == "error" for _, o in bad) else "unscored"
            res.error_message = "; ".join(f"order {order}: {o.error}" for order, o in bad)
            res.raw_reply = next((o.raw_excerpt for _, o in bad if o.raw_excerpt), None)
            return res
        w1 = orders[0]["winner"]
        w2 = orders[1]["winner"]
        score, winner, bias = reconciled_score(w1, w2, self.reconcile)
        # Both rules' scores are kept, so `referee rank` can report either from the same file.
        details["reconcile"] = self.reconcile
        details["scores"] = {m: reconciled_score(w1, w2, m)[0] for m in RECONCILE_MODES}
        r1, r2 = orders[0].get("rationale"), orders[1].get("rationale")
        # The seed's rationale, word for word: scripts that read it (and its "Position bias detected" prefix).
        rationale = (r1 or r2) if not bias else (
            f"Position bias detected — orderings disagreed (favored {w1} first, {w2} second). "
            f"Ordering 1: {r1 or ''} | Ordering 2: {r2 or ''}")
        res.score, res.winner, res.position_bias_detected, res.reason = score, winner, bias, rationale or ""
        return res
