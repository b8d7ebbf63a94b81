"""Calling models for alignment: the judge re-run on labelled cases with a changed prompt, and the optimizer
asked for rewrites of the rubric. Both go through the runner's row engine and the judge client (the response
cache: a rerun with the same labels and prompts costs nothing)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..cases._case import Case
from ..errors import UserError
from ..evaluators._base import JudgeSettings
from ..evaluators._prompt_guard import data_block, judge_request, make_nonce, system_prompt
from ..evaluators._reply import ReplyInvalid, ask_judge, parse_verdict
from ..evaluators.checks._judge import LLMJudge
from ..providers._base import JudgeRequest
from ..results._schema import ResultRow
from ..runner._client import JudgeClient
from ._prompt import PromptPart, example_text, label_words

MAX_CANDIDATES = 3
MAX_OPTIMIZER_CASES = 12
"""Disagreements shown to the optimizer: enough to see a pattern, a bounded prompt."""


@dataclass
class Scored:
    """A judge's scores (0-1) and verdicts per case id, and what its calls cost."""

    scores: dict[str, float] = field(default_factory=dict)
    passed: dict[str, bool] = field(default_factory=dict)
    unscored: list[str] = field(default_factory=list)
    calls: int = 0
    cached: int = 0
    cost_usd: float = 0.0


@dataclass
class JudgeRunner:
    """The judge an alignment re-runs: an ``llm_judge`` (``judge``), the labelled cases with their outputs
    (``cases``), and the client and settings of its provider. ``on_request``: handed every request built, before
    it is sent (tests check that no held-out case reaches a prompt built for fitting)."""

    judge: LLMJudge
    cases: Mapping[str, Case]
    client: JudgeClient
    settings: JudgeSettings
    concurrency: int = 8
    on_request: Callable[[str, JudgeRequest], None] | None = None
    stage: str = "fit"

    @classmethod
    def of(cls, suite: Any, judge: Any, *, entry: str | None = None, **options: Any) -> JudgeRunner:
        """The runner of a loaded suite's LLM judge entry (``entry``: its id; default its only one), with the
        suite's cases, calling through ``judge`` (a :class:`referee.Judge`: ``Judge.for_suite(suite.judge)`` is
        the one the suite runs with)."""
        llm = [s for s in suite.specs if s.is_llm]
        if entry is not None:
            llm = [s for s in llm if s.label == entry]
            if not llm:
                raise UserError(f"{suite.path}: no LLM judge entry {entry!r} (entries: "
                                f"{', '.join(s.label for s in suite.specs if s.is_llm) or 'none'})")
        if len(llm) != 1:
            raise UserError(f"{suite.path}: {len(llm)} LLM judge entries; name the one to align (--entry ID)")
        spec = llm[0]
        if spec.aligned is not None:
            raise UserError(f"{suite.path}: entry {spec.label!r} already uses an aligned judge "
                            f"({spec.aligned.hash}); align the judge without it")
        if not isinstance(spec.evaluator, LLMJudge):
            raise UserError(f"{suite.path}: entry {spec.label!r} is {spec.name}; examples and instructions align "
                            "an llm_judge (a rubric or a template)")
        client = judge.client()
        return cls(judge=spec.evaluator, cases={c.id: c for c in suite.cases}, client=client,
                   settings=judge.settings(client), concurrency=judge.concurrency, **options)

    async def score(self, variant: LLMJudge, ids: Sequence[str]) -> Scored:
        from ..runner._engine import run_rows

        missing = [c for c in ids if c not in self.cases]
        if missing:
            raise UserError(f"{len(missing)} labelled case(s) are not among the judge's cases (first: {missing[0]}): "
                            "the judge can only be re-run on cases it has")
        bound = variant.bound(self.settings)
        out = Scored()

        async def one(cid: str) -> ResultRow:
            case = self.cases[cid]
            if self.on_request is not None:
                self.on_request(self.stage, bound.request(case))
            return await bound.judge_row(case)

        from ..runner._session import error_row

        # A case that fails is an error row (left out of the figures and counted), never a stopped alignment.
        stats = await run_rows(list(ids), one, writer=None, concurrency=self.concurrency, label="aligning",
                               show_progress=False, on_error=lambda cid, exc: error_row(cid, exc, evaluator="judge"))
        for row in stats.rows:
            u = row.usage
            out.calls += u.calls if u is not None else 0
            out.cached += u.cached_calls if u is not None else 0
            out.cost_usd += row.cost_usd or 0.0
            if row.status == "scored" and row.score is not None:
                out.scores[row.id] = row.score
                if row.passed is not None:
                    out.passed[row.id] = row.passed
            else:
                out.unscored.append(row.id)
        return out


OPTIMIZER_INTRO = (
    "You improve the instructions of an LLM judge so that its grades agree with a team's human reviewers. You are "
    "given the judge's current {part} and cases where the judge and the reviewers disagreed. Propose at most "
    "{n} rewritten versions of the {part}: keep every criterion it names, keep every {{placeholder}} and the tags "
    "around it exactly as they are, change only the wording that tells the judge how to grade. Reply with JSON "
    'only: {{"candidates": [{{"text": "<the whole rewritten {part}>", "why": "<one sentence>"}}]}}.')

OPTIMIZER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"candidates": {"type": "array", "maxItems": MAX_CANDIDATES, "items": {
        "type": "object", "properties": {"text": {"type": "string"}, "why": {"type": "string"}},
        "required": ["text"]}}},
    "required": ["candidates"],
}


def optimizer_request(part: PromptPart, current: str, disagreements: Sequence[Mapping[str, Any]], *, kind: str,
                      n: int, max_tokens: int = 2048) -> JudgeRequest:
    """The optimizer's request: the current rubric or template (referee's own text) and the disagreements (case
    text and rationales: delimited data)."""
    texts: list[str] = []
    for d in disagreements:
        texts.extend(example_text(d["case"]).values())
        if d.get("rationale"):
            texts.append(str(d["rationale"]))
    nonce = make_nonce(current, *texts)
    # The rubric or template is the user's own text, not case text: delimited, its tags kept as they are.
    parts = [f"The judge's current {part}:", f"<current-{nonce}>\n{current}\n</current-{nonce}>",
             f"{len(disagreements)} case(s) where the judge and the reviewers disagreed:"]
    for i, d in enumerate(disagreements, 1):
        body = "\n".join(f"{k}: {v}" for k, v in example_text(d["case"]).items())
        parts.append(f"Case {i}: the judge gave {label_words(float(d['judge']), kind)}; the reviewers gave "
                     f"{label_words(float(d['label']), kind)}.\n" + data_block("case", body, nonce))
        if d.get("rationale"):
            parts.append(f"The reviewers' reason for case {i}:\n" + data_block("rationale", str(d["rationale"]), nonce))
    system = system_prompt(OPTIMIZER_INTRO.format(part=part, n=n), nonce=nonce)
    return judge_request(system, "\n\n".join(parts), texts, response_schema=OPTIMIZER_SCHEMA, max_tokens=max_tokens,
                         temperature=None, seed=None)


def _candidates(data: dict[str, Any]) -> list[str]:
    cands = data.get("candidates")
    if not isinstance(cands, list) or not cands:
        raise ReplyInvalid("'candidates' is missing or empty")
    out: list[str] = []
    for c in cands[:MAX_CANDIDATES]:
        text = c.get("text") if isinstance(c, dict) else c
        if not isinstance(text, str):
            raise ReplyInvalid("a candidate has no 'text'")
        out.append(text)
    return out


async def propose(client: JudgeClient, request: JudgeRequest) -> tuple[list[str], str | None, float, int]:
    """The optimizer's candidates (at most :data:`MAX_CANDIDATES`), the reason when there are none, its cost and
    calls."""
    outcome = await ask_judge(client, request, lambda text: parse_verdict(text, _candidates))
    cost = outcome.cost_usd or 0.0
    calls = outcome.usage.calls if outcome.usage is not None else 0
    if outcome.status != "scored" or outcome.value is None:
        return [], f"the optimizer's reply was not usable ({outcome.error or outcome.status})", cost, calls
    return list(outcome.value), None, cost, calls


def request_chars(request: JudgeRequest) -> int:
    return sum(len(m.content) if isinstance(m.content, str) else len(json.dumps(m.content))
               for m in request.messages)
