"""The template judge: the seed's ``run_judge.py`` behaviour on referee's pipeline.

The judge replies with one object per criterion (``score`` 0-1 and ``rationale``) plus ``overall_score``.
The row's score is ``overall_score``; its rationale is the lowest-scoring criterion's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ..cases._case import Case
from ..cases._templates import case_values, placeholders
from ..providers._base import JudgeRequest
from ..runner._client import JudgeClient
from ._base import CheckResult, JudgeSettings, LLMEvaluator, result_row
from ._images import warn_unused_images
from ._prompt_guard import REQUEST_FORMATS, fill_template, judge_request, seed_request, system_prompt
from ._reply import JudgeOutcome, ReplyInvalid, as_number, ask_judge, parse_verdict

if TYPE_CHECKING:
    from ..results._schema import CriterionScore, JudgeInfo, ResultRow

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
    from ..results._schema import CriterionScore  # the models load while a run's first requests are in flight

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


def outcome_result(outcome: JudgeOutcome[Any], judge: JudgeInfo | None) -> CheckResult:
    """What every judged result shares, from a contract outcome: status, usage, cost, latency, the judge, the
    raw reply and the error of an unusable reply (the verdict's own fields are the judge's to fill)."""
    return CheckResult(
        score=None, status=outcome.status, usage=outcome.usage, cost_usd=outcome.cost_usd,
        latency_ms=outcome.latency_ms, judge=judge, raw_reply=outcome.raw_excerpt, error_message=outcome.error,
        flags=["cached"] if outcome.usage.cached_calls and not outcome.usage.calls else [],
    )


@dataclass
class TemplateJudge(LLMEvaluator):
    """Fills a prompt template per case and grades the reply under the judge-reply contract: ``referee judge``'s
    judge, :func:`referee.grade`'s, and (with referee's default template, as ``llm_judge``) a suite's. An
    :class:`LLMEvaluator`: the run binds the judge settings.

    Its result is the seed's verdict: one criterion per reply object, the score ``overall_score``, the rationale
    the lowest criterion's; :meth:`judge_row` is that result as the command's row (``evaluator: judge``)."""

    name: ClassVar[str] = "template_judge"
    evaluator: ClassVar[str] = "judge"
    template: str | None = None
    category: str | None = None
    """Category of the rows of cases without one (a case's own category wins, as in the seed)."""
    expected_criteria: list[str] | None = None
    """Criteria the reply must contain (a reply missing one is invalid: unscored)."""
    template_hash: str | None = None
    """Recorded in each row's judge info (default: the template's sha256)."""
    threshold: float | None = None
    """A case passes at this ``overall_score`` (None: no verdict of the judge's own; the run's threshold decides)."""
    max_tokens: int | None = None
    """The judge's reply budget (default: the run's)."""
    request_format: str = "referee"
    """``referee`` (system prompt, neutralised values, verdict schema) or ``seed`` (the seed's exact request:
    see :data:`~referee.evaluators._prompt_guard.REQUEST_FORMATS`)."""
    _template: str = field(init=False, repr=False, default="", compare=False)
    _schema: dict[str, Any] = field(init=False, repr=False, default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if self.request_format not in REQUEST_FORMATS:
            raise ValueError(f"request_format must be one of {', '.join(REQUEST_FORMATS)}, not "
                             f"{self.request_format!r}")
        self._template = self.template_text()
        self._schema = template_reply_schema(self.expected_criteria)  # the same for every case: built once
        if self.template_hash is None:
            from ..results._files import text_sha256

            self.template_hash = text_sha256(self._template)

    def template_text(self) -> str:
        """The prompt template this judge fills (subclasses supply a default)."""
        return self.template or ""

    def fill(self, case: Case) -> tuple[str, tuple[str, ...]]:
        """The user message and the case text it embeds (delimited by :mod:`._prompt_guard`)."""
        return fill_template(self._template, case_values(case))

    def request(self, case: Case, output: Any = None, repeat: int | None = None) -> JudgeRequest:
        s = self._settings or JudgeSettings(client=None)
        seed = s.seed
        if repeat is not None:
            seed = (seed or 0) + repeat  # distinct seeds so repeats are independent samples
        if output is not None and output is not case.output:
            case = Case(id=case.id, data={**case.data, "output": output}, source=case.source, line=case.line)
        used = placeholders(self._template)
        warn_unused_images(case, [*used, "reference"] if "reference_block" in used else used, self.name)
        if self.request_format == "seed":
            user, case_text = fill_template(self._template, case_values(case), neutralised=False)
            return seed_request(user, case_text, max_tokens=self.max_tokens or s.max_tokens,
                                temperature=s.temperature, seed=seed)
        user, case_text = self.fill(case)
        return judge_request(JUDGE_SYSTEM, user, case_text, response_schema=self._schema,
                             max_tokens=self.max_tokens or s.max_tokens, temperature=s.temperature, seed=seed)

    async def judge(self, case: Case, repeat: int | None = None) -> CheckResult:
        """The judge's verdict on ``case`` (``repeat``: which sample, never from the cache)."""
        s = self._settings
        if s is None or s.client is None:
            raise RuntimeError("TemplateJudge: bind the judge settings first (a run does)")
        client: JudgeClient = s.client
        outcome = await ask_judge(
            client, self.request(case, repeat=repeat),
            lambda text: parse_template_reply(text, self.expected_criteria),
            use_cache=s.use_cache and repeat is None,
        )
        res = outcome_result(outcome, client.judge_info(self.template_hash))
        if outcome.status == "scored":
            assert outcome.value is not None
            v = outcome.value
            res.score, res.reason, res.criteria = v.overall, v.lowest_rationale or "", v.criteria
            if self.threshold is not None:
                res.passed = v.overall >= self.threshold
        return res

    async def judge_row(self, case: Case, repeat: int | None = None) -> ResultRow:
        """The judge's verdict on ``case`` as the command's row."""
        return result_row(case, await self.judge(case, repeat), evaluator=self.evaluator, category=self.category,
                          repeat=repeat)

    async def evaluate_async(self, case: Case, output: Any) -> CheckResult:
        if (none := self.unbound()) is not None:
            return none
        if output is not case.output:
            case = Case(id=case.id, data={**case.data, "output": output}, source=case.source, line=case.line)
        return await self.judge(case)
