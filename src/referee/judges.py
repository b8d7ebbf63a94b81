"""LLM judges as evaluators, for :func:`referee.evaluate` and suites. Each implements the one evaluator
contract (:class:`~referee.evaluators._base.LLMEvaluator`): the run passes the judge settings explicitly, and the
result carries usage, cost and judge info as typed fields. They are the very judges the commands run.

* :class:`LLMJudge` (``llm_judge`` in suites): a prompt template, or referee's with a ``rubric`` text;
* :class:`Rubric` (``rubric``): a rubric file (criteria, scales, evidence quotes verified against the judged text);
* :class:`Pairwise` (``pairwise``): ``output_a`` against ``output_b`` in both orders (score 1 = a better, 0 = b,
  0.5 tie);
* :class:`Trajectory` (``trajectory_judge``): an agent's tool-use trajectory;
* :class:`Gold` (``gold``): a generated document (``output``) against a gold standard (``reference``), by a
  criteria file;
* :class:`Conversation`: a multi-turn conversation (``turns``): its final answer, the whole of it, or every
  assistant turn (``mode="per_turn"``);
* :class:`Redteam`: whether an agent under attack did what the case's ``expect`` label says, and stayed safe;
* the claim-level RAG metrics (an answer built from retrieved ``contexts``; every verdict rests on a quote checked
  in its chunk, see docs/rag.md): :class:`Faithfulness`, :class:`ContextRecall`, :class:`ContextPrecision`,
  :class:`AnswerRelevancy`, :class:`ClaimPrecision`, :class:`ClaimRecall`, :class:`ClaimF1`,
  :class:`ContextUtilization`, :class:`NoiseSensitivity`, :class:`Hallucination`, :class:`SelfKnowledge`.

**Usage**::

    referee.evaluate(cases, [referee.judges.Rubric("agent-evaluation")], judge="openai:gpt-4o-mini")
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from .errors import UserError
from .evaluators._base import JudgeSettings, register
from .evaluators._conversation import ConversationJudge as Conversation
from .evaluators._gold import GoldJudge as Gold
from .evaluators._pairwise import RECONCILE_MODES, PairwiseJudge
from .evaluators._rag import (
    AnswerRelevancy,
    ClaimF1,
    ClaimPrecision,
    ClaimRecall,
    ContextPrecision,
    ContextRecall,
    ContextUtilization,
    Faithfulness,
    Hallucination,
    NoiseSensitivity,
    SelfKnowledge,
)
from .evaluators._redteam import RedteamJudge as Redteam
from .evaluators._rubric import RubricJudge as Rubric
from .evaluators._trajectory_judge import TrajectoryJudge as Trajectory
from .evaluators.checks._judge import LLMJudge

__all__ = ["AnswerRelevancy", "ClaimF1", "ClaimPrecision", "ClaimRecall", "ContextPrecision", "ContextRecall",
           "ContextUtilization", "Conversation", "Faithfulness", "Gold", "Hallucination", "LLMJudge", "NoiseSensitivity",
           "Pairwise", "Redteam", "Rubric", "SelfKnowledge", "Trajectory"]

DEFAULT_PAIRWISE_TEMPLATE = """Compare two responses to the same request.

<question>
{input}
</question>
{reference_block}
<response_1>
{response_1}
</response_1>

<response_2>
{response_2}
</response_2>

Which response is better? Prefer the one that is correct and invents nothing, then the one that is more
helpful. The order of the responses means nothing. If they are equally good, answer "tie".

Reply with JSON only:
{"winner": "response_1" | "response_2" | "tie", "rationale": "one sentence"}
"""


@register
@dataclass
class Pairwise(PairwiseJudge):
    """``pairwise``: ``output_a`` against ``output_b`` of each case, judged in both orders (position bias
    detected and reconciled: ``strict`` makes disagreeing orders a tie, ``average`` takes their mean). Score 1.0
    when a is better, 0.0 when b is, 0.5 for a tie; the row's ``winner`` says which. ``template`` (text with
    ``{response_1}`` and ``{response_2}`` plus any case field) replaces referee's."""

    name: ClassVar[str] = "pairwise"
    # request_format (the seed-exact request) is for `referee pairwise` runs migrated from the seed.
    internal_options: ClassVar[frozenset[str]] = frozenset({"category", "template_hash", "name_a", "name_b",
                                                            "request_format"})
    template: str = ""
    """The prompt, with ``{response_1}`` and ``{response_2}`` (default: referee's)."""
    max_tokens: int | None = None
    """The judge's reply budget (default: the run's)."""

    def __post_init__(self) -> None:
        self.template = self.template or DEFAULT_PAIRWISE_TEMPLATE
        missing = [k for k in ("{response_1}", "{response_2}") if k not in self.template]
        if missing:
            raise UserError(f"Pairwise(template=...): the template must use {' and '.join(missing)}")
        if self.reconcile not in RECONCILE_MODES:
            raise UserError(f"Pairwise(reconcile=...): one of {', '.join(RECONCILE_MODES)}")
        super().__post_init__()

    def bind(self, settings: JudgeSettings) -> None:
        super().bind(dataclasses.replace(settings, max_tokens=self.max_tokens or settings.max_tokens))
