"""Claim-level RAG metrics as evaluators: every verdict rests on checked quotes, and nothing graded is a number.

Notation (one case): ``A`` the answer's claims (the case's ``output``), ``G`` the reference's claims
(``reference``), ``K`` the retrieved chunks (``contexts``, in rank order, ``k = 1..n``). A claim is *in the
contexts* when some chunk supports it, *correct* when the reference supports it; a chunk is *relevant* when it
supports at least one claim of ``G``. "Supports" always means: the judge cited a quote that the evidence matcher
found in that very passage and that shares a content word with the claim (:mod:`._claims`).

| metric | score |
|---|---|
| ``faithfulness`` | ``|{a in A: in the contexts}| / |A|`` |
| ``context_recall`` | ``|{g in G: in the contexts}| / |G|`` |
| ``context_precision`` | ``sum_k P@k * rel_k / R`` (average precision; ``rel_k`` 1 when chunk k is relevant, ``P@k``
  the relevant share of the top k, ``R`` the relevant chunks; 0 when ``R`` is 0) |
| ``answer_relevancy`` | ``|{a in A: addresses the question}| / |A|`` |
| ``claim_precision`` | ``|{a in A: correct}| / |A|`` (RAGChecker's precision, "correctness") |
| ``claim_recall`` | ``|{g in G: supported by the answer}| / |G|`` (RAGChecker's recall, "completeness") |
| ``claim_f1`` | ``2 P R / (P + R)`` of the two above (0 when both are 0) |
| ``context_utilization`` | ``|{g in G: in the contexts and supported by the answer}| / |{g in G: in the contexts}|`` |
| ``noise_sensitivity`` | ``chunks: relevant``: ``|{a: not correct, supported by a relevant chunk}| / |A|``; ``chunks:
  irrelevant``: ``|{a: not correct, supported by an irrelevant chunk and by no relevant one}| / |A|`` |
| ``hallucination`` | ``|{a: not correct and not in the contexts}| / |A|`` |
| ``self_knowledge`` | ``|{a: correct and not in the contexts}| / |A|`` |

The last three are rates where lower is better: they pass at ``score <= max_rate``. Never a number from nothing:
no answer, a refusal or "I don't know" answer, no claims where claims are divided by, no reference where one is
needed, no contexts (missing, or every chunk empty), or contexts over the size limit, each make the metric
``unscored`` with the reason (``answer_relevancy(refusal="zero")`` is the one explicit rule that scores a refusal:
0). A judge reply that is unusable after one re-ask is ``unscored`` too.

The row: ``criteria`` holds one entry per claim (``id`` the claim id, ``name`` its text, ``score`` 1 when the claim
counts in the metric's numerator, ``passed`` whether that is good, ``evidence`` its quotes, ``grounded`` whether
every quote was found, ``rationale`` which passage supports it or why none does); ``details`` holds ``metric``,
``formula``, ``numerator``, ``denominator``, ``claims`` (each ``{id, of, text, checks: {contexts|reference|answer:
{supported, by, supports: [{passage, quote, found, related, match, problem}]}}, relevant}``), ``chunks`` (``{id,
rank, empty, relevant}``, where chunks matter), ``judge_calls`` and ``judge_tokens`` (``{input, output}``: the provider calls and
cache hits this metric made and their tokens; steps it shared with another metric cost it none, counted in
``shared_steps``).
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from ..cases._case import Case
from ..cases._contexts import Chunk
from ..cases._templates import render_value
from ..providers._base import JudgeRequest
from ._base import CheckResult, LLMEvaluator, register, with_output
from ._claims import (
    MAX_CLAIMS,
    MAX_CONTEXT_CHARS,
    Claim,
    ClaimCheck,
    Costs,
    Passage,
    Step,
    batches,
    extract,
    extract_request,
    relevance,
    relevance_request,
    verify,
    verify_request,
)
from ._rubric import case_task

if TYPE_CHECKING:
    from ..results._schema import CriterionScore

PROMPT_VERSION = "referee-claims-1"
TEMPLATE_HASH = hashlib.sha256(PROMPT_VERSION.encode()).hexdigest()
"""The judge info's template hash of every claim metric (the prompts' version)."""

_REFUSAL = re.compile(
    r"\b(i\s+(?:do\s+not|don'?t)\s+know|i\s*(?:am|'m)\s+not\s+sure|no\s+idea|not\s+enough\s+information|"
    r"i\s+(?:cannot|can'?t|could\s+not|couldn'?t|am\s+unable\s+to|'m\s+unable\s+to|am\s+not\s+able\s+to)\s+"
    r"(?:answer|help|find|determine|say|tell)|i\s+(?:must|have\s+to)\s+(?:decline|refuse)|"
    r"(?:the\s+)?(?:context|documents?|passages?|sources?)\s+(?:does|do)\s+not\s+(?:say|mention|contain|provide))",
    re.IGNORECASE)
REFUSAL_WORDS = 25
"""An answer of at most this many words that matches a refusal phrase ("I don't know", "I cannot answer", "the
context does not mention") is a refusal: unscored, never a number. A long answer that mentions one is judged on its
content; a short hedged answer ("I don't know the date, but ...") is treated as a refusal, the safe direction."""


def is_refusal(text: str) -> bool:
    """A refusal or "I don't know" answer (see :data:`REFUSAL_WORDS`)."""
    t = text.strip()
    return bool(t) and len(t.split()) <= REFUSAL_WORDS and _REFUSAL.search(t) is not None


class _Unscored(Exception):
    def __init__(self, reason: str, status: Literal["unscored", "error"] = "unscored") -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status


@dataclass
class _Texts:
    question: str
    answer: str
    reference: str | None
    chunks: list[Chunk]


def _texts(case: Case, output: Any) -> _Texts:
    c = with_output(case, output)
    ref = c.reference
    return _Texts(case_task(c), render_value(c.output) if c.output is not None else "",
                  render_value(ref) if ref is not None and render_value(ref).strip() else None, c.contexts)


def _estimated_claims(text: str, prefix: str, limit: int) -> list[Claim]:
    """For dry runs: one claim per sentence (what an extraction is expected to give)."""
    parts = [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]
    return [Claim(f"{prefix}{i + 1}", s) for i, s in enumerate(parts[:limit])]


def _check_record(cc: ClaimCheck) -> dict[str, Any]:
    return {"supported": cc.supported, "by": sorted(cc.supported_by), "supports": [s.to_dict() for s in cc.supports]}


def _why(cc: ClaimCheck | None, what: str) -> str:
    if cc is None:
        return ""
    if cc.supported:
        return f"supported by {', '.join(sorted(cc.supported_by))}"
    problems = [f"{s.passage}: {s.problem}" for s in cc.ungrounded if s.problem]
    return f"not supported by {what}" + (f" ({'; '.join(problems[:3])})" if problems else "")


@dataclass
class ClaimMetric(LLMEvaluator):
    """Base of the claim-level RAG metrics (see the module docstring for each formula)."""

    needs_answer: ClassVar[bool] = True
    needs_reference: ClassVar[bool] = False
    needs_contexts: ClassVar[bool] = False
    needs_question: ClassVar[bool] = False
    lower_is_better: ClassVar[bool] = False
    formula: ClassVar[str] = ""
    default_threshold: ClassVar[float] = 0.7

    threshold: float | None = None
    """The case passes at ``score >= threshold`` (rates where lower is better: at ``score <= max_rate``); default
    0.7."""
    max_claims: int = MAX_CLAIMS
    """Claims one text may have: more is an unusable reply (unscored), never cut short."""
    max_tokens: int = 4096
    """The judge's reply budget per call (at least this; the run's when larger)."""

    def __post_init__(self) -> None:
        if not 1 <= self.max_claims <= 500:
            raise ValueError("max_claims must be 1-500")
        if self.threshold is not None and not 0.0 <= self.threshold <= 1.0:
            raise ValueError("threshold must be 0-1")

    # -- what the steps need ------------------------------------------------------------------------------
    def _sampling(self) -> dict[str, Any]:
        s = self.sampling()
        s["max_tokens"] = max(self.max_tokens, s["max_tokens"])
        return s

    def _preflight(self, t: _Texts) -> None:
        if self.needs_answer:
            if not t.answer.strip():
                raise _Unscored("no answer to judge (the output is empty)")
            if is_refusal(t.answer) and not self._scores_refusal():
                raise _Unscored("the answer is a refusal or \"I don't know\": it makes no claim to grade")
        if self.needs_question and not t.question.strip():
            raise _Unscored("no question (the case's input) to judge relevance against")
        if self.needs_reference and t.reference is None:
            raise _Unscored("no reference: this metric compares with the case's reference")
        if self.needs_contexts:
            if not any(not c.empty for c in t.chunks):
                raise _Unscored("no retrieved contexts (contexts is missing, or every chunk is empty)")
            size = sum(len(c.text) for c in t.chunks)
            if size > MAX_CONTEXT_CHARS:
                raise _Unscored(f"the contexts hold {size:,} characters; at most {MAX_CONTEXT_CHARS:,} are checked")

    def _scores_refusal(self) -> bool:
        return False

    @staticmethod
    def _passages(t: _Texts) -> list[Passage]:
        return [Passage(c.id, c.text) for c in t.chunks]

    async def _claims_of(self, costs: Costs, text: str, question: str, prefix: str, what: str) -> list[Claim]:
        step = costs.add(await extract(self.client(), text, question or None, prefix=prefix, sampling=self._sampling(),
                                       use_cache=self.use_cache, max_claims=self.max_claims))
        claims: list[Claim] = self._value(step, f"extracting the {what}'s claims")
        return claims

    async def _verified(self, costs: Costs, claims: Sequence[Claim], passages: Sequence[Passage],
                        what: str) -> dict[str, ClaimCheck]:
        step = costs.add(await verify(self.client(), claims, passages, sampling=self._sampling(),
                                      use_cache=self.use_cache))
        return {cc.claim.id: cc for cc in self._value(step, f"checking claims against {what}")}

    @staticmethod
    def _value(step: Step[Any], doing: str) -> Any:
        if step.status != "scored" or step.value is None:
            raise _Unscored(f"{doing}: {step.error or step.status}", "error" if step.status == "error" else "unscored")
        return step.value

    # -- the evaluator ------------------------------------------------------------------------------------
    async def evaluate_async(self, case: Case, output: Any) -> CheckResult:
        if (none := self.unbound()) is not None:
            return none
        client = self.client()
        t = _texts(case, output)
        costs = Costs()
        try:
            self._preflight(t)
            res = await self.compute(t, costs)
        except _Unscored as exc:
            res = CheckResult(score=None, status=exc.status, reason=exc.reason, error_message=exc.reason,
                              details={"metric": self.name, "formula": self.formula})
        usage, cost, latency = costs.totals()
        res.usage, res.cost_usd, res.latency_ms = usage, cost, latency
        res.judge = client.judge_info(TEMPLATE_HASH)
        res.raw_reply = res.raw_reply or (costs.raw_reply if res.status != "scored" else None)
        res.details.update(judge_calls=costs.calls, shared_steps=costs.shared)
        if usage is not None:  # this metric's share (a suite's combined row sums them into its typed usage)
            res.details["judge_tokens"] = {"input": usage.input_tokens, "output": usage.output_tokens}
        if usage is not None and usage.cached_calls and not usage.calls:
            res.flags.append("cached")
        if any(c.grounded is False for c in res.criteria):
            res.flags.append("ungrounded")
        return res

    async def compute(self, t: _Texts, costs: Costs) -> CheckResult:
        raise NotImplementedError

    def _result(self, num: int, den: int, criteria: list[CriterionScore], details: dict[str, Any],
                what: str, score: float | None = None) -> CheckResult:
        if den == 0:
            raise _Unscored(f"nothing to divide by: {what}")
        value = num / den if score is None else score
        value = min(1.0, max(0.0, value))
        if self.lower_is_better:
            limit = self.threshold if self.threshold is not None else self.default_threshold
            passed = value <= limit
        else:
            passed = value >= (self.threshold if self.threshold is not None else self.default_threshold)
        reason = f"{self.name} {value:.2f}: {num}/{den} {what}"
        bad = [c for c in criteria if c.passed is False]
        if bad:
            reason += "; " + "; ".join(f"{c.id} {(c.name or '')[:60]!r} {c.rationale or ''}".rstrip()
                                       for c in bad[:3])
        details = {"metric": self.name, "formula": self.formula, "numerator": num, "denominator": den, **details}
        return CheckResult(score=round(value, 6), passed=passed, reason=reason[:1000], criteria=criteria,
                           details=details)

    # -- dry runs -----------------------------------------------------------------------------------------
    def request(self, case: Case, output: Any) -> JudgeRequest:
        t = _texts(case, output)
        return extract_request(t.answer or t.reference or "", t.question or None, sampling=self._sampling(),
                               max_claims=self.max_claims)

    def call_requests(self, case: Case, output: Any) -> list[JudgeRequest]:
        """The calls one case is expected to cost (claims estimated one per sentence; none for a case that is
        unscored before any call, such as a refusal): counted by dry runs."""
        t = _texts(case, output)
        try:
            self._preflight(t)
        except _Unscored:
            return []
        s = self._sampling()
        reqs: list[JudgeRequest] = []
        answer = _estimated_claims(t.answer, "a", self.max_claims)
        ref = _estimated_claims(t.reference or "", "r", self.max_claims)
        for kind in self.steps():
            if kind == "A":
                reqs.append(extract_request(t.answer, t.question or None, sampling=s, max_claims=self.max_claims))
            elif kind == "G" and t.reference:
                reqs.append(extract_request(t.reference, t.question or None, sampling=s, max_claims=self.max_claims))
            elif kind in ("AK", "GK"):
                claims = answer if kind == "AK" else ref
                reqs += [verify_request(claims, g, sampling=s) for g in batches(self._passages(t))] if claims else []
            elif kind == "Aref" and t.reference and answer:
                reqs.append(verify_request(answer, [Passage("reference", t.reference)], sampling=s))
            elif kind == "Gans" and ref:
                reqs.append(verify_request(ref, [Passage("answer", t.answer)], sampling=s))
            elif kind == "rel" and answer:
                reqs.append(relevance_request(t.question, answer, sampling=s))
        return reqs

    def steps(self) -> tuple[str, ...]:
        """The steps this metric takes: ``A``/``G`` extraction, ``AK``/``GK``/``Aref``/``Gans`` verification,
        ``rel`` relevance."""
        return ()


def _crit(cc: ClaimCheck, counted: bool, good: bool, why: str) -> CriterionScore:
    from ..results._schema import CriterionScore

    quotes = [s.quote for s in cc.supports if s.quote][:5]
    return CriterionScore(id=cc.claim.id, name=cc.claim.text[:300], score=1.0 if counted else 0.0, scale="binary",
                          passed=good, evidence=quotes, grounded=(all(s.found for s in cc.supports) if cc.supports
                                                                  else None), rationale=why or None)


def _claim_records(claims: Sequence[Claim], of: str, **checks: dict[str, ClaimCheck]) -> list[dict[str, Any]]:
    out = []
    for c in claims:
        rec: dict[str, Any] = {"id": c.id, "of": of, "text": c.text,
                               "checks": {k: _check_record(v[c.id]) for k, v in checks.items() if c.id in v}}
        out.append(rec)
    return out


def _chunk_records(chunks: Sequence[Chunk], relevant: set[str] | None = None) -> list[dict[str, Any]]:
    out = []
    for c in chunks:
        rec: dict[str, Any] = {"id": c.id, "rank": c.rank, "empty": c.empty}
        if relevant is not None:
            rec["relevant"] = c.id in relevant
        out.append(rec)
    return out


@register
@dataclass
class Faithfulness(ClaimMetric):
    """``faithfulness``: the share of the answer's claims that the retrieved contexts support (each support a quote
    found in the chunk it names): ``|{a in A: in the contexts}| / |A|``."""

    name: ClassVar[str] = "faithfulness"
    needs_contexts: ClassVar[bool] = True
    critical_by_default: ClassVar[bool] = True
    """In a suite (or ``referee.evaluate``) with other evaluators, a failed faithfulness fails the case unless its
    entry says ``critical: false``: an answer that invents claims must not pass on a weighted mean."""
    formula: ClassVar[str] = "answer claims supported by some chunk / answer claims"

    def steps(self) -> tuple[str, ...]:
        return ("A", "AK")

    async def compute(self, t: _Texts, costs: Costs) -> CheckResult:
        A = await self._claims_of(costs, t.answer, t.question, "a", "answer")
        if not A:
            raise _Unscored("no claims in the answer")
        ak = await self._verified(costs, A, self._passages(t), "the contexts")
        crit = [_crit(ak[a.id], ak[a.id].supported, ak[a.id].supported, _why(ak[a.id], "any chunk")) for a in A]
        return self._result(sum(ak[a.id].supported for a in A), len(A), crit,
                            {"claims": _claim_records(A, "answer", contexts=ak), "chunks": _chunk_records(t.chunks)},
                            "answer claims supported by the contexts")


@register
@dataclass
class ContextRecall(ClaimMetric):
    """``context_recall``: the share of the reference's claims that the retrieved contexts support:
    ``|{g in G: in the contexts}| / |G|``."""

    name: ClassVar[str] = "context_recall"
    needs_answer: ClassVar[bool] = False
    needs_reference: ClassVar[bool] = True
    needs_contexts: ClassVar[bool] = True
    formula: ClassVar[str] = "reference claims supported by some chunk / reference claims"

    def steps(self) -> tuple[str, ...]:
        return ("G", "GK")

    async def compute(self, t: _Texts, costs: Costs) -> CheckResult:
        assert t.reference is not None
        G = await self._claims_of(costs, t.reference, t.question, "r", "reference")
        if not G:
            raise _Unscored("no claims in the reference")
        gk = await self._verified(costs, G, self._passages(t), "the contexts")
        crit = [_crit(gk[g.id], gk[g.id].supported, gk[g.id].supported, _why(gk[g.id], "any chunk")) for g in G]
        return self._result(sum(gk[g.id].supported for g in G), len(G), crit,
                            {"claims": _claim_records(G, "reference", contexts=gk),
                             "chunks": _chunk_records(t.chunks)}, "reference claims supported by the contexts")


def average_precision(relevant: Sequence[bool]) -> float:
    """``sum_k P@k * rel_k / R`` over ranks ``k`` (0 when no item is relevant)."""
    hits = 0
    total = 0.0
    for k, rel in enumerate(relevant, 1):
        if rel:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


@register
@dataclass
class ContextPrecision(ClaimMetric):
    """``context_precision``: the average precision of the ranked chunks, a chunk relevant when it supports at
    least one of the reference's claims: ``sum_k P@k * rel_k / R`` (0 when no chunk is relevant; an empty chunk
    keeps its rank and is not relevant)."""

    name: ClassVar[str] = "context_precision"
    needs_answer: ClassVar[bool] = False
    needs_reference: ClassVar[bool] = True
    needs_contexts: ClassVar[bool] = True
    formula: ClassVar[str] = "sum over ranks k of precision@k x rel_k / relevant chunks (0 when none is relevant)"

    def steps(self) -> tuple[str, ...]:
        return ("G", "GK")

    async def compute(self, t: _Texts, costs: Costs) -> CheckResult:
        from ..results._schema import CriterionScore

        assert t.reference is not None
        G = await self._claims_of(costs, t.reference, t.question, "r", "reference")
        if not G:
            raise _Unscored("no claims in the reference: no chunk can be told relevant")
        gk = await self._verified(costs, G, self._passages(t), "the contexts")
        rel_ids = {p for cc in gk.values() for p in cc.supported_by}
        flags = [c.id in rel_ids for c in t.chunks]
        ap = average_precision(flags)
        crit = []
        for c, rel in zip(t.chunks, flags, strict=True):
            by = [g.id for g in G if c.id in gk[g.id].supported_by]
            quotes = [s.quote for g in G for s in gk[g.id].supports if s.passage == c.id and s.ok][:5]
            crit.append(CriterionScore(id=c.id, name=f"chunk {c.rank}", score=1.0 if rel else 0.0, scale="binary",
                                       passed=rel, evidence=quotes, grounded=True if quotes else None,
                                       rationale=(f"supports {', '.join(by)}" if by else
                                                  "empty" if c.empty else "supports no reference claim")))
        return self._result(sum(flags), len(flags), crit,
                            {"claims": _claim_records(G, "reference", contexts=gk),
                             "chunks": _chunk_records(t.chunks, rel_ids), "average_precision": round(ap, 6)},
                            "chunks relevant (average precision over their ranks)", score=ap)


@register
@dataclass
class AnswerRelevancy(ClaimMetric):
    """``answer_relevancy``: the share of the answer's claims that address the question (judged claim by claim; no
    embeddings): ``|{a in A: addresses the question}| / |A|``. ``refusal="zero"`` scores a refusal 0 instead of
    leaving it unscored."""

    name: ClassVar[str] = "answer_relevancy"
    needs_question: ClassVar[bool] = True
    formula: ClassVar[str] = "answer claims that address the question / answer claims"

    refusal: Literal["unscored", "zero"] = "unscored"
    """A refusal or "I don't know" answer: ``unscored`` (default) or ``zero`` (scores 0, said in the reason)."""

    def _scores_refusal(self) -> bool:
        return self.refusal == "zero"

    def call_requests(self, case: Case, output: Any) -> list[JudgeRequest]:
        if is_refusal(_texts(case, output).answer):
            return []  # unscored, or 0 by the refusal rule: no call either way
        return super().call_requests(case, output)

    def steps(self) -> tuple[str, ...]:
        return ("A", "rel")

    async def compute(self, t: _Texts, costs: Costs) -> CheckResult:
        from ..results._schema import CriterionScore

        if is_refusal(t.answer):  # refusal="zero": the one explicit rule that gives a refusal a score
            return CheckResult(score=0.0, passed=False, reason="answer_relevancy 0.00: the answer is a refusal "
                               "(refusal=\"zero\" scores it 0)", details={"metric": self.name, "refusal": True,
                                                                          "formula": self.formula})
        A = await self._claims_of(costs, t.answer, t.question, "a", "answer")
        if not A:
            raise _Unscored("no claims in the answer")
        step = costs.add(await relevance(self.client(), t.question, A, sampling=self._sampling(),
                                         use_cache=self.use_cache))
        verdicts: dict[str, bool] = self._value(step, "judging the claims' relevance")
        crit = [CriterionScore(id=a.id, name=a.text[:300], score=1.0 if verdicts[a.id] else 0.0, scale="binary",
                               passed=verdicts[a.id],
                               rationale="addresses the question" if verdicts[a.id] else "does not address the question")
                for a in A]
        claims = [{"id": a.id, "of": "answer", "text": a.text, "relevant": verdicts[a.id]} for a in A]
        return self._result(sum(verdicts.values()), len(A), crit, {"claims": claims},
                            "answer claims address the question")


@dataclass
class _AgainstReference(ClaimMetric):
    needs_reference: ClassVar[bool] = True

    async def _precision(self, t: _Texts, costs: Costs) -> tuple[list[Claim], dict[str, ClaimCheck]]:
        assert t.reference is not None
        A = await self._claims_of(costs, t.answer, t.question, "a", "answer")
        if not A:
            return A, {}
        return A, await self._verified(costs, A, [Passage("reference", t.reference)], "the reference")

    async def _recall(self, t: _Texts, costs: Costs) -> tuple[list[Claim], dict[str, ClaimCheck]]:
        assert t.reference is not None
        G = await self._claims_of(costs, t.reference, t.question, "r", "reference")
        if not G:
            return G, {}
        return G, await self._verified(costs, G, [Passage("answer", t.answer)], "the answer")


@register
@dataclass
class ClaimPrecision(_AgainstReference):
    """``claim_precision`` (RAGChecker's precision, "correctness"): the share of the answer's claims that the
    reference supports: ``|{a in A: correct}| / |A|``."""

    name: ClassVar[str] = "claim_precision"
    formula: ClassVar[str] = "answer claims supported by the reference / answer claims"

    def steps(self) -> tuple[str, ...]:
        return ("A", "Aref")

    async def compute(self, t: _Texts, costs: Costs) -> CheckResult:
        A, ar = await self._precision(t, costs)
        if not A:
            raise _Unscored("no claims in the answer")
        crit = [_crit(ar[a.id], ar[a.id].supported, ar[a.id].supported, _why(ar[a.id], "the reference")) for a in A]
        return self._result(sum(ar[a.id].supported for a in A), len(A), crit,
                            {"claims": _claim_records(A, "answer", reference=ar)},
                            "answer claims supported by the reference")


@register
@dataclass
class ClaimRecall(_AgainstReference):
    """``claim_recall`` (RAGChecker's recall, "completeness"): the share of the reference's claims that the answer
    supports: ``|{g in G: supported by the answer}| / |G|``."""

    name: ClassVar[str] = "claim_recall"
    formula: ClassVar[str] = "reference claims supported by the answer / reference claims"

    def steps(self) -> tuple[str, ...]:
        return ("G", "Gans")

    async def compute(self, t: _Texts, costs: Costs) -> CheckResult:
        G, ga = await self._recall(t, costs)
        if not G:
            raise _Unscored("no claims in the reference")
        crit = [_crit(ga[g.id], ga[g.id].supported, ga[g.id].supported, _why(ga[g.id], "the answer")) for g in G]
        return self._result(sum(ga[g.id].supported for g in G), len(G), crit,
                            {"claims": _claim_records(G, "reference", answer=ga)},
                            "reference claims supported by the answer")


@register
@dataclass
class ClaimF1(_AgainstReference):
    """``claim_f1`` (RAGChecker's F1, "overall"): ``2 P R / (P + R)`` of :class:`ClaimPrecision` and
    :class:`ClaimRecall` (0 when both are 0; unscored when either has no claims)."""

    name: ClassVar[str] = "claim_f1"
    formula: ClassVar[str] = "2 x precision x recall / (precision + recall); 0 when both are 0"

    def steps(self) -> tuple[str, ...]:
        return ("A", "G", "Aref", "Gans")

    async def compute(self, t: _Texts, costs: Costs) -> CheckResult:
        (A, ar), (G, ga) = await asyncio.gather(self._precision(t, costs), self._recall(t, costs))
        if not A:
            raise _Unscored("no claims in the answer")
        if not G:
            raise _Unscored("no claims in the reference")
        np_, nr = sum(ar[a.id].supported for a in A), sum(ga[g.id].supported for g in G)
        p, r = np_ / len(A), nr / len(G)
        f1 = 2 * p * r / (p + r) if p + r > 0 else 0.0
        crit = [_crit(ar[a.id], ar[a.id].supported, ar[a.id].supported, _why(ar[a.id], "the reference")) for a in A]
        crit += [_crit(ga[g.id], ga[g.id].supported, ga[g.id].supported, _why(ga[g.id], "the answer")) for g in G]
        res = self._result(np_ + nr, len(A) + len(G), crit,
                           {"claims": _claim_records(A, "answer", reference=ar) + _claim_records(G, "reference",
                                                                                                answer=ga),
                            "precision": round(p, 6), "recall": round(r, 6)},
                           "claims matched (precision and recall combined as F1)", score=f1)
        res.reason = f"claim_f1 {f1:.2f}: precision {np_}/{len(A)}, recall {nr}/{len(G)}" + res.reason.split(
            "combined as F1)", 1)[-1]
        return res


@register
@dataclass
class ContextUtilization(ClaimMetric):
    """``context_utilization``: of the reference's claims the contexts support, the share the answer also
    supports: ``|{g: in the contexts and in the answer}| / |{g: in the contexts}|`` (unscored when the contexts
    support none)."""

    name: ClassVar[str] = "context_utilization"
    needs_reference: ClassVar[bool] = True
    needs_contexts: ClassVar[bool] = True
    formula: ClassVar[str] = ("reference claims supported by some chunk and by the answer / reference claims "
                              "supported by some chunk")

    def steps(self) -> tuple[str, ...]:
        return ("G", "GK", "Gans")

    async def compute(self, t: _Texts, costs: Costs) -> CheckResult:
        assert t.reference is not None
        G = await self._claims_of(costs, t.reference, t.question, "r", "reference")
        if not G:
            raise _Unscored("no claims in the reference")
        gk, ga = await asyncio.gather(self._verified(costs, G, self._passages(t), "the contexts"),
                                      self._verified(costs, G, [Passage("answer", t.answer)], "the answer"))
        inctx = [g for g in G if gk[g.id].supported]
        crit = [_crit(ga[g.id], ga[g.id].supported, ga[g.id].supported, _why(ga[g.id], "the answer")) for g in inctx]
        return self._result(sum(ga[g.id].supported for g in inctx), len(inctx), crit,
                            {"claims": _claim_records(G, "reference", contexts=gk, answer=ga),
                             "chunks": _chunk_records(t.chunks)},
                            "reference claims in the contexts are used by the answer")


@dataclass
class _AnswerDiagnosis(ClaimMetric):
    """What the answer's claims rest on: the contexts, the reference (and, for noise, the reference's claims)."""

    needs_reference: ClassVar[bool] = True
    needs_contexts: ClassVar[bool] = True
    lower_is_better: ClassVar[bool] = True
    default_threshold: ClassVar[float] = 0.1

    async def _diagnosed(self, t: _Texts, costs: Costs) -> tuple[list[Claim], dict[str, ClaimCheck],
                                                                 dict[str, ClaimCheck]]:
        assert t.reference is not None
        A = await self._claims_of(costs, t.answer, t.question, "a", "answer")
        if not A:
            raise _Unscored("no claims in the answer")
        ak, ar = await asyncio.gather(self._verified(costs, A, self._passages(t), "the contexts"),
                                      self._verified(costs, A, [Passage("reference", t.reference)], "the reference"))
        return A, ak, ar


@register
@dataclass
class Hallucination(_AnswerDiagnosis):
    """``hallucination`` (RAGChecker's): the share of the answer's claims that are neither correct (the reference
    does not support them) nor in the contexts: ``|{a: not correct, not in the contexts}| / |A|``. Lower is
    better: passes at ``score <= threshold`` (default 0.1)."""

    name: ClassVar[str] = "hallucination"
    critical_by_default: ClassVar[bool] = True
    formula: ClassVar[str] = "answer claims supported by neither the reference nor any chunk / answer claims"

    def steps(self) -> tuple[str, ...]:
        return ("A", "AK", "Aref")

    async def compute(self, t: _Texts, costs: Costs) -> CheckResult:
        A, ak, ar = await self._diagnosed(t, costs)
        bad = {a.id for a in A if not ar[a.id].supported and not ak[a.id].supported}
        crit = [_crit(ak[a.id], a.id in bad, a.id not in bad,
                      "supported by neither the reference nor any chunk" if a.id in bad else
                      (_why(ar[a.id], "the reference") if ar[a.id].supported else _why(ak[a.id], "any chunk")))
                for a in A]
        return self._result(len(bad), len(A), crit,
                            {"claims": _claim_records(A, "answer", contexts=ak, reference=ar),
                             "chunks": _chunk_records(t.chunks)}, "answer claims hallucinated")


@register
@dataclass
class SelfKnowledge(_AnswerDiagnosis):
    """``self_knowledge`` (RAGChecker's): the share of the answer's claims that are correct but not in the
    contexts (the model knew them): ``|{a: correct, not in the contexts}| / |A|``. Passes at ``score <=
    threshold`` (default 1: it describes, it does not judge)."""

    name: ClassVar[str] = "self_knowledge"
    default_threshold: ClassVar[float] = 1.0
    formula: ClassVar[str] = "answer claims supported by the reference but by no chunk / answer claims"

    def steps(self) -> tuple[str, ...]:
        return ("A", "AK", "Aref")

    async def compute(self, t: _Texts, costs: Costs) -> CheckResult:
        A, ak, ar = await self._diagnosed(t, costs)
        own = {a.id for a in A if ar[a.id].supported and not ak[a.id].supported}
        crit = [_crit(ar[a.id], a.id in own, True,
                      "correct, and no chunk supports it" if a.id in own else
                      (_why(ak[a.id], "any chunk") if ak[a.id].supported else "not correct"))
                for a in A]
        return self._result(len(own), len(A), crit,
                            {"claims": _claim_records(A, "answer", contexts=ak, reference=ar),
                             "chunks": _chunk_records(t.chunks)}, "answer claims from the model's own knowledge")


@register
@dataclass
class NoiseSensitivity(_AnswerDiagnosis):
    """``noise_sensitivity`` (RAGChecker's): the share of the answer's claims that are incorrect and supported by a
    relevant chunk (``chunks="relevant"``), or by an irrelevant chunk and no relevant one (``"irrelevant"``); a
    chunk is relevant when it supports a reference claim. Lower is better: passes at ``score <= threshold``
    (default 0.1)."""

    name: ClassVar[str] = "noise_sensitivity"
    formula: ClassVar[str] = ("incorrect answer claims supported by a relevant chunk (chunks=irrelevant: by an "
                              "irrelevant chunk and no relevant one) / answer claims")

    chunks: Literal["relevant", "irrelevant"] = "relevant"
    """Which chunks' noise is measured."""

    def steps(self) -> tuple[str, ...]:
        return ("A", "G", "AK", "GK", "Aref")

    async def compute(self, t: _Texts, costs: Costs) -> CheckResult:
        assert t.reference is not None
        (A, ak, ar), G = await asyncio.gather(self._diagnosed(t, costs),
                                              self._claims_of(costs, t.reference, t.question, "r", "reference"))
        if not G:
            raise _Unscored("no claims in the reference: no chunk can be told relevant")
        gk = await self._verified(costs, G, self._passages(t), "the contexts")
        relevant = {p for cc in gk.values() for p in cc.supported_by}
        counted = set()
        for a in A:
            if ar[a.id].supported:
                continue
            by = ak[a.id].supported_by
            if (self.chunks == "relevant" and by & relevant) or (self.chunks == "irrelevant" and by - relevant
                                                                  and not by & relevant):
                counted.add(a.id)
        crit = [_crit(ak[a.id], a.id in counted, a.id not in counted,
                      f"incorrect, and taken from {self.chunks} chunk(s) {', '.join(sorted(ak[a.id].supported_by))}"
                      if a.id in counted else ("correct" if ar[a.id].supported else _why(ak[a.id], "any chunk")))
                for a in A]
        return self._result(len(counted), len(A), crit,
                            {"claims": _claim_records(A, "answer", contexts=ak, reference=ar)
                             + _claim_records(G, "reference", contexts=gk), "chunks": _chunk_records(t.chunks, relevant),
                             "chunks_measured": self.chunks},
                            f"answer claims incorrect and taken from {self.chunks} chunks")


METRICS: tuple[type[ClaimMetric], ...] = (Faithfulness, ContextRecall, ContextPrecision, AnswerRelevancy,
                                          ClaimPrecision, ClaimRecall, ClaimF1, ContextUtilization, NoiseSensitivity,
                                          Hallucination, SelfKnowledge)
"""Every claim metric, in the order the docs give them."""
