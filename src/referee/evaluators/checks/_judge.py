"""``llm_judge``: the template judge (``referee judge``'s :class:`~referee.evaluators._judge.TemplateJudge`) as a
suite evaluator, with referee's default template and a ``rubric`` when no template is given, and a pass
``threshold`` (0.7). The runner binds it to the run's judge settings (:class:`..base.JudgeSettings`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ...cases._case import Case
from ...cases._templates import case_values
from .._base import register, with_output
from .._judge import TemplateJudge
from .._prompt_guard import fill_template
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
class LLMJudge(TemplateJudge):
    """An LLM judge with a prompt template (``template``/``template_file``, ``{placeholders}`` filled from the
    case) or, by default, referee's built-in template with a ``rubric``. Unscored replies stay unscored."""

    name: ClassVar[str] = "llm_judge"
    primary: ClassVar[str] = "rubric"
    internal_options: ClassVar[frozenset[str]] = frozenset({"category", "expected_criteria", "request_format", "template_hash"})
    template: str | None = None
    template_file: str | None = None
    rubric: str | None = None
    criteria: list[str] | None = None
    """Criterion names the reply must contain (a reply missing one is invalid)."""
    threshold: float | None = 0.7
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.template is not None and self.template_file is not None:
            raise OptionError("template", "give 'template' or 'template_file', not both")
        if self.threshold is not None and not 0.0 <= self.threshold <= 1.0:
            raise OptionError("threshold", f"{self.threshold} is outside 0-1")
        self.expected_criteria = self.criteria
        super().__post_init__()

    def template_text(self) -> str:
        if self.template_file is not None:
            try:
                return Path(self.template_file).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise OptionError("template_file", f"cannot read {self.template_file}: {exc}") from None
        if self.template is not None:
            return self.template
        return DEFAULT_TEMPLATE.replace("{rubric}", self.rubric or DEFAULT_RUBRIC)

    def with_defaults(self, **defaults: Any) -> LLMJudge:
        """A copy with suite-level judge defaults for the options this entry leaves unset."""
        changes = {k: v for k, v in defaults.items() if v is not None and getattr(self, k, None) is None
                   and k in {f.name for f in dataclasses.fields(self) if f.init}
                   and k not in self.internal_options}
        if not changes:
            return self
        if "template" in changes or "template_file" in changes:
            changes.pop("rubric", None)
        if self.template is not None or self.template_file is not None:
            changes.pop("template", None)
            changes.pop("template_file", None)
        return dataclasses.replace(self, **changes, template_hash=None)

    def prompt(self, case: Case, output: Any) -> str:
        return self.prompt_parts(case, output)[0]

    def prompt_parts(self, case: Case, output: Any) -> tuple[str, tuple[str, ...]]:
        """The user message and the case text it embeds (delimited by :mod:`..prompt_guard`)."""
        return self.fill(with_output(case, output))

    def fill(self, case: Case) -> tuple[str, tuple[str, ...]]:
        text = self._template
        if "{reference_block}" in text:
            text = text.replace("{reference_block}", _REFERENCE_BLOCK if case.reference is not None else "")
        return fill_template(text, case_values(case))
