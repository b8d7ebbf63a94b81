"""``llm_judge``: the template judge as a suite evaluator (through the foundation's pipeline: cache, retries,
the judge-reply contract). The runner binds it to the run's judge settings (:class:`..base.JudgeSettings`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from ...cases._case import Case
from ...cases._templates import case_values
from ...providers._base import JudgeRequest
from ...results._manifest import text_sha256
from .._base import CheckResult, LLMEvaluator, register
from .._judge import JUDGE_SYSTEM, parse_template_reply, template_reply_schema
from .._prompt_guard import fill_template, judge_request
from .._reply import ask_judge
from ._common import OptionError

DEFAULT_TEMPLATE = """Grade the answer to the question below against the criteria.

<question>
{input}
</question>
{reference_block}
<answer>
{output}
</answer>

Criteria:
{rubric}

Score each criterion from 0.0 (fails) to 1.0 (fully meets) with a one-sentence rationale, and give an
overall_score from 0.0 to 1.0. Reply with JSON only, e.g.:
{"<criterion>": {"score": 0.0, "rationale": "..."}, "overall_score": 0.0}
"""

_REFERENCE_BLOCK = "\n<reference>\n{reference}\n</reference>\n"
DEFAULT_RUBRIC = "- correctness: the answer is correct and consistent with the reference, inventing nothing."


@register
@dataclass
class LLMJudge(LLMEvaluator):
    """An LLM judge with a prompt template (``template``/``template_file``, ``{placeholders}`` filled from the
    case) or, by default, referee's built-in template with a ``rubric``. Unscored replies stay unscored."""

    name: ClassVar[str] = "llm_judge"
    primary: ClassVar[str] = "rubric"
    template: str | None = None
    template_file: str | None = None
    rubric: str | None = None
    criteria: list[str] | None = None
    """Criterion names the reply must contain (a reply missing one is invalid)."""
    threshold: float = 0.7
    max_tokens: int | None = None
    _template: str = field(init=False, repr=False, default="")

    def __post_init__(self) -> None:
        if self.template is not None and self.template_file is not None:
            raise OptionError("template", "give 'template' or 'template_file', not both")
        if self.template_file is not None:
            try:
                self._template = Path(self.template_file).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise OptionError("template_file", f"cannot read {self.template_file}: {exc}") from None
        elif self.template is not None:
            self._template = self.template
        else:
            self._template = DEFAULT_TEMPLATE.replace("{rubric}", self.rubric or DEFAULT_RUBRIC)
        if not 0.0 <= self.threshold <= 1.0:
            raise OptionError("threshold", f"{self.threshold} is outside 0-1")

    @property
    def template_hash(self) -> str:
        return text_sha256(self._template)

    def with_defaults(self, **defaults: Any) -> LLMJudge:
        """A copy with suite-level judge defaults for the options this entry leaves unset."""
        changes = {k: v for k, v in defaults.items() if v is not None and getattr(self, k, None) is None
                   and k in {f.name for f in dataclasses.fields(self) if f.init}}
        if not changes:
            return self
        if "template" in changes or "template_file" in changes:
            changes.pop("rubric", None)
        if self.template is not None or self.template_file is not None:
            changes.pop("template", None)
            changes.pop("template_file", None)
        return dataclasses.replace(self, **changes)

    def prompt(self, case: Case, output: Any) -> str:
        return self.prompt_parts(case, output)[0]

    def prompt_parts(self, case: Case, output: Any) -> tuple[str, tuple[str, ...]]:
        """The user message and the case text it embeds (delimited by :mod:`..prompt_guard`)."""
        if output is not case.output:
            case = Case(id=case.id, data={**case.data, "output": output}, source=case.source, line=case.line)
        text = self._template
        if "{reference_block}" in text:
            text = text.replace("{reference_block}", _REFERENCE_BLOCK if case.reference is not None else "")
        return fill_template(text, case_values(case))

    def request(self, case: Case, output: Any) -> JudgeRequest:
        s = self._settings
        user, case_text = self.prompt_parts(case, output)
        return judge_request(
            JUDGE_SYSTEM, user, case_text, response_schema=template_reply_schema(self.criteria),
            max_tokens=self.max_tokens or (s.max_tokens if s else 1024),
            temperature=s.temperature if s else None, seed=s.seed if s else None,
        )

    async def evaluate_async(self, case: Case, output: Any) -> CheckResult:
        s = self._settings
        if s is None or s.client is None:
            return CheckResult(score=None, status="unscored", reason="no judge configured")
        outcome = await ask_judge(s.client, self.request(case, output),
                                  lambda text: parse_template_reply(text, self.criteria), use_cache=s.use_cache)
        typed: dict[str, Any] = {
            "usage": outcome.usage, "cost_usd": outcome.cost_usd, "latency_ms": outcome.latency_ms,
            "judge": s.client.judge_info(self.template_hash), "raw_reply": outcome.raw_excerpt,
        }
        if outcome.status != "scored" or outcome.value is None:
            return CheckResult(score=None, status=outcome.status, reason=outcome.error or "unscored", **typed)
        v = outcome.value
        return CheckResult(score=v.overall, passed=v.overall >= self.threshold, reason=v.lowest_rationale or "",
                           details={"criteria": [c.model_dump(mode="json", exclude_defaults=True)
                                                 for c in v.criteria]}, **typed)
