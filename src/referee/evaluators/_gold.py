"""Gold-standard criteria: grade a generated document against a gold document, one criterion at a time.

Compatible with the skill evaluator's criteria files (see ``docs/rubrics.md``). The judge sees the two
documents and one criterion and answers ``{"pass", "score" 0|1|2, "reasoning", "quotes"}``; ``pass`` is the
judge's own flag, separate from the score. ``single_call`` grades every criterion in one call instead (fewer
input tokens: the documents are sent once). Rules as written:

* ``total = sum(score)``, ``max = 2 * n``, ``pct = total / max``;
* overall PASS is false when ``fail_on_critical`` and a critical criterion failed, else passed count
  ``>= pass_threshold``;
* grade A: pct >= 0.9 and no critical failure; B: >= 0.75 and no critical failure; C: >= 0.6; else D.

Unlike the original, a reply that cannot be used is ``unscored`` (never a 0): a case with an unscored
criterion has no score, pct or grade. Its verdict is FAIL (``passed=False``, status still ``unscored``) when
the graded criteria already settle it (a failed critical criterion under ``fail_on_critical``, or too few
criteria left to reach ``pass_threshold``); otherwise it has no verdict. It is never a PASS.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..cases._case import Case
from ..providers._base import JudgeRequest
from ..results._combine import gold_totals
from ..results._schema import CriterionScore, JudgeInfo, ResultRow, Usage
from ..rubrics._model import Criterion, Rubric
from ._base import CheckResult, LLMEvaluator, register, result_row
from ._evidence import EvidenceChecker, QuoteCheck, grounded
from ._prompt_guard import data_block, judge_request, make_nonce, system_prompt
from ._reply import JudgeOutcome, ReplyInvalid, as_number, ask_judge, parse_verdict
from ._rubric import self_grading

GOLD_SYSTEM = system_prompt(
    "You are a strict reviewer grading a generated document against a gold-standard document."
)
MAX_QUOTES = 3

_ITEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pass": {"type": "boolean"},
        "score": {"type": "integer", "enum": [0, 1, 2]},
        "reasoning": {"type": "string"},
        "quotes": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_QUOTES},
    },
    "required": ["pass", "score", "reasoning", "quotes"],
    "additionalProperties": False,
}
_REPLY_SHAPE = ('{"pass": true or false, "score": 0, 1 or 2, "reasoning": "one sentence", '
                '"quotes": ["up to 3 short quotes (under 100 characters) copied from the documents"]}')
_SCORING = "Scores: 0 = fails the criterion, 1 = partially meets it, 2 = fully meets it."


@dataclass(frozen=True)
class GoldCase:
    """A generated document and its gold standard (with the files they came from, when they did)."""

    id: str
    generated: str
    gold: str
    generated_file: str | None = None
    gold_file: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class CriterionReply:
    """The judge's verdict on one gold criterion (``passed`` is the decision; ``judge_pass`` its own flag)."""

    passed: bool
    score: int
    reasoning: str
    quotes: list[str]
    checks: list[QuoteCheck] = field(default_factory=list)
    judge_pass: bool | None = None
    """The judge's own ``pass`` flag; ``passed`` is the decision (it differs when the score is 0)."""

    @property
    def mismatch(self) -> str | None:
        """How the judge's ``pass`` contradicts its own 0-2 score, or None."""
        jp = self.passed if self.judge_pass is None else self.judge_pass
        if jp and self.score == 0:
            return "pass: true with score 0"
        if not jp and self.score == 2:
            return "pass: false with score 2"
        return None


def apply_zero_rule(r: CriterionReply, *, judge_pass_only: bool = False) -> CriterionReply:
    """A score of 0 fails the criterion whatever the judge's ``pass`` says (``judge_pass_only``: the
    original, where ``pass`` alone decides)."""
    if r.judge_pass is None:
        r.judge_pass = r.passed
    r.passed = r.judge_pass and (judge_pass_only or r.score > 0)
    return r


def _documents(case: GoldCase) -> str:
    nonce = make_nonce(case.generated, case.gold)
    return ("The generated document:\n" + data_block("generated", case.generated, nonce)
            + "\n\nThe gold-standard document:\n" + data_block("gold", case.gold, nonce))


def _criterion_text(c: Criterion) -> str:
    head = f"Criterion {c.id}: {c.title}" + (" (critical)" if c.critical else "")
    return head + ("\n" + c.instructions if c.instructions else "")


def criterion_prompt(case: GoldCase, c: Criterion) -> str:
    """The prompt grading one criterion (the documents first: providers' prompt caches reuse them)."""
    # Documents first, criterion last: the shared prefix lets providers' prompt caches reuse it per criterion.
    return (f"{_documents(case)}\n\nGrade the generated document against the gold standard on this criterion.\n"
            f"{_criterion_text(c)}\n\n{_SCORING}\nReply with only this JSON object: {_REPLY_SHAPE}")


def single_call_prompt(case: GoldCase, rubric: Rubric) -> str:
    """The prompt grading every criterion in one call."""
    crits = "\n\n".join(_criterion_text(c) for c in rubric.criteria)
    ids = ", ".join(f'"{c.id}": {{...}}' for c in rubric.criteria)
    return (f"{_documents(case)}\n\nGrade the generated document against the gold standard on each of these "
            f"criteria, independently:\n\n{crits}\n\n{_SCORING}\nReply with only a JSON object "
            f'{{"criteria": {{{ids}}}}} where each value is {_REPLY_SHAPE}')


def single_call_schema(rubric: Rubric) -> dict[str, Any]:
    """The JSON schema of a single-call reply: one verdict per criterion, all required."""
    ids = [c.id for c in rubric.criteria]
    return {"type": "object", "properties": {"criteria": {
        "type": "object", "properties": {i: _ITEM_SCHEMA for i in ids}, "required": ids,
        "additionalProperties": False}}, "required": ["criteria"], "additionalProperties": False}


def gold_replies(data: dict[str, Any], ids: list[str] | None) -> dict[str, CriterionReply]:
    """Validate one JSON object as a gold verdict (one criterion's when ``ids`` is None, keyed ``"_"``)."""
    if ids is None:
        return {"_": parse_item(data, "reply")}
    crit = data.get("criteria", data)
    if not isinstance(crit, dict):
        raise ReplyInvalid("'criteria' is missing or not an object")
    missing = [i for i in ids if i not in crit]
    if missing:
        raise ReplyInvalid(f"criteria missing from the reply: {', '.join(missing)}")
    return {i: parse_item(crit[i], i) for i in ids}


def parse_item(item: Any, what: str) -> CriterionReply:
    """One criterion's verdict; raises :class:`ReplyInvalid`."""
    if not isinstance(item, dict):
        raise ReplyInvalid(f"{what} is not a JSON object")
    p = item.get("pass")
    if isinstance(p, str) and p.strip().lower() in ("true", "false"):
        p = p.strip().lower() == "true"  # a boolean written as a string: a safe repair
    if not isinstance(p, bool):
        raise ReplyInvalid(f"{what}.pass is missing or not true/false")
    s = as_number(item.get("score"), f"{what}.score")
    if s not in (0.0, 1.0, 2.0):
        raise ReplyInvalid(f"{what}.score {s:g} is not 0, 1 or 2")
    quotes = item.get("quotes") or []
    if isinstance(quotes, str):
        quotes = [quotes]
    if not isinstance(quotes, list):
        raise ReplyInvalid(f"{what}.quotes is not a list")
    return CriterionReply(passed=p, score=int(s), reasoning=str(item.get("reasoning") or "").strip(),
                          quotes=[str(q) for q in quotes if str(q).strip()][:MAX_QUOTES], judge_pass=p)


@dataclass
class GoldSummary:
    """A gold case's totals and verdict by the criteria file's rules."""

    total: int
    max: int
    pct: float
    passed_count: int
    critical_failures: list[str]
    passed: bool
    grade: str


def gold_verdict(rubric: Rubric, replies: dict[str, CriterionReply]) -> GoldSummary:
    """The seed's pass rule and grades, over a reply for every criterion."""
    got = [replies[c.id] for c in rubric.criteria]
    total, mx, pct, passed_count, ok, grade = gold_totals(
        [r.score for r in got], [r.passed for r in got], [c.critical for c in rubric.criteria],
        pass_threshold=rubric.pass_threshold if rubric.pass_threshold is not None else 6,
        fail_on_critical=rubric.fail_on_critical)
    crit_fail = [c.id for c, r in zip(rubric.criteria, got, strict=True) if c.critical and not r.passed]
    return GoldSummary(total, mx, pct, passed_count, crit_fail, ok, grade)


def settled_failure(rubric: Rubric, replies: dict[str, CriterionReply], missing: list[str]) -> str | None:
    """Why a case with unscored criteria FAILs whatever they would have been, or None when it is open.

    Only a FAIL can be settled this way: a PASS resting on criteria nobody graded would be invented. A case
    with nothing graded is never settled (that would be a verdict from the configuration alone)."""
    if not replies:
        return None
    threshold = rubric.pass_threshold if rubric.pass_threshold is not None else 6
    crit_fail = [c.id for c in rubric.criteria if c.critical and c.id in replies and not replies[c.id].passed]
    if rubric.fail_on_critical and crit_fail:
        return f"critical criterion failed: {', '.join(crit_fail)}"
    passed_count = sum(r.passed for r in replies.values())
    if passed_count + len(missing) < threshold:
        return (f"{passed_count} criteria passed and {len(missing)} unscored: pass_threshold {threshold} cannot "
                "be reached")
    return None


def threshold_warning(rubric: Rubric) -> str | None:
    """Why no case can ever PASS with this criteria file (a pass_threshold above its criteria count), or None."""
    t = rubric.pass_threshold if rubric.pass_threshold is not None else 6
    if t > len(rubric.criteria):
        return (f"pass_threshold {t} is more than the {len(rubric.criteria)} criteria of '{rubric.name}': no case "
                "can ever PASS; lower pass_threshold")
    return None


def gold_case(case: Case, output: Any = None) -> GoldCase:
    """A case as a gold case: its ``output`` the generated document (unless ``output`` is given), its
    ``reference`` the gold standard (``generated_file`` / ``gold_file`` fields name where they came from)."""
    generated = case.output if output is None else output
    if generated is None or case.reference is None:
        raise ValueError("gold needs the case's output (generated) and reference (gold standard)")
    gf, sf = case.get("generated_file"), case.get("gold_file")
    return GoldCase(id=case.id, generated=str(generated), gold=str(case.reference),
                    generated_file=None if gf is None else str(gf), gold_file=None if sf is None else str(sf),
                    metadata=case.metadata)


@register
@dataclass
class GoldJudge(LLMEvaluator):
    """``gold``: a generated document (the case's ``output``) graded against a gold standard (its
    ``reference``) by a criteria file, one judge call per criterion (``single_call``: one for all). The case
    passes by the criteria file's verdict rules (critical criteria, pass threshold); ``referee gold``'s judge.
    :meth:`judge_row` gives the command's row; :meth:`evaluate_async` the same verdict as a CheckResult."""

    name: ClassVar[str] = "gold"
    evaluator: ClassVar[str] = "gold"
    primary: ClassVar[str] = "criteria"
    option_types: ClassVar[dict[str, Any]] = {"criteria": str}
    path_options: ClassVar[frozenset[str]] = frozenset({"criteria"})
    internal_options: ClassVar[frozenset[str]] = frozenset({"system_under_test", "template_hash"})

    criteria: str | Rubric = "gold-example-prd"
    """A gold criteria file, or a shipped one by name."""
    single_call: bool = False
    """Grade every criterion in one judge call (cheaper: the documents are sent once)."""
    judge_pass_only: bool = False
    """Decide each criterion by the judge's own pass flag alone (by default a score of 0 fails it)."""
    max_tokens: int | None = None
    """The judge's reply budget (default: the run's)."""
    system_under_test: str | None = None
    template_hash: str | None = None
    """Recorded in each row's judge info (default: the criteria file's hash)."""
    _model: Rubric = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        from ..rubrics import load_rubric
        from ..rubrics._loader import rubric_hash

        self._model = self.criteria if isinstance(self.criteria, Rubric) else load_rubric(str(self.criteria),
                                                                                              kind="gold")
        if self._model.kind != "gold":
            raise ValueError(f"{self.criteria} is a rubric, not a gold criteria file: use the rubric judge")
        if self.template_hash is None:
            self.template_hash = rubric_hash(self._model)

    @property
    def rubric(self) -> Rubric:
        """The criteria file as loaded."""
        return self._model

    def _request(self, case: GoldCase, prompt: str, schema: dict[str, Any], max_tokens: int) -> JudgeRequest:
        s = self.sampling(max_tokens)
        return judge_request(GOLD_SYSTEM, prompt, (case.generated, case.gold), response_schema=schema,
                             schema_name="gold_verdict", **s)

    def requests(self, case: GoldCase) -> list[JudgeRequest]:
        budget = self.sampling(self.max_tokens)["max_tokens"]
        if self.single_call:
            return [self._request(case, single_call_prompt(case, self.rubric), single_call_schema(self.rubric),
                                  max(budget, 300 * len(self.rubric.criteria)))]
        return [self._request(case, criterion_prompt(case, c), _ITEM_SCHEMA, budget) for c in self.rubric.criteria]

    def request(self, case: Case, output: Any = None) -> JudgeRequest:
        return self.call_requests(case, output)[0]

    def call_requests(self, case: Case, output: Any = None) -> list[JudgeRequest]:
        """One request per criterion (one in all with ``single_call``)."""
        try:
            gc = gold_case(case, output)
        except ValueError:  # the run makes it an error without a call; a dry run's estimate stays an upper bound
            gc = GoldCase(id=case.id, generated=str(output if output is not None else case.output or ""),
                          gold=str(case.reference or ""))
        return self.requests(gc)

    async def evaluate_async(self, case: Case, output: Any) -> CheckResult:
        if (none := self.unbound()) is not None:
            return none
        try:
            gc = gold_case(case, output)
        except ValueError as exc:
            return CheckResult.error(str(exc))
        return await self.judge(gc)

    def _ground(self, checker: EvidenceChecker, r: CriterionReply) -> None:
        r.checks = checker.check_all(r.quotes)

    def _parser(self, checker: EvidenceChecker, ids: list[str] | None) -> Any:
        """A reply parser (per criterion when ``ids`` is None) applying the rubric's ungrounded rule."""
        attempts = [0]
        mode = self.rubric.ungrounded

        def parse(text: str) -> dict[str, CriterionReply] | CriterionReply:
            attempts[0] += 1
            replies = parse_verdict(text, lambda data: gold_replies(data, ids))
            for r in replies.values():
                apply_zero_rule(r, judge_pass_only=self.judge_pass_only)
                self._ground(checker, r)
            bad = [k for k, r in replies.items() if grounded(r.checks) is False]
            if bad and mode in ("reask", "invalid") and attempts[0] == 1:
                lost = [q.quote for k in bad for q in replies[k].checks if not q.found]
                raise ReplyInvalid("these quotes were not found in either document (copy quotes exactly): "
                                   + "; ".join(repr(q) for q in lost[:6]))
            return replies if ids is not None else replies["_"]

        return parse

    async def judge_row(self, case: GoldCase) -> ResultRow:
        """The verdict on ``case`` as the command's row."""
        return result_row(case, await self.judge(case), evaluator=self.evaluator)

    async def judge(self, case: GoldCase) -> CheckResult:
        """The verdict on ``case``: criteria, the seed's verdict, grade and totals."""
        client = self.client()
        rubric = self.rubric
        checker = EvidenceChecker({"generated": case.generated, "gold": case.gold})
        t0 = time.perf_counter()
        outcomes: list[JudgeOutcome[Any]]
        replies: dict[str, CriterionReply] = {}
        errors: dict[str, str] = {}
        statuses: dict[str, str] = {}
        reqs = self.requests(case)
        if self.single_call:
            ids = [c.id for c in rubric.criteria]
            o = await ask_judge(client, reqs[0], self._parser(checker, ids), use_cache=self.use_cache)
            outcomes = [o]
            for c in rubric.criteria:
                statuses[c.id] = o.status
                if o.status == "scored":
                    assert o.value is not None
                    replies[c.id] = o.value[c.id]
                else:
                    errors[c.id] = o.error or o.status
        else:
            outcomes = list(await asyncio.gather(*(
                ask_judge(client, req, self._parser(checker, None), use_cache=self.use_cache)
                for req in reqs)))
            for c, o in zip(rubric.criteria, outcomes, strict=True):
                statuses[c.id] = o.status
                if o.status == "scored":
                    assert o.value is not None
                    replies[c.id] = o.value
                else:
                    errors[c.id] = o.error or o.status
        wall_ms = (time.perf_counter() - t0) * 1000
        if rubric.ungrounded in ("unscored", "invalid"):
            for cid, r in list(replies.items()):
                if grounded(r.checks) is False:
                    del replies[cid]
                    statuses[cid] = "unscored"
                    errors[cid] = "quotes not found in either document (the rubric makes such scores unscored)"
        return self._result(case, outcomes, replies, statuses, errors, wall_ms, client.judge_info(self.template_hash))

    def _result(self, case: GoldCase, outcomes: list[JudgeOutcome[Any]], replies: dict[str, CriterionReply],
                statuses: dict[str, str], errors: dict[str, str], wall_ms: float,
                judge_info: JudgeInfo) -> CheckResult:
        rubric = self.rubric
        usage = Usage()
        for o in outcomes:
            usage = usage + o.usage
        costs = [o.cost_usd for o in outcomes if o.cost_usd is not None]
        criteria: list[CriterionScore] = []
        for c in rubric.criteria:
            r = replies.get(c.id)
            st = statuses[c.id]
            criteria.append(CriterionScore(
                id=c.id, name=c.title, status="scored" if r else ("error" if st == "error" else "unscored"),
                score=r.score / 2 if r else None, raw_score=float(r.score) if r else None, scale="0-2",
                passed=r.passed if r else None, critical=c.critical, rationale=r.reasoning if r else None,
                evidence=r.quotes if r else [], grounded=grounded(r.checks) if r else None,
                error=None if r else errors.get(c.id),
            ))
        ungrounded = [c.id for c in criteria if c.grounded is False]
        details: dict[str, Any] = {
            "skill": rubric.skill or rubric.name, "criteria_total": len(rubric.criteria),
            "single_call": self.single_call, "text": case.generated,
            "generated_file": case.generated_file, "gold_file": case.gold_file,
            "evidence_checks": {cid: [{"quote": q.quote, "found": q.found, "source": q.source,
                                       "match": round(q.score, 1)} for q in r.checks]
                                for cid, r in replies.items()},
        }
        flags: list[str] = []
        if usage.cached_calls and not usage.calls:
            flags.append("cached")
        mismatch = {cid: m for cid, r in replies.items() if (m := r.mismatch)}
        if mismatch:
            # The judge's pass flag and its score disagree: the score 0 decides (unless --judge-pass-only).
            flags.append("pass_score_mismatch")
            details["pass_score_mismatch"] = mismatch
        if ungrounded:
            flags.append("ungrounded")
            details["ungrounded"] = ungrounded
        model = next((o.model for o in outcomes if o.model), "") or judge_info.model
        system_model = str(case.metadata.get("system_model") or case.metadata.get("system_under_test") or
                           self.system_under_test or "") or None
        if self_grading(model, system_model):
            flags.append("self_grading")
            details["self_grading"] = (f"the judge model ({model}) is the system under test ({system_model}): "
                                       "scores may be inflated")
        res = CheckResult(score=None, criteria=criteria, judge=judge_info, usage=usage,
                          cost_usd=round(sum(costs), 8) if costs else None, latency_ms=round(wall_ms, 3),
                          flags=flags, details=details)
        missing = [c.id for c in rubric.criteria if c.id not in replies]
        if missing:
            any_error = all(statuses[m] == "error" for m in missing)
            res.status = "error" if any_error else "unscored"
            res.error_message = (f"{len(missing)} criteria could not be graded ({', '.join(missing)}): "
                                 + "; ".join(sorted({errors.get(m, '') for m in missing})))
            res.raw_reply = next((o.raw_excerpt for o in outcomes if o.raw_excerpt), None)
            details.update(verdict="UNSCORED", criteria_unscored=missing)
            settled = settled_failure(rubric, replies, missing)
            if settled is not None:
                # FAIL is already decided by criteria that were really graded; the unscored ones stay
                # visible and no total, pct or grade is invented for them.
                passed_count = sum(r.passed for r in replies.values())
                crit_fail = [c.id for c in rubric.criteria if c.critical and c.id in replies
                             and not replies[c.id].passed]
                details.update(verdict="FAIL", verdict_reason=settled, criteria_passed=passed_count,
                               critical_failures=len(crit_fail), critical_failed=crit_fail)
                res.passed = False
            return res
        s = gold_verdict(rubric, replies)
        details.update(total_score=s.total, max_score=s.max, score_pct=round(s.pct, 6),
                       criteria_passed=s.passed_count, critical_failures=len(s.critical_failures),
                       critical_failed=s.critical_failures, grade=s.grade, verdict="PASS" if s.passed else "FAIL")
        failing = [c for c in criteria if c.passed is False]
        worst = (sorted(failing, key=lambda c: (not c.critical, c.raw_score or 0.0)) or
                 sorted(criteria, key=lambda c: c.raw_score or 0.0))
        res.score, res.passed = s.pct, s.passed
        res.reason = f"{worst[0].name}: {worst[0].rationale}" if worst else ""
        return res
