"""The template judge: the seed's ``run_judge.py`` behaviour on referee's pipeline.

The judge replies with one object per criterion (``score`` 0-1 and ``rationale``) plus ``overall_score``.
The row's score is ``overall_score``; its rationale is the lowest-scoring criterion's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..cases import Case
from ..providers.base import JudgeRequest
from ..results._schema import CriterionScore, JudgeInfo, ResultRow
from ..runner.client import JudgeClient
from ..templates import case_values
from .prompt_guard import fill_template, judge_request, system_prompt
from .reply import JudgeOutcome, ReplyInvalid, as_number, ask_judge, parse_verdict

JUDGE_SYSTEM = system_prompt("You are a careful evaluation judge.")

TEMPLATE_REPLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"overall_score": {"type": "number", "minimum": 0, "maximum": 1}},
    "required": ["overall_score"],
    "additionalProperties": {
        "type": "object",
        "properties": {"score": {"type": "number", "minimum": 0, "maximum": 1}, "rationale": {"type": "string"}},
        "required": ["score", "rationale"],
    },
}


def template_reply_schema(criteria: list[str] | None = None) -> dict[str, Any]:
    """The reply schema, with each criterion the reply must contain as a required property: a judge that
    follows the schema to the letter (constrained decoding, strict structured output) returns only the
    properties it names, so a schema that merely allowed the criteria made every reply miss them (unscored)."""
    if not criteria:
        return TEMPLATE_REPLY_SCHEMA
    item = TEMPLATE_REPLY_SCHEMA["additionalProperties"]
    return {**TEMPLATE_REPLY_SCHEMA,
            "properties": {**{c: item for c in criteria}, **TEMPLATE_REPLY_SCHEMA["properties"]},
            "required": [*criteria, "overall_score"]}


@dataclass(frozen=True)
class TemplateVerdict:
    overall: float
    criteria: list[CriterionScore]

    @property
    def lowest_rationale(self) -> str | None:
        scored = [c for c in self.criteria if c.score is not None]
        if not scored:
            return None
        return min(scored, key=lambda c: c.score if c.score is not None else 0.0).rationale


def parse_template_reply(text: str, expected: list[str] | None = None) -> TemplateVerdict:
    """Parse and validate a template-judge reply; raises :class:`ReplyInvalid`."""
    return parse_verdict(text, lambda data: template_verdict(data, expected))


def template_verdict(data: dict[str, Any], expected: list[str] | None = None) -> TemplateVerdict:
    """Validate one JSON object as a template-judge verdict; raises :class:`ReplyInvalid`."""
    if "overall_score" not in data:
        raise ReplyInvalid("'overall_score' is missing")
    overall = as_number(data["overall_score"], "overall_score")
    if not 0.0 <= overall <= 1.0:
        raise ReplyInvalid(f"overall_score {overall:g} is outside 0-1")
    criteria: list[CriterionScore] = []
    for key, value in data.items():
        if key == "overall_score" or not isinstance(value, dict) or "score" not in value:
            continue
        s = as_number(value["score"], f"{key}.score")
        if not 0.0 <= s <= 1.0:
            raise ReplyInvalid(f"{key}.score {s:g} is outside 0-1")
        rationale = value.get("rationale")
        evidence = value.get("evidence") or value.get("quotes") or []
        criteria.append(CriterionScore(
            id=key, score=s, raw_score=s, scale="0-1",
            rationale=None if rationale is None else str(rationale),
            evidence=[str(e) for e in evidence] if isinstance(evidence, list) else [str(evidence)],
        ))
    if expected:
        missing = [c for c in expected if c not in {x.id for x in criteria}]
        if missing:
            raise ReplyInvalid(f"criteria missing from the reply: {', '.join(missing)}")
    return TemplateVerdict(overall=overall, criteria=criteria)


def outcome_row(case: Case, outcome: JudgeOutcome[Any], *, evaluator: str, judge: JudgeInfo | None,
                category: str | None, repeat: int | None) -> dict[str, Any]:
    """The fields every judged row shares, from a contract outcome."""
    return {
        "id": case.id,
        "status": outcome.status,
        "category": category if category is not None else case.category,
        "evaluator": evaluator,
        "judge": judge,
        "usage": outcome.usage,
        "cost_usd": outcome.cost_usd,
        "latency_ms": round(outcome.latency_ms, 3),
        "repeat": repeat,
        "error": outcome.error,
        "raw_reply": outcome.raw_excerpt,
        "metadata": case.metadata,
        "flags": ["cached"] if outcome.usage.cached_calls and not outcome.usage.calls else [],
    }


class TemplateJudge:
    """Fills a prompt template per case and grades the reply under the judge-reply contract."""

    evaluator = "judge"

    def __init__(self, client: JudgeClient, template: str, *, template_hash: str, category: str | None = None,
                 max_tokens: int = 1024, temperature: float | None = None, seed: int | None = None,
                 use_cache: bool = True, expected_criteria: list[str] | None = None) -> None:
        self.client = client
        self.template = template
        self.category = category
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.seed = seed
        self.use_cache = use_cache
        self.expected = expected_criteria
        self.schema = template_reply_schema(expected_criteria)  # the same for every case: built once
        self.judge_info = client.judge_info(template_hash)

    def request(self, case: Case, repeat: int | None = None) -> JudgeRequest:
        seed = self.seed
        if repeat is not None:
            seed = (seed or 0) + repeat  # distinct seeds so repeats are independent samples
        user, case_text = fill_template(self.template, case_values(case))
        return judge_request(JUDGE_SYSTEM, user, case_text, response_schema=self.schema,
                             max_tokens=self.max_tokens, temperature=self.temperature, seed=seed)

    async def evaluate(self, case: Case, repeat: int | None = None) -> ResultRow:
        outcome = await ask_judge(
            self.client, self.request(case, repeat),
            lambda text: parse_template_reply(text, self.expected),
            use_cache=self.use_cache and repeat is None,
        )
        fields = outcome_row(case, outcome, evaluator=self.evaluator, judge=self.judge_info,
                             category=self.category, repeat=repeat)
        if outcome.status == "scored":
            assert outcome.value is not None
            fields.update(score=outcome.value.overall, rationale=outcome.value.lowest_rationale,
                          criteria=outcome.value.criteria)
        return ResultRow(**fields)
