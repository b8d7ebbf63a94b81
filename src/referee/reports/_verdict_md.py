"""The "Evaluation Verdict" markdown of the agent-evaluation rubric, rendered from a rubric result row.

The layout is the seed document's: dimension table (score, weight, weighted score, composite), evidence
citations per dimension, verdict, summary, and required actions when the verdict is ADEQUATE or worse.
referee adds what the seed cannot know: quotes not found in the judged text, and the self-grading caveat.
"""

from __future__ import annotations

import datetime as _dt

from ..results._schema import ResultRow
from ..rubrics._model import SCALES, Rubric


def _num(x: float) -> str:
    return f"{x:g}" if x == int(x) else f"{x:.2f}".rstrip("0")


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for n, r in enumerate(rows):
        out.append("| " + " | ".join(c.ljust(widths[i]) for i, c in enumerate(r)) + " |")
        if n == 0:
            out.append("| " + " | ".join("-" * widths[i] for i in range(len(r))) + " |")
    return out


def _quote_block(text: str) -> list[str]:
    return ["> " + ln if ln else ">" for ln in text.splitlines() or [""]]


def render_verdict(row: ResultRow, rubric: Rubric, *, evaluated: str = "", evaluator: str = "",
                   date: str | None = None) -> str:
    """Markdown verdict for one rubric row (unscored rows say why there is no verdict)."""
    details = row.details
    judge = f"{row.judge.provider}/{row.judge.model}" if row.judge else ""
    lines = [
        "## Evaluation Verdict",
        "",
        f"**Output Evaluated**: {evaluated or row.id}",
        f"**Evaluator**: {evaluator or ('referee rubric ' + rubric.name + (' (judge ' + judge + ')' if judge else ''))}",
        f"**Date**: {date or _dt.date.today().isoformat()}",
        "",
    ]
    if "self_grading" in row.flags:
        lines += [f"> **Caveat: self-grading.** {details.get('self_grading', 'The judge is the system under test.')}",
                  ""]
    if row.status != "scored" and not row.criteria:
        lines += ["### Verdict: UNSCORED", "",
                  f"**Summary**: the judge's reply could not be used ({row.error or row.status}); no score is "
                  "given (this is neither a pass nor a fail).", ""]
        return "\n".join(lines)
    by_id = {c.id: c for c in row.criteria}
    table = [["Dimension", "Score", "Weight", "Weighted Score"]]
    total_w = sum(rubric.weight_of(c) for c in rubric.criteria)
    for c in rubric.criteria:
        cs = by_id.get(c.id)
        hi = SCALES[rubric.criterion_scale(c)][1]
        w = rubric.weight_of(c)
        if cs is None or cs.raw_score is None or cs.status != "scored":
            # An unscored criterion may still carry the judge's raw number (ungrounded: unscored): not a score.
            table.append([c.title, "unscored", f"{w * 100:.0f}%", "-"])
            continue
        weighted = w * cs.raw_score / (1.0 if rubric.composite == "weighted_sum" else total_w or 1.0)
        table.append([c.title, f"{_num(cs.raw_score)}/{_num(hi)}", f"{w * 100:.0f}%", f"{weighted:.2f}"])
    composite = details.get("composite")
    hi_all = SCALES[rubric.scale][1]
    comp_txt = f"**{composite:.2f} / {hi_all:.1f}**" if composite is not None else "**unscored**"
    table.append(["**Composite**", "", "", comp_txt])
    lines += ["### Dimension Scores", "", *_table(table), "", "### Evidence Citations", ""]
    for c in rubric.criteria:
        cs = by_id.get(c.id)
        if cs is None:
            continue
        hi = SCALES[rubric.criterion_scale(c)][1]
        score = f"{_num(cs.raw_score)}/{_num(hi)}" if cs.raw_score is not None and cs.status == "scored" \
            else "unscored"
        lines += [f"**{c.title} ({score})**:", ""]
        checks = {q["quote"]: q for q in details.get("evidence_checks", {}).get(c.id, [])}
        for quote in cs.evidence or ["(no evidence given)"]:
            block = _quote_block(quote)
            chk = checks.get(quote)
            if chk is not None and not chk.get("found"):
                block[-1] += "  **[not found in the judged text: ungrounded]**"
            lines += block
        lines += [f"> Rationale: {cs.rationale or '(none given)'}", ""]
    verdict = details.get("verdict") or ("UNSCORED" if row.status != "scored" else "-")
    if row.status != "scored" and row.passed is False:
        verdict = f"FAIL (critical failure: {', '.join(details.get('critical_failures') or [])}; no composite)"
    lines += [f"### Verdict: {verdict}", ""]
    summary = details.get("summary") or row.rationale or ""
    if row.status != "scored":
        summary = (summary + " " if summary else "") + f"(unscored: {row.error})"
    lines += [f"**Summary**: {summary}", ""]
    ungrounded = details.get("ungrounded") or []
    if ungrounded:
        lines += [f"**Ungrounded evidence**: {len(ungrounded)} dimension(s) cite quotes that were not found in "
                  f"the judged text: {', '.join(ungrounded)}.", ""]
    if rubric.needs_actions(details.get("verdict")):
        actions = list(details.get("required_actions") or [])
        if not actions:  # the judge gave none: the weakest dimensions' rationales say what to fix
            weakest = sorted((c for c in row.criteria if c.score is not None), key=lambda c: c.score or 0.0)
            actions = [f"{c.name or c.id}: {c.rationale}" for c in weakest[:2] if c.rationale]
        lines += [f"**Required Actions** (if verdict is {rubric.actions_from} or worse):", ""]
        lines += [f"{i}. {a}" for i, a in enumerate(actions, 1)] or ["1. (the judge listed none)"]
        lines.append("")
    return "\n".join(lines)
