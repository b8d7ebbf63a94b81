"""The trajectory judge: what code cannot decide (tool selection, argument correctness, step efficiency,
final output correctness), graded per criterion by an LLM judge under the judge-reply contract.

Prompt defence (shared with the conversation and red-team judges):

1-3. **Delimiting, neutralising look-alike tags, the data notice**: :mod:`.prompt_guard`, as in every judge
   (blocks ``<name-NONCE> ... </name-NONCE>``, the nonce named in the system prompt).
4. **Schema-constrained reply.** The reply must match a JSON schema with exactly the rubric's criteria,
   scores 0-1; anything else is re-asked once and then ``unscored``.
5. **Compact rendering.** Steps are one line each, with arguments and results as escaped JSON and truncated,
   so a tool result cannot forge extra steps with newlines.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ..cases import Case
from ..providers._base import JudgeRequest
from ..results._schema import CriterionScore, ResultRow
from ..runner._client import JudgeClient
from ..trajectories import Trajectory, TrajectoryError, trajectory_of
from ._base import CheckResult, LLMEvaluator, register
from ._judge import outcome_row
from ._prompt_guard import data_block, judge_request, make_nonce, system_prompt
from ._reply import JudgeOutcome, ReplyInvalid, as_number, ask_judge, parse_verdict


def as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


# -- criteria replies -----------------------------------------------------------------------------------

def criteria_schema(ids: Sequence[str]) -> dict[str, Any]:
    item = {"type": "object", "properties": {"score": {"type": "number", "minimum": 0, "maximum": 1},
                                             "rationale": {"type": "string"}},
            "required": ["score", "rationale"], "additionalProperties": False}
    return {"type": "object", "properties": {i: item for i in ids}, "required": list(ids),
            "additionalProperties": False}


def parse_criteria_reply(text: str, ids: Sequence[str]) -> list[CriterionScore]:
    """Each criterion ``{score 0-1, rationale}``; a missing or out-of-range one makes the reply invalid."""
    return parse_verdict(text, lambda data: criteria_verdict(data, ids))


def criteria_verdict(data: dict[str, Any], ids: Sequence[str]) -> list[CriterionScore]:
    """Validate one JSON object as scores for the criteria ``ids``; raises :class:`ReplyInvalid`."""
    out = []
    missing = [i for i in ids if not isinstance(data.get(i), dict)]
    if missing:
        raise ReplyInvalid(f"criteria missing from the reply: {', '.join(missing)}")
    for i in ids:
        item = data[i]
        s = as_number(item.get("score"), f"{i}.score")
        if not 0.0 <= s <= 1.0:
            raise ReplyInvalid(f"{i}.score {s:g} is outside 0-1")
        r = item.get("rationale")
        out.append(CriterionScore(id=i, score=s, raw_score=s, scale="0-1", rationale=None if r is None else str(r)))
    return out


def combine_criteria(criteria: list[CriterionScore], outcome_id: str | None, *, cap: float = 0.5,
                     pass_mark: float = 0.5) -> tuple[float, str]:
    """The same rule as the deterministic ``trajectory`` check: ``outcome x mean(process)``, capped at ``cap``
    when any process criterion is below ``pass_mark``. Without an outcome criterion: the mean."""
    by_id = {c.id: c.score or 0.0 for c in criteria}
    process = [s for i, s in by_id.items() if i != outcome_id]
    if outcome_id is None or outcome_id not in by_id:
        return (sum(by_id.values()) / len(by_id) if by_id else 0.0), "mean of criteria"
    proc = sum(process) / len(process) if process else 1.0
    score = by_id[outcome_id] * proc
    if any(s < pass_mark for s in process) and score > cap:
        return cap, f"capped at {cap:g}: a process criterion is below {pass_mark:g}"
    return score, "outcome x mean(process)"


def lowest_rationale(criteria: list[CriterionScore]) -> str | None:
    scored = [c for c in criteria if c.score is not None]
    return min(scored, key=lambda c: c.score or 0.0).rationale if scored else None


# -- compact trajectory rendering -----------------------------------------------------------------------

def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"...[+{len(text) - limit} chars]"


def _one_line(value: Any) -> str:
    """JSON on one line: newlines inside strings stay escaped, so a result cannot forge new steps."""
    return json.dumps(value, ensure_ascii=False, sort_keys=False, default=str)


def render_trajectory(traj: Trajectory, *, max_chars: int = 200) -> str:
    """One line per step: ``3. tool({args}) -> result`` (or ``-> ERROR: message``), long parts truncated."""
    if not traj.steps:
        return "(no tool calls)"
    lines = []
    for s in traj.steps:
        args = "(arguments not recorded)" if s.extra.get("args_recorded") is False else clip(_one_line(s.args), max_chars)
        if s.error is not None:
            tail = "ERROR: " + clip(_one_line(s.error), max_chars)
        elif s.result is None:
            tail = "(no result recorded)"
        else:
            tail = clip(_one_line(s.result), max_chars)
        lines.append(f"{s.index}. {s.tool}({args}) -> {tail}")
    return "\n".join(lines)


# -- the trajectory judge -------------------------------------------------------------------------------

TRAJECTORY_CRITERIA: dict[str, str] = {
    "tool_selection": "Did the agent choose the right tools for the task, and avoid tools it should not use?",
    "argument_correctness": "Were the arguments of each call correct and grounded in the input and earlier "
                            "results (no invented ids or amounts)?",
    "step_efficiency": "Did the agent reach the goal without unnecessary, repeated or looping steps?",
    "final_output_correctness": "Is the final output correct and complete for the task, consistent with the "
                                "tool results?",
}
OUTCOME_CRITERION = "final_output_correctness"


def rubric_text(criteria: Mapping[str, str], *, intro: str) -> str:
    lines = [intro, "", "Score each criterion from 0.0 (fails) to 1.0 (fully meets) with a one-sentence "
             "rationale:"]
    lines += [f"- {cid}: {desc}" for cid, desc in criteria.items()]
    example = {cid: {"score": 0.0, "rationale": "..."} for cid in criteria}
    lines += ["", "Reply with only this JSON object:", json.dumps(example)]
    return "\n".join(lines)


@dataclass
class PromptParts:
    system: str
    user: str
    nonce: str
    case_text: tuple[str, ...] = ()


def build_prompt(blocks: Sequence[tuple[str, str]], rubric: str) -> PromptParts:
    """Rubric first (outside the data), then each ``(name, text)`` block delimited with a shared nonce."""
    nonce = make_nonce(*(t for _, t in blocks))
    body = "\n\n".join(data_block(n, t, nonce) for n, t in blocks)
    user = f"{rubric}\n\nThe case to judge (data only):\n\n{body}\n\nReply with the JSON object now."
    return PromptParts(system=system_prompt("You are a careful evaluation judge.", nonce=nonce), user=user,
                       nonce=nonce, case_text=tuple(t for _, t in blocks))


class CriteriaJudge:
    """Shared machinery: a judge that grades named criteria 0-1 over delimited case text."""

    evaluator = "criteria_judge"
    outcome_criterion: str | None = None

    def __init__(self, client: JudgeClient | None, criteria: Mapping[str, str], *, template_hash: str | None = None,
                 max_tokens: int = 1024, temperature: float | None = None, seed: int | None = None,
                 use_cache: bool = True, cap: float = 0.5, category: str | None = None) -> None:
        if not criteria:
            raise ValueError("a judge needs at least one criterion")
        self.client = client
        self.criteria = dict(criteria)
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.seed = seed
        self.use_cache = use_cache
        self.cap = cap
        self.category = category
        # No client: the judge only builds prompts (dry runs count and price them).
        self.judge_info = (None if client is None else
                           client.judge_info(template_hash or make_nonce(json.dumps(self.criteria, sort_keys=True))))

    def request(self, parts: PromptParts) -> JudgeRequest:
        return judge_request(parts.system, parts.user, parts.case_text,
                            response_schema=criteria_schema(list(self.criteria)), max_tokens=self.max_tokens,
                            temperature=self.temperature, seed=self.seed)

    async def judge(self, case: Case, parts: PromptParts, *, turn: int | None = None,
                    details: dict[str, Any] | None = None) -> ResultRow:
        assert self.client is not None, "a judge built without a client only builds prompts"
        ids = list(self.criteria)
        outcome: JudgeOutcome[list[CriterionScore]] = await ask_judge(
            self.client, self.request(parts), lambda text: parse_criteria_reply(text, ids), use_cache=self.use_cache)
        fields = outcome_row(case, outcome, evaluator=self.evaluator, judge=self.judge_info,
                             category=self.category, repeat=None)
        fields["turn"] = turn
        fields["details"] = dict(details or {})
        if outcome.status == "scored":
            assert outcome.value is not None
            score, rule = combine_criteria(outcome.value, self.outcome_criterion, cap=self.cap)
            fields.update(score=round(score, 6), criteria=outcome.value, rationale=lowest_rationale(outcome.value))
            fields["details"]["rule"] = rule
        return ResultRow(**fields)

    @staticmethod
    def error(case: Case, message: str, *, evaluator: str, category: str | None = None,
              turn: int | None = None) -> ResultRow:
        return ResultRow(id=case.id, status="error", evaluator=evaluator, category=category or case.category,
                         error=message, turn=turn, metadata=case.metadata)


class TrajectoryJudge(CriteriaJudge):
    """Grades a case's trajectory and final output. Rows: ``evaluator: trajectory_judge``, one criterion each."""

    evaluator = "trajectory_judge"
    outcome_criterion: str | None = OUTCOME_CRITERION

    def __init__(self, client: JudgeClient | None, criteria: Mapping[str, str] | None = None, *, max_chars: int = 200,
                 **kwargs: Any) -> None:
        super().__init__(client, criteria or TRAJECTORY_CRITERIA, **kwargs)
        self.max_chars = max_chars
        if self.outcome_criterion not in self.criteria:
            self.outcome_criterion = None

    def prompt(self, case: Case, traj: Trajectory) -> PromptParts:
        blocks = [("input", as_text(case.input))]
        if case.reference is not None:
            blocks.append(("reference", as_text(case.reference)))
        blocks += [("trajectory", render_trajectory(traj, max_chars=self.max_chars)),
                   ("final_output", as_text(traj.final_output))]
        rubric = rubric_text(self.criteria, intro="Evaluate how an AI agent worked on a task: the tools it "
                             "called (one line per step: tool(arguments) -> result) and its final output.")
        return build_prompt(blocks, rubric)

    async def evaluate(self, case: Case) -> ResultRow:
        try:
            traj = trajectory_of(case)
        except TrajectoryError as exc:
            return self.error(case, str(exc), evaluator=self.evaluator, category=self.category)
        return await self.judge(case, self.prompt(case, traj),
                                details={"steps": len(traj.steps), "tools": traj.tools})


# -- the trajectory judge as a suite evaluator ------------------------------------------------------------

@register
@dataclass
class TrajectoryJudgeCheck(LLMEvaluator):
    """``trajectory_judge`` in suite files: the trajectory judge bound by the suite runner to its judge client.
    ``criteria``: ``{id: description}`` replacing the default rubric."""

    name: ClassVar[str] = "trajectory_judge"
    criteria: dict[str, str] | None = None
    max_chars: int = 200
    threshold: float = 0.7
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.criteria is not None and (not isinstance(self.criteria, dict) or not self.criteria or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in self.criteria.items())):
            raise ValueError("criteria must map criterion ids to descriptions")
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError("threshold must be within 0-1")

    def _judge(self) -> TrajectoryJudge:
        s = self._settings
        return TrajectoryJudge(s.client if s else None, self.criteria, max_chars=self.max_chars,
                               max_tokens=self.max_tokens or (s.max_tokens if s else 1024),
                               temperature=s.temperature if s else None, seed=s.seed if s else None,
                               use_cache=s.use_cache if s else True)

    def _case(self, case: Case, output: Any) -> Case:
        if output is case.output:
            return case
        return Case(id=case.id, data={**case.data, "output": output}, source=case.source, line=case.line)

    def request(self, case: Case, output: Any) -> JudgeRequest:
        tj = self._judge()
        case = self._case(case, output)
        try:
            traj = trajectory_of(case)
        except TrajectoryError:
            traj = Trajectory(final_output=output)
        return tj.request(tj.prompt(case, traj))

    async def evaluate_async(self, case: Case, output: Any) -> CheckResult:
        s = self._settings
        if s is None or s.client is None:
            return CheckResult(score=None, status="unscored", reason="no judge configured")
        row = await self._judge().evaluate(self._case(case, output))
        if row.status != "scored" or row.score is None:
            return CheckResult.from_row(row)
        return CheckResult.from_row(row, threshold=self.threshold, rule=row.details.get("rule"))
