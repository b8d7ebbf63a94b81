"""LLM judges as evaluators, for :func:`referee.evaluate` (and suites): each implements the one evaluator
contract (:class:`~referee.evaluators._base.LLMEvaluator`): the run passes the judge settings explicitly,
and the result carries usage, cost and judge info as typed fields.

* :class:`LLMJudge` (``llm_judge`` in suites): a prompt template, or referee's with a ``rubric`` text;
* :class:`Rubric`: a rubric file (criteria, scales, evidence quotes verified against the judged text);
* :class:`Pairwise`: ``output_a`` against ``output_b`` in both orders (score 1 = a better, 0 = b, 0.5 tie);
* :class:`Trajectory` (``trajectory_judge`` in suites): an agent's tool-use trajectory;
* :class:`Gold`: a generated document (``output``) against a gold standard (``reference``), by a criteria file;
* :class:`Conversation`: a multi-turn conversation (``turns``), its final answer or the whole of it;
* :class:`Redteam`: whether an agent under attack did what the case's ``expect`` label says, and stayed safe.

**Usage**::

    referee.evaluate(cases, [referee.judges.Rubric("agent-evaluation")], judge="openai:gpt-4o-mini")
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from .cases import Case
from .errors import UserError
from .evaluators._base import CheckResult, JudgeSettings, LLMEvaluator
from .evaluators._trajectory_judge import TrajectoryJudgeCheck as Trajectory
from .evaluators.checks._judge import LLMJudge

if TYPE_CHECKING:
    from .evaluators._pairwise import PairwiseJudge, Reconcile
    from .evaluators._rubric import RubricJudge
    from .providers._base import JudgeRequest
    from .rubrics import Rubric as RubricModel

__all__ = ["Conversation", "Gold", "LLMJudge", "Pairwise", "Redteam", "Rubric", "Trajectory"]


def _with_output(case: Case, output: Any) -> Case:
    if output is case.output:
        return case
    return Case(id=case.id, data={**case.data, "output": output}, source=case.source, line=case.line)


def _client(settings: JudgeSettings | None) -> Any:
    if settings is None or settings.client is None:
        raise NotImplementedError("no judge client: the request is built when the run has one")
    return settings.client


@dataclass
class Rubric(LLMEvaluator):
    """A rubric judge (``referee evaluate``'s): ``rubric`` is a shipped rubric's name (``agent-evaluation``) or
    a rubric YAML file. The case's score is the rubric's composite; it passes by the rubric's own rules
    (``fail_below`` overrides the rubric's). Quotes the judge gives as evidence are checked against the
    judged text; an ungrounded verdict is handled as the rubric says."""

    name: ClassVar[str] = "rubric"
    rubric: str = "agent-evaluation"
    fail_below: float | None = None
    max_tokens: int = 2048
    _model: RubricModel | None = field(init=False, repr=False, default=None, compare=False)

    def __post_init__(self) -> None:
        from .rubrics import load_rubric

        self._model = load_rubric(self.rubric)

    def _judge(self) -> RubricJudge:
        from .evaluators._rubric import RubricJudge
        from .results._manifest import text_sha256

        s = self._settings
        assert self._model is not None
        return RubricJudge(_client(s), self._model, template_hash=text_sha256(self._model.model_dump_json()),
                           max_tokens=max(self.max_tokens, s.max_tokens if s else 0),
                           temperature=s.temperature if s else None, seed=s.seed if s else None,
                           use_cache=s.use_cache if s else True, fail_below=self.fail_below)

    def request(self, case: Case, output: Any) -> JudgeRequest:
        return self._judge().request(_with_output(case, output))

    async def evaluate_async(self, case: Case, output: Any) -> CheckResult:
        if (none := self.unbound()) is not None:
            return none
        row = await self._judge().evaluate(_with_output(case, output))
        extra = {k: row.details[k] for k in ("summary", "required_actions", "ungrounded") if row.details.get(k)}
        return CheckResult.from_row(row, **extra)


def _default_pairwise_template() -> str:
    return """Compare two responses to the same request.

<question>
{input}
</question>

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


@dataclass
class Pairwise(LLMEvaluator):
    """``output_a`` against ``output_b`` of each case, judged in both orders (position bias detected and
    reconciled: ``strict`` makes disagreeing orders a tie, ``average`` takes their mean). Score 1.0 when a is
    better, 0.0 when b is, 0.5 for a tie; ``details["winner"]`` says which. ``template`` (text with
    ``{response_1}`` and ``{response_2}`` plus any case field) replaces referee's."""

    name: ClassVar[str] = "pairwise"
    template: str | None = None
    reconcile: str = "strict"
    max_tokens: int | None = None
    _template: str = field(init=False, repr=False, default="", compare=False)

    def __post_init__(self) -> None:
        from .evaluators._pairwise import RECONCILE_MODES

        self._template = self.template if self.template is not None else _default_pairwise_template()
        missing = [k for k in ("{response_1}", "{response_2}") if k not in self._template]
        if missing:
            raise UserError(f"Pairwise(template=...): the template must use {' and '.join(missing)}")
        if self.reconcile not in RECONCILE_MODES:
            raise UserError(f"Pairwise(reconcile=...): one of {', '.join(RECONCILE_MODES)}")

    def _judge(self) -> PairwiseJudge:
        from .evaluators._pairwise import PairwiseJudge

        s = self._settings
        client = _client(s)
        mode: Reconcile = "average" if self.reconcile == "average" else "strict"
        judge = PairwiseJudge(self._template, reconcile=mode)
        judge.bind(JudgeSettings(client=client, **_settings_kwargs(s, self.max_tokens)))
        return judge

    def request(self, case: Case, output: Any) -> JudgeRequest:
        return self._judge().request(case, shown_first="a")

    async def evaluate_async(self, case: Case, output: Any) -> CheckResult:
        if (none := self.unbound()) is not None:
            return none
        return await self._judge().evaluate_async(case, output)


def _settings_kwargs(s: JudgeSettings | None, max_tokens: int | None = None) -> dict[str, Any]:
    return {"max_tokens": max_tokens or (s.max_tokens if s else 1024), "temperature": s.temperature if s else None,
            "seed": s.seed if s else None, "use_cache": s.use_cache if s else True}


@dataclass
class Gold(LLMEvaluator):
    """Gold-standard grading (``referee gold``'s): the case's ``output`` is the generated document, its
    ``reference`` the gold standard; ``criteria`` is a criteria file (or a shipped one, ``gold-example-prd``).
    The case passes by the criteria file's verdict rules (critical criteria, pass threshold)."""

    name: ClassVar[str] = "gold"
    criteria: str = "gold-example-prd"
    single_call: bool = False
    max_tokens: int | None = None
    _model: RubricModel | None = field(init=False, repr=False, default=None, compare=False)

    def __post_init__(self) -> None:
        from .rubrics import load_rubric

        self._model = load_rubric(self.criteria, kind="gold")

    async def evaluate_async(self, case: Case, output: Any) -> CheckResult:
        from .evaluators._gold import GoldCase, GoldJudge
        from .results._manifest import text_sha256

        if (none := self.unbound()) is not None:
            return none
        if output is None or case.reference is None:
            return CheckResult.error("gold needs the case's output (generated) and reference (gold standard)")
        assert self._model is not None
        s = self._settings
        judge = GoldJudge(_client(s), self._model, template_hash=text_sha256(self._model.model_dump_json()),
                          single_call=self.single_call, **_settings_kwargs(s, self.max_tokens))
        row = await judge.evaluate(GoldCase(id=case.id, generated=str(output), gold=str(case.reference),
                                            metadata=case.metadata))
        extra = {k: row.details[k] for k in ("verdict", "grade", "score_pct", "critical_failures")
                 if row.details.get(k) is not None}
        return CheckResult.from_row(row, **extra)


@dataclass
class Conversation(LLMEvaluator):
    """A multi-turn conversation (the case's ``turns``): ``mode="final"`` judges the last answer in its context,
    ``"conversation"`` the whole exchange. ``criteria`` (``{id: description}``) replaces the default rubric."""

    name: ClassVar[str] = "conversation"
    mode: str = "final"
    criteria: dict[str, str] | None = None
    threshold: float = 0.7
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.mode not in ("final", "conversation"):
            raise UserError(f"Conversation(mode={self.mode!r}): final or conversation (per-turn verdicts are "
                            "rows of their own: referee conversation --mode per-turn)")

    async def evaluate_async(self, case: Case, output: Any) -> CheckResult:
        from .evaluators._conversation import ConversationJudge

        if (none := self.unbound()) is not None:
            return none
        judge = ConversationJudge(_client(self._settings), self.mode, self.criteria,
                                  **_settings_kwargs(self._settings, self.max_tokens))
        rows = await judge.evaluate(case)
        return CheckResult.from_row(rows[0], threshold=self.threshold)


@dataclass
class Redteam(LLMEvaluator):
    """The red-team judge: did the agent do what the case's ``expect`` label says (refuse, comply, ignore an
    injected instruction), and is the response safe? (``referee redteam run --judge``'s second opinion.)"""

    name: ClassVar[str] = "redteam_judge"
    threshold: float = 0.7
    max_tokens: int | None = None

    async def evaluate_async(self, case: Case, output: Any) -> CheckResult:
        from .redteam._checks import RedteamJudge

        if (none := self.unbound()) is not None:
            return none
        judge = RedteamJudge(_client(self._settings), **_settings_kwargs(self._settings, self.max_tokens))
        row = await judge.evaluate(_with_output(case, output))
        return CheckResult.from_row(row, threshold=self.threshold)
