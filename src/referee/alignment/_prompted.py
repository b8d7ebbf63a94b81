"""The methods that change the judge's prompt (``instructions``, then ``examples``), fitted on training labels
only: the optimizer sees only training disagreements, its candidates are scored on training cases, examples are
chosen among training cases; the judge with the fitted prompt is then run on every labelled case (the training
side for a score map fitted after it, the held-out side to measure it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..runner._client import JudgeClient
from ._figures import LOWER_IS_BETTER, _metric_rows
from ._map import snap
from ._prompt import (
    PromptPart,
    aligned_judge,
    check_candidate,
    choose_examples,
    example_text,
    prompt_part,
    unified_diff,
)
from ._rejudge import MAX_CANDIDATES, MAX_OPTIMIZER_CASES, JudgeRunner, Scored, optimizer_request, propose


@dataclass
class PromptFit:
    """What the prompt methods chose and what their calls cost."""

    part: PromptPart | None = None
    text: str | None = None
    """The winning rewrite of the rubric or template (None: the original kept)."""
    diff: str | None = None
    examples: list[dict[str, Any]] = field(default_factory=list)
    candidates: list[dict[str, Any]] = field(default_factory=list)
    """Each candidate: its text, why it was refused (or its training score)."""
    scored: Scored | None = None
    """The fitted prompt's scores on every labelled case."""
    notes: list[str] = field(default_factory=list)
    judge_calls: int = 0
    cached_calls: int = 0
    optimizer_calls: int = 0
    cost_usd: float = 0.0

    def add(self, s: Scored) -> None:
        self.judge_calls += s.calls
        self.cached_calls += s.cached
        self.cost_usd += s.cost_usd


def on_scale(scores: Mapping[str, float], verdicts: Mapping[str, bool], ids: Sequence[str], kind: str,
             levels: Sequence[float]) -> dict[str, float]:
    """A judge's answers on the human scale: its verdict for pass/fail labels, its score snapped to the levels."""
    out: dict[str, float] = {}
    for c in ids:
        if c not in scores:
            continue
        if kind == "binary":
            out[c] = 1.0 if verdicts.get(c, scores[c] >= 0.5) else 0.0
        elif kind == "ordinal":
            out[c] = float(snap(np.array([scores[c]]), levels)[0])
        else:
            out[c] = scores[c]
    return out


def train_agreement(pred: Mapping[str, float], human: Mapping[str, float], ids: Sequence[str], *, metric: str,
                    kind: str, levels: Sequence[float]) -> float:
    """The decision metric on training cases (higher is better; a metric that cannot be computed: -inf)."""
    keep = [c for c in ids if c in pred]
    if len(keep) < 2:
        return -np.inf
    p = np.array([[pred[c] for c in keep]])
    y = np.array([[human[c] for c in keep]])
    m = metric if metric != "spearman" else "alpha"
    v = float(_metric_rows(m, list(levels), kind == "ordinal")(p, y)[0])
    if not np.isfinite(v):
        return -np.inf
    return -v if m in LOWER_IS_BETTER else v


def example_records(ids: Sequence[str], runner: JudgeRunner, human: Mapping[str, float],
                    rationale: Mapping[str, str]) -> list[dict[str, Any]]:
    return [{"id": c, "label": human[c], "rationale": rationale.get(c), "case": example_text(runner.cases[c])}
            for c in ids]


async def fit_prompt(runner: JudgeRunner, *, methods: Sequence[str], train: Sequence[str], heldout: Sequence[str],
                     human: Mapping[str, float], raw: Mapping[str, float], raw_verdicts: Mapping[str, bool],
                     rationale: Mapping[str, str], kind: str, levels: Sequence[float], metric: str,
                     n_examples: int, n_candidates: int = MAX_CANDIDATES, optimizer: JudgeClient | None = None,
                     seed: int = 0) -> PromptFit:
    """Fit the prompt on ``train`` and score it on ``train`` + ``heldout``. Training-only by construction: the
    optimizer's input, the candidates' scoring and the examples read only ``train``."""
    fit = PromptFit()
    raw_scale = on_scale(raw, raw_verdicts, train, kind, levels)
    base_part, base_text = prompt_part(runner.judge)
    criteria = list(runner.judge.criteria or [])
    if "instructions" in methods:
        assert optimizer is not None
        dis = sorted((c for c in train if c in raw_scale and raw_scale[c] != human[c]),
                     key=lambda c: (-abs(raw_scale[c] - human[c]), c))[:MAX_OPTIMIZER_CASES]
        if not dis:
            fit.notes.append("instructions: the judge agrees with every training label; nothing to learn from")
        else:
            recs: list[dict[str, Any]] = [{"case": runner.cases[c], "judge": raw_scale[c], "label": human[c],
                     "rationale": rationale.get(c)} for c in dis]
            req = optimizer_request(base_part, base_text, recs, kind=kind, n=n_candidates)
            if runner.on_request is not None:
                runner.on_request("optimizer", req)
            cands, why, cost, calls = await propose(optimizer, req)
            fit.optimizer_calls += calls
            fit.cost_usd += cost
            if why:
                fit.notes.append(f"instructions: {why}; the original {base_part} kept")
            # Nothing a case or a reviewer wrote (on the training side, shown or not) becomes an instruction.
            data = [t for c in train for t in (*example_text(runner.cases[c]).values(), rationale.get(c) or "")
                    if t and c in runner.cases]
            best = train_agreement(raw_scale, human, train, metric=metric, kind=kind, levels=levels)
            for text in cands[:n_candidates]:
                refused = check_candidate(base_part, base_text, text, criteria=criteria, data=data)
                if refused:
                    fit.candidates.append({"text": text, "refused": refused})
                    continue
                s = await runner.score(aligned_judge(runner.judge, part=base_part, text=text), train)
                fit.add(s)
                agree = train_agreement(on_scale(s.scores, s.passed, train, kind, levels), human, train,
                                        metric=metric, kind=kind, levels=levels)
                fit.candidates.append({"text": text, "train": None if not np.isfinite(agree) else agree})
                if agree > best + 1e-12:
                    best, fit.part, fit.text = agree, base_part, text
            if fit.text is not None:
                fit.diff = unified_diff(base_text, fit.text, base_part)
            elif cands:
                fit.notes.append(f"instructions: no candidate agreed better with the training labels than the "
                                 f"original {base_part} ({len(fit.candidates)} tried); the original kept")
    if "examples" in methods:
        picked = choose_examples(train, human, raw_scale, k=n_examples, kind=kind, seed=seed)
        fit.examples = example_records(picked, runner, human, rationale)
    variant = aligned_judge(runner.judge, examples=fit.examples, kind=kind, part=fit.part, text=fit.text)
    runner.stage = "measure"  # the fitted prompt on every labelled case: held-out cases only as the graded case
    s = await runner.score(variant, [*train, *heldout])
    fit.add(s)
    fit.scored = s
    if s.unscored:
        fit.notes.append(f"the aligned prompt left {len(s.unscored)} case(s) unscored")
    return fit


async def refit_prompt(runner: JudgeRunner, fit: PromptFit, *, ids: Sequence[str], human: Mapping[str, float],
                       raw: Mapping[str, float], raw_verdicts: Mapping[str, bool], rationale: Mapping[str, str],
                       kind: str, levels: Sequence[float], n_examples: int, seed: int, rescore: bool
                       ) -> tuple[list[dict[str, Any]], Scored | None]:
    """The judge users get: examples chosen again among every label (the winning wording kept), and, when a map
    is fitted after it, that prompt's scores on every labelled case."""
    examples = fit.examples
    if fit.examples:
        raw_scale = on_scale(raw, raw_verdicts, ids, kind, levels)
        picked = choose_examples(ids, human, raw_scale, k=n_examples, kind=kind, seed=seed)
        examples = example_records(picked, runner, human, rationale)
    if not rescore:
        return examples, None
    runner.stage = "final"
    s = await runner.score(aligned_judge(runner.judge, examples=examples, kind=kind, part=fit.part, text=fit.text),
                           ids)
    fit.add(s)
    return examples, s
