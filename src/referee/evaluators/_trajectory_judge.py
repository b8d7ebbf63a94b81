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
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from .._util._image import contains_image, with_markers
from .._util._image import prompt_text as image_prompt_text
from ..cases._case import Case
from ..providers._base import JudgeRequest
from ..results._combine import goal_times_process, mean_of_turns
from ..results._schema import CriterionScore, ResultRow
from ..trajectories import Trajectory, TrajectoryError, trajectory_of
from ._base import CheckResult, LLMEvaluator, register, result_row, with_output
from ._judge import outcome_result
from ._prompt_guard import data_block, judge_request, make_nonce, system_prompt
from ._reply import JudgeOutcome, ReplyInvalid, as_number, ask_judge, parse_verdict


def prompt_text(value: Any) -> str:
    """A case value as prompt text: strings as they are, anything else as indented JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if contains_image(value):  # each image where its marker sits: the request sends it there
        return image_prompt_text(value, lambda v: json.dumps(v, indent=2, ensure_ascii=False, default=str))
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


# -- criteria replies -----------------------------------------------------------------------------------

def criteria_schema(ids: Sequence[str]) -> dict[str, Any]:
    """The JSON schema of a criteria reply: ``{id: {score 0-1, rationale}}`` for exactly ``ids``."""
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
    score, decided = goal_times_process(by_id[outcome_id], process, process_failed=any(s < pass_mark for s in process),
                                        critical_failed=False, cap=cap)
    if decided == "capped":
        return score, f"capped at {cap:g}: a process criterion is below {pass_mark:g}"
    return score, "outcome x mean(process)"


def lowest_rationale(criteria: list[CriterionScore]) -> str | None:
    """The rationale of the lowest-scored criterion (what explains the score)."""
    scored = [c for c in criteria if c.score is not None]
    return min(scored, key=lambda c: c.score or 0.0).rationale if scored else None


# -- compact trajectory rendering -----------------------------------------------------------------------

def truncated(text: str, limit: int) -> str:
    """``text`` cut at ``limit`` characters, saying how many were left out."""
    return text if len(text) <= limit else text[:limit] + f"...[+{len(text) - limit} chars]"


def _one_line(value: Any) -> str:
    """JSON on one line: newlines inside strings stay escaped, so a result cannot forge new steps (a tool's
    image result becomes its marker, on the same line)."""
    if contains_image(value):
        value = with_markers(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=False, default=str)


def render_trajectory(traj: Trajectory, *, max_chars: int = 200) -> str:
    """One line per step: ``3. tool({args}) -> result`` (or ``-> ERROR: message``), long parts truncated."""
    if not traj.steps:
        return "(no tool calls)"
    lines = []
    for s in traj.steps:
        args = "(arguments not recorded)" if s.extra.get("args_recorded") is False else truncated(_one_line(s.args), max_chars)
        if s.error is not None:
            tail = "ERROR: " + truncated(_one_line(s.error), max_chars)
        elif s.result is None:
            tail = "(no result recorded)"
        else:
            tail = truncated(_one_line(s.result), max_chars)
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
    """The instructions: ``intro``, each criterion to score 0-1, and the reply's shape."""
    lines = [intro, "", "Score each criterion from 0.0 (fails) to 1.0 (fully meets) with a one-sentence "
             "rationale:"]
    lines += [f"- {cid}: {desc}" for cid, desc in criteria.items()]
    example = {cid: {"score": 0.0, "rationale": "..."} for cid in criteria}
    lines += ["", "Reply with only this JSON object:", json.dumps(example)]
    return "\n".join(lines)


@dataclass
class PromptParts:
    """A built judge prompt: system and user text, the nonce of its blocks and the case text inside them."""

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


@dataclass(kw_only=True)
class CriteriaJudge(LLMEvaluator):
    """Shared machinery: an LLM evaluator grading named criteria 0-1 over delimited case text.

    Subclasses say what the judge sees (:meth:`prompts`: one prompt, or one per assistant turn) and their
    default rubric. :meth:`judge_rows` gives the command's rows (one per prompt); :meth:`evaluate_async` the
    same verdict as one :class:`CheckResult` (see :meth:`result_of` for several turns)."""

    evaluator: ClassVar[str] = "criteria_judge"
    default_criteria: ClassVar[Mapping[str, str]] = {}
    outcome_id: ClassVar[str | None] = None
    """The outcome criterion of ``outcome x mean(process)`` when the rubric has it (else the mean)."""
    internal_options: ClassVar[frozenset[str]] = frozenset({"category", "template_hash", "cap"})
    case_errors: ClassVar[tuple[type[Exception], ...]] = ()
    """What :meth:`prompts` raises for a case that cannot be judged (an ``error`` row, no judge call)."""

    criteria: dict[str, str] = field(default_factory=dict)
    """``{id: description}`` replacing the default rubric (empty: the default)."""
    threshold: float = 0.7
    """A case passes when its score is at least this."""
    max_tokens: int | None = None
    """The judge's reply budget (default: the run's)."""
    cap: float = 0.5
    category: str | None = None
    template_hash: str | None = None
    """Recorded in each row's judge info (default: a hash of the criteria)."""

    def __post_init__(self) -> None:
        if not isinstance(self.criteria, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in self.criteria.items()):
            raise ValueError("criteria must map criterion ids to descriptions")
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError("threshold must be within 0-1")
        self.criteria = dict(self.criteria or self.default_rubric)
        if not self.criteria:
            raise ValueError("a judge needs at least one criterion")
        if self.template_hash is None:
            self.template_hash = self.default_template_hash()

    def default_template_hash(self) -> str:
        """What the rows' judge info records when no ``template_hash`` is given: the hash of the rubric."""
        return make_nonce(json.dumps(self.criteria, sort_keys=True))

    @property
    def default_rubric(self) -> Mapping[str, str]:
        return self.default_criteria

    @property
    def outcome_criterion(self) -> str | None:
        return self.outcome_id if self.outcome_id in self.criteria else None

    @property
    def row_evaluator(self) -> str:
        """The rows' ``evaluator`` label."""
        return self.evaluator

    def request_for(self, parts: PromptParts) -> JudgeRequest:
        return judge_request(parts.system, parts.user, parts.case_text,
                             response_schema=criteria_schema(list(self.criteria)),
                             **self.sampling(self.max_tokens))

    def prompts(self, case: Case) -> list[tuple[int | None, PromptParts, dict[str, Any]]]:
        """``(turn, prompt, details)`` for each verdict on ``case``; raises one of :attr:`case_errors` when
        the case cannot be judged."""
        raise NotImplementedError

    def request(self, case: Case, output: Any = None) -> JudgeRequest:
        return self.request_for(self.prompts(with_output(case, output if output is not None else case.output))[0][1])

    async def judge(self, case: Case, parts: PromptParts, *, details: dict[str, Any] | None = None) -> CheckResult:
        """One verdict: the criteria, their combination (the outcome criterion times the mean of the others, or
        the mean), a pass at :attr:`threshold`."""
        client = self.client()
        ids = list(self.criteria)
        outcome: JudgeOutcome[list[CriterionScore]] = await ask_judge(
            client, self.request_for(parts), lambda text: parse_criteria_reply(text, ids), use_cache=self.use_cache)
        res = outcome_result(outcome, client.judge_info(self.template_hash))
        res.details = dict(details or {})
        if outcome.status == "scored":
            assert outcome.value is not None
            score, rule = combine_criteria(outcome.value, self.outcome_criterion, cap=self.cap)
            res.score, res.criteria = round(score, 6), outcome.value
            res.reason = lowest_rationale(outcome.value) or ""
            res.passed = res.score >= self.threshold
            res.details["rule"] = rule
        return res

    async def judge_results(self, case: Case) -> list[tuple[int | None, CheckResult]]:
        """``(turn, verdict)`` for each prompt of ``case`` (an ``error`` result when it cannot be judged)."""
        try:
            prompts = self.prompts(case)
        except self.case_errors as exc:
            return [(None, CheckResult(score=None, status="error", error_message=str(exc)))]
        return [(turn, await self.judge(case, parts, details=details)) for turn, parts, details in prompts]

    async def judge_rows(self, case: Case) -> list[ResultRow]:
        """The command's rows for ``case``: one per prompt (per assistant turn, they carry ``turn``)."""
        return [result_row(case, r, evaluator=self.row_evaluator, category=self.category, turn=turn)
                for turn, r in await self.judge_results(case)]

    async def judge_row(self, case: Case) -> ResultRow:
        """The command's row for a judge giving one verdict per case."""
        return (await self.judge_rows(case))[0]

    async def evaluate_async(self, case: Case, output: Any) -> CheckResult:
        if (none := self.unbound()) is not None:
            return none
        return self.result_of(await self.judge_results(with_output(case, output)))

    def result_of(self, results: list[tuple[int | None, CheckResult]]) -> CheckResult:
        """One result from a case's verdicts. Several (one per assistant turn): the score is their mean and the
        case passes when every turn does; one turn unscored or in error makes the whole so (never a score from
        part of the evidence); ``details["turns"]`` keeps each turn's verdict."""
        if len(results) == 1 and results[0][0] is None:
            return results[0][1]
        parts = [r for _, r in results]
        turns = [{"turn": turn, "status": p.status, "score": p.score, "passed": p.passed,
                  "reason": p.reason if p.status == "scored" else p.problem} for turn, p in results]
        usages = [p.usage for p in parts if p.usage is not None]
        costs = [p.cost_usd for p in parts if p.cost_usd is not None]
        typed: dict[str, Any] = {
            "usage": sum(usages[1:], usages[0]) if usages else None,
            "cost_usd": round(sum(costs), 8) if costs else None,
            "judge": next((p.judge for p in parts if p.judge is not None), None),
            "raw_reply": next((p.raw_reply for p in parts if p.raw_reply), None),
            "latency_ms": round(sum(p.latency_ms or 0.0 for p in parts), 3),
            "details": {"turns": turns},
        }
        bad = [t for t in turns if t["status"] != "scored"]
        if bad:
            status: Literal["unscored", "error"] = "error" if any(t["status"] == "error" for t in bad) else "unscored"
            return CheckResult(score=None, status=status,
                               reason="; ".join(f"turn {t['turn']}: {t['reason']}" for t in bad), **typed)
        scores = [p.score or 0.0 for p in parts]  # every turn is scored here
        worst = min(range(len(parts)), key=lambda i: scores[i])
        score, passed = mean_of_turns(scores, [p.passed for p in parts])
        return CheckResult(score=score, passed=passed,
                           reason=f"turn {turns[worst]['turn']}: {parts[worst].reason}", **typed)

    @staticmethod
    def error(case: Case, message: str, *, evaluator: str, category: str | None = None,
              turn: int | None = None) -> ResultRow:
        return ResultRow(id=case.id, status="error", evaluator=evaluator, category=case.category or category,
                         error=message, turn=turn, metadata=case.metadata)


@register
@dataclass
class TrajectoryJudge(CriteriaJudge):
    """``trajectory_judge``: an agent's trajectory and final output graded by the judge (tool selection,
    arguments, efficiency, final output). Rows: ``evaluator: trajectory_judge``, one criterion each.
    ``criteria``: ``{id: description}`` replacing the default rubric."""

    name: ClassVar[str] = "trajectory_judge"
    evaluator: ClassVar[str] = "trajectory_judge"
    default_criteria: ClassVar[Mapping[str, str]] = TRAJECTORY_CRITERIA
    outcome_id: ClassVar[str | None] = OUTCOME_CRITERION
    case_errors: ClassVar[tuple[type[Exception], ...]] = (TrajectoryError,)

    max_chars: int = 200
    """Arguments and results longer than this are truncated in the prompt."""

    def default_template_hash(self) -> str:
        """``referee trajectory --judge``'s: the criteria and ``max_chars`` (so the command and Python agree)."""
        from ..results._files import text_sha256

        return text_sha256(repr(sorted(self.criteria.items())) + f"|{self.max_chars}")

    def prompt(self, case: Case, traj: Trajectory) -> PromptParts:
        blocks = [("input", prompt_text(case.input))]
        if case.reference is not None:
            blocks.append(("reference", prompt_text(case.reference)))
        blocks += [("trajectory", render_trajectory(traj, max_chars=self.max_chars)),
                   ("final_output", prompt_text(traj.final_output))]
        rubric = rubric_text(self.criteria, intro="Evaluate how an AI agent worked on a task: the tools it "
                             "called (one line per step: tool(arguments) -> result) and its final output.")
        return build_prompt(blocks, rubric)

    def prompts(self, case: Case) -> list[tuple[int | None, PromptParts, dict[str, Any]]]:
        traj = trajectory_of(case)
        return [(None, self.prompt(case, traj), {"steps": len(traj.steps), "tools": traj.tools})]

    def request(self, case: Case, output: Any = None) -> JudgeRequest:
        case = with_output(case, output if output is not None else case.output)
        try:
            traj = trajectory_of(case)
        except TrajectoryError:
            traj = Trajectory(final_output=case.output)  # a dry run counts the prompt all the same
        return self.request_for(self.prompt(case, traj))


TrajectoryJudgeCheck = TrajectoryJudge
"""The name it had as a suite evaluator beside the command's judge (they are one class now)."""
