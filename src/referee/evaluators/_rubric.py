"""The rubric judge: every criterion of a rubric scored in one call, with evidence and rationale.

The judge sees the task, the output and any context, each delimited and declared to be data. It answers
``{"criteria": {<id>: {"score", "evidence": [...], "rationale"}}, "summary", "required_actions"}`` (a JSON
schema built from the rubric turns on the provider's structured output). A reply with a criterion missing,
a score off the criterion's scale or (when the rubric requires it) no evidence is invalid: re-asked once,
then the case is unscored. Quotes are verified against the judged text (see :mod:`.evidence`) and the
rubric's ``ungrounded`` rule decides what an unfound quote costs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, get_args

from .._util._image import has_marker
from ..cases._case import Case
from ..cases._templates import render_value, transcript
from ..providers._base import JudgeRequest
from ..results._schema import CriterionScore, ResultRow
from ..results._self_grading import same_model
from ..rubrics._model import Criterion, Rubric, Ungrounded, normalise, scale_bounds
from ._base import CheckResult, LLMEvaluator, register, result_row, with_output
from ._evidence import REGION_PREFIX, EvidenceChecker, QuoteCheck, grounded
from ._images import warn_unused_images
from ._judge import outcome_result
from ._prompt_guard import data_block, judge_request, make_nonce, system_prompt
from ._reply import ReplyInvalid, as_number, ask_judge, parse_verdict

RUBRIC_SYSTEM = system_prompt(
    "You are a careful evaluation judge grading an output against a rubric. Evidence must be copied exactly "
    "from the tagged text."
)


def self_grading(judge_model: str | None, system_model: str | None) -> bool:
    """Whether the judge is the model that produced the output (a known source of inflated scores)."""
    return same_model(judge_model, system_model)


def system_model_of(case: Case, default: str | None = None) -> str | None:
    """The model that wrote the case's output (``system_model`` / ``system_under_test`` in its metadata or
    fields), else ``default``."""
    md = case.metadata
    for key in ("system_model", "system_under_test"):
        if md.get(key):
            return str(md[key])
        if case.get(key):
            return str(case.get(key))
    return default


def case_contexts(case: Case) -> dict[str, str]:
    """Context documents of a case: ``context`` as a string, a list of strings or a {name: text} mapping."""
    ctx = case.get("context")
    if ctx is None:
        return {}
    if isinstance(ctx, Mapping):
        return {str(k): render_value(v) for k, v in ctx.items()}
    if isinstance(ctx, list):
        return {f"context[{i}]": render_value(v) for i, v in enumerate(ctx)}
    return {"context": render_value(ctx)}


def case_task(case: Case) -> str:
    """The task an output answers: the case's ``input``, else its conversation so far, else nothing."""
    if case.input is not None:
        return render_value(case.input)
    if case.turns:
        return transcript(case.turns)
    return ""


# -- schema and prompt ---------------------------------------------------------------------------------
def _score_schema(rubric: Rubric, c: Criterion) -> dict[str, Any]:
    lo, hi, integer = scale_bounds(rubric.criterion_scale(c))
    return {"type": "integer" if integer else "number", "minimum": lo, "maximum": hi}


def criterion_schema(rubric: Rubric, c: Criterion) -> dict[str, Any]:
    """The JSON schema of one criterion's verdict (score on its scale, evidence, rationale)."""
    evidence: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
    if rubric.evidence_required:
        evidence["minItems"] = 1
    return {
        "type": "object",
        "properties": {"score": _score_schema(rubric, c), "evidence": evidence, "rationale": {"type": "string"}},
        "required": ["score", "evidence", "rationale"],
        "additionalProperties": False,
    }


def reply_schema(rubric: Rubric) -> dict[str, Any]:
    """The JSON schema of a reply: one object per criterion, all required."""
    ids = [c.id for c in rubric.criteria]
    return {
        "type": "object",
        "properties": {
            "criteria": {
                "type": "object",
                "properties": {c.id: criterion_schema(rubric, c) for c in rubric.criteria},
                "required": ids,
                "additionalProperties": False,
            },
            "summary": {"type": "string"},
            "required_actions": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["criteria", "summary", "required_actions"],
        "additionalProperties": False,
    }


def _scale_text(rubric: Rubric, c: Criterion) -> str:
    scale = rubric.criterion_scale(c)
    lo, hi, integer = scale_bounds(scale)
    if scale == "binary":
        return "0 or 1"
    return f"{'an integer' if integer else 'a number'} from {lo:g} to {hi:g}"


def build_prompt(rubric: Rubric, task: str, output: str, contexts: Mapping[str, str],
                 reference: str | None = None) -> str:
    """The rubric judge's user prompt: the rubric, then every piece of case text in its own delimited block."""
    parts = [f"Grade the output below against the rubric '{rubric.name}'."]
    if rubric.instructions:
        parts.append(rubric.instructions.strip())
    # Every piece of case text in its own block (one nonce per prompt, see prompt_guard); the labels stay
    # outside the blocks.
    heads = ["The task the output answers:"]
    blocks: list[tuple[str, ...]] = [("task", task or "(no task given)")]
    for name, text in contexts.items():
        safe_name = name.replace('"', "'").replace("<", "&lt;").replace(">", "&gt;")
        heads.append(f"Context document '{safe_name}' (the output should be grounded in it):")
        blocks.append(("context", text, f' name="{safe_name}"'))
    if reference:
        heads.append("A reference answer:")
        blocks.append(("reference", reference))
    heads.append("The output under evaluation:")
    blocks.append(("output", output))
    nonce = make_nonce(*(b[1] for b in blocks))
    for head, b in zip(heads, blocks, strict=True):
        parts.append(f"{head}\n{data_block(b[0], b[1], nonce, b[2] if len(b) > 2 else '')}")
    lines = ["Criteria (score every one of them):"]
    for c in rubric.criteria:
        head = f"- {c.id} ({c.title}; score: {_scale_text(rubric, c)}"
        if c.weight is not None:
            head += f"; weight {c.weight:g}"
        if c.critical:
            head += "; critical"
        lines.append(head + ")")
        if c.instructions:
            lines += ["  " + ln for ln in c.instructions.splitlines()]
    parts.append("\n".join(lines))
    ev = ("at least one piece of evidence: a direct quote copied exactly from the output or a context "
          "document, or a file:line reference" if rubric.evidence_required else
          "evidence quotes copied exactly from the text, where there are any")
    example = ", ".join(f'"{c.id}": {{"score": ..., "evidence": ["..."], "rationale": "..."}}'
                        for c in rubric.criteria[:2])
    if any(has_marker(b[1]) for b in blocks):
        parts.append(f"Images are attached where the blocks hold them. Evidence about an image is no quote: write "
                     f"'{REGION_PREFIX} ' and describe the region (for example '{REGION_PREFIX} the red bar at the "
                     "top left'); it is recorded as a description, and quotes are checked against the text only.")
    parts.append(
        f"For every criterion give the score, {ev}, and a 1-2 sentence rationale. Then a 1-2 sentence summary "
        "and the specific improvements needed (required_actions; an empty list when none).\n"
        f'Reply with only this JSON object: {{"criteria": {{{example}, ...}}, "summary": "...", '
        '"required_actions": ["..."]}'
    )
    return "\n\n".join(parts)


# -- parsing -------------------------------------------------------------------------------------------
@dataclass
class CriterionVerdict:
    """The judge's verdict on one criterion, with its quotes checked against the judged text."""

    id: str
    raw: float
    evidence: list[str]
    rationale: str
    checks: list[QuoteCheck] = field(default_factory=list)

    @property
    def grounded(self) -> bool | None:
        return grounded(self.checks)


@dataclass
class RubricVerdict:
    """A valid rubric reply: a verdict for every criterion, the summary and the required actions."""

    criteria: dict[str, CriterionVerdict]
    summary: str
    required_actions: list[str]

    @property
    def ungrounded(self) -> list[str]:
        return [cid for cid, v in self.criteria.items() if v.grounded is False]


def parse_rubric_reply(text: str, rubric: Rubric, checker: EvidenceChecker | None = None) -> RubricVerdict:
    """Validate a reply against the rubric; raises :class:`ReplyInvalid` naming what is wrong."""
    return parse_verdict(text, lambda data: rubric_verdict(data, rubric, checker))


def rubric_verdict(data: dict[str, Any], rubric: Rubric, checker: EvidenceChecker | None = None) -> RubricVerdict:
    """Validate one JSON object as a verdict on ``rubric``; raises :class:`ReplyInvalid`."""
    crit = data.get("criteria")
    if crit is None and all(c.id in data for c in rubric.criteria):
        crit = data  # a judge that dropped the wrapper object: nothing is guessed, every id is there
    if not isinstance(crit, dict):
        raise ReplyInvalid("'criteria' is missing or not an object")
    missing = [c.id for c in rubric.criteria if c.id not in crit]
    if missing:
        raise ReplyInvalid(f"criteria missing from the reply: {', '.join(missing)}")
    out: dict[str, CriterionVerdict] = {}
    for c in rubric.criteria:
        item = crit[c.id]
        if isinstance(item, int | float | str) and not isinstance(item, bool):
            item = {"score": item}
        if not isinstance(item, dict):
            raise ReplyInvalid(f"{c.id} is not an object")
        raw = as_number(item.get("score"), f"{c.id}.score")
        scale = rubric.criterion_scale(c)
        lo, hi, integer = scale_bounds(scale)
        if not lo <= raw <= hi:
            raise ReplyInvalid(f"{c.id}.score {raw:g} is outside the {scale} scale")
        if integer and raw != int(raw):
            raise ReplyInvalid(f"{c.id}.score {raw:g} is not a whole number on the {scale} scale")
        ev = item.get("evidence", item.get("quotes", []))
        evidence = [str(e) for e in ev if str(e).strip()] if isinstance(ev, list) else (
            [str(ev)] if ev not in (None, "") else [])
        if rubric.evidence_required and not evidence:
            raise ReplyInvalid(f"{c.id} has no evidence (a direct quote is required for every score)")
        rationale = str(item.get("rationale") or "").strip()
        checks = checker.check_all(evidence) if checker is not None else []
        out[c.id] = CriterionVerdict(c.id, raw, evidence, rationale, checks)
    actions = data.get("required_actions") or []
    if not isinstance(actions, list):
        actions = [str(actions)]
    return RubricVerdict(out, str(data.get("summary") or "").strip(), [str(a) for a in actions if str(a).strip()])


def _ungrounded_reason(v: RubricVerdict) -> str:
    missing = [f"{cid}: {c.quote!r}" for cid in v.ungrounded for c in v.criteria[cid].checks if not c.found]
    return ("some evidence quotes were not found in the text (quote it exactly, or choose other evidence): "
            + "; ".join(missing[:6]))


# -- the evaluator -------------------------------------------------------------------------------------
@register
@dataclass
class RubricJudge(LLMEvaluator):
    """``rubric``: grades each case against a rubric under the judge-reply contract, with evidence
    verification (``referee evaluate``'s judge, and :func:`referee.grade_rubric`'s).

    ``rubric`` is a shipped rubric's name (``agent-evaluation``), a rubric YAML file or a loaded
    :class:`~referee.rubrics.Rubric`. The case's score is the rubric's composite; it passes by the rubric's own
    rules (``fail_below`` overrides the rubric's). Quotes the judge gives as evidence are checked against the
    judged text; an ungrounded verdict is handled as the rubric says (``ungrounded`` overrides it).
    :meth:`judge_row` gives the command's row; :meth:`evaluate_async` the same verdict as a CheckResult."""

    name: ClassVar[str] = "rubric"
    evaluator: ClassVar[str] = "rubric"
    primary: ClassVar[str] = "rubric"
    option_types: ClassVar[dict[str, Any]] = {"rubric": str}
    path_options: ClassVar[frozenset[str]] = frozenset({"rubric"})
    internal_options: ClassVar[frozenset[str]] = frozenset({"category", "system_under_test", "template_hash"})

    rubric: str | Rubric = "agent-evaluation"
    """A shipped rubric's name or a rubric YAML file."""
    fail_below: float | None = None
    """A case fails when its composite is below this (default: the rubric's)."""
    ungrounded: Ungrounded | None = None
    """What an evidence quote not found in the judged text costs (default: the rubric's)."""
    max_tokens: int = 2048
    """The judge's reply budget (at least this; the run's when larger)."""
    contexts: dict[str, str] = field(default_factory=dict)
    """``{name: text}`` every output should be grounded in (evidence is verified against them too)."""
    category: str | None = None
    system_under_test: str | None = None
    template_hash: str | None = None
    """Recorded in each row's judge info (default: the rubric's hash)."""
    _model: Rubric = field(init=False, repr=False, compare=False)
    _schema: dict[str, Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        from ..rubrics import load_rubric
        from ..rubrics._loader import rubric_hash

        model = self.rubric if isinstance(self.rubric, Rubric) else load_rubric(str(self.rubric))
        if model.kind == "gold":
            raise ValueError(f"{self.rubric} is a gold-standard criteria file: use the gold judge")
        if self.ungrounded is not None:
            if self.ungrounded not in get_args(Ungrounded):
                raise ValueError(f"ungrounded must be one of {', '.join(get_args(Ungrounded))}")
            model = model.model_copy(update={"ungrounded": self.ungrounded})
        self._model = model
        self._schema = reply_schema(model)
        if self.template_hash is None:
            self.template_hash = rubric_hash(model)

    @property
    def model(self) -> Rubric:
        """The rubric as loaded (with the ``ungrounded`` override)."""
        return self._model

    @property
    def threshold(self) -> float | None:
        """The composite a case must reach (``fail_below``, else the rubric's)."""
        return self.fail_below if self.fail_below is not None else self._model.fail_below

    def sources(self, case: Case) -> tuple[str, str, dict[str, str]]:
        output = render_value(case.output) if case.output is not None else ""
        return case_task(case), output, {**self.contexts, **case_contexts(case)}

    def request(self, case: Case, output: Any = None) -> JudgeRequest:
        case = with_output(case, output if output is not None else case.output)
        warn_unused_images(case, ("input", "output", "context", "reference", *(() if case.input else ("turns",))),
                           self.name)
        task, output, ctx = self.sources(case)
        ref = render_value(case.reference) if case.reference is not None else None
        prompt = build_prompt(self._model, task, output, ctx, ref)
        s = self.sampling()
        s["max_tokens"] = max(self.max_tokens, s["max_tokens"])
        return judge_request(RUBRIC_SYSTEM, prompt, (task, output, *ctx.values(), ref or ""),
                             response_schema=self._schema, schema_name="rubric_verdict", **s)

    async def evaluate_async(self, case: Case, output: Any) -> CheckResult:
        if (none := self.unbound()) is not None:
            return none
        return await self.judge(with_output(case, output))

    async def judge_row(self, case: Case) -> ResultRow:
        """The verdict on ``case`` as the command's row."""
        return result_row(case, await self.judge(case), evaluator=self.evaluator, category=self.category)

    async def judge(self, case: Case) -> CheckResult:
        """The verdict on ``case``: criteria, composite, evidence checks."""
        client = self.client()
        judge_info = client.judge_info(self.template_hash)
        task, output, ctx = self.sources(case)
        ref = render_value(case.reference) if case.reference is not None else None
        checker = EvidenceChecker({"output": output, **ctx, **({"reference": ref} if ref else {})})
        rubric = self._model
        attempts = [0]

        def parse(text: str) -> RubricVerdict:
            attempts[0] += 1
            v = parse_rubric_reply(text, rubric, checker)
            if v.ungrounded and rubric.ungrounded in ("reask", "invalid") and attempts[0] == 1:
                raise ReplyInvalid(_ungrounded_reason(v))
            return v

        outcome = await ask_judge(client, self.request(case), parse, use_cache=self.use_cache)
        res = outcome_result(outcome, judge_info)
        res.details = {"rubric": rubric.name, "text": output, "task": task, "context_names": list(ctx)}
        system_model = system_model_of(case, self.system_under_test)
        if self_grading(outcome.model or judge_info.model, system_model):
            res.flags.append("self_grading")
            res.details["self_grading"] = (
                f"the judge model ({judge_info.model}) is the system under test ({system_model}): "
                "scores may be inflated")
        if outcome.status == "scored":
            assert outcome.value is not None
            fields = self._scored_fields(outcome.value, res.details, res.flags)
            res.criteria, res.reason = fields["criteria"], fields["rationale"] or ""
            res.passed = fields.get("passed")
            if "status" in fields:
                res.status, res.error_message = fields["status"], fields["error"]
            else:
                res.score = fields["score"]
        return res

    def _scored_fields(self, v: RubricVerdict, details: dict[str, Any], flags: list[str]) -> dict[str, Any]:
        rubric = self._model
        criteria: list[CriterionScore] = []
        unscored_ids = v.ungrounded if rubric.ungrounded in ("unscored", "invalid") else []
        for c in rubric.criteria:
            cv = v.criteria[c.id]
            scale = rubric.criterion_scale(c)
            passed = None if c.pass_at is None else cv.raw >= c.pass_at
            bad = c.id in unscored_ids
            criteria.append(CriterionScore(
                id=c.id, name=c.title, status="unscored" if bad else "scored",
                score=None if bad else normalise(cv.raw, scale), raw_score=None if bad else cv.raw, scale=scale,
                passed=None if bad else passed, weight=rubric.weight_of(c), critical=c.critical or None,
                rationale=cv.rationale or None, evidence=cv.evidence, grounded=cv.grounded,
                error=f"evidence not found in the judged text (the judge's {cv.raw:g} is not used)" if bad else None,
            ))
        details["evidence_checks"] = {
            cid: [{"quote": q.quote, "found": q.found, "source": q.source, "match": round(q.score, 1)}
                  | ({"kind": q.kind} if q.kind != "text" else {})
                  for q in cv.checks] for cid, cv in v.criteria.items()}
        details["summary"] = v.summary
        details["required_actions"] = v.required_actions
        if v.ungrounded:
            flags.append("ungrounded")
            details["ungrounded"] = v.ungrounded
        out: dict[str, Any] = {"criteria": criteria, "rationale": v.summary or None}
        if unscored_ids:
            why = ("the judge was asked again and its quotes are still not in the judged text: assertions "
                   "without grounding are invalid; --ungrounded reask keeps such scores, flagged"
                   if rubric.ungrounded == "invalid" else "the rubric makes such scores unscored")
            out.update(status="unscored", error=f"ungrounded evidence for {', '.join(unscored_ids)} ({why})")
            settled = [c.id for c in criteria if c.critical and c.passed is False]
            if settled and rubric.fail_on_critical:
                # A graded critical criterion failed: FAIL stands whatever the unscored ones would be (no
                # composite or band is invented).
                out["passed"] = False
                details["critical_failures"] = settled
            return out
        raw = {cid: cv.raw for cid, cv in v.criteria.items()}
        composite = rubric.composite_of(raw)
        band = rubric.band_for(composite)
        details.update(composite=composite, composite_scale=rubric.scale,
                       verdict=band.label if band else None, action=band.action if band else None)
        row_passed: bool | None = None
        if self.threshold is not None:
            row_passed = composite >= self.threshold
        crit_fail = [c.id for c in criteria if c.critical and c.passed is False]
        if crit_fail and rubric.fail_on_critical:
            row_passed = False
            details["critical_failures"] = crit_fail
        out.update(score=rubric.composite_normalised(raw), passed=row_passed)
        return out
