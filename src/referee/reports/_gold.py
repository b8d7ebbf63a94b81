"""``referee gold``'s terminal text: a case's verdict with its criteria table, and the run's closing notes."""

from __future__ import annotations

from pathlib import Path

from ..evaluators._evidence import describe_ungrounded
from ..results._manifest import Totals
from ..results._schema import ResultRow


def gold_case_text(row: ResultRow) -> str:
    """One case: the verdict line (no score or grade for a case with unscored criteria), then a line per
    criterion (``*`` marks a critical one; an unfound quote and a pass/score contradiction are noted)."""
    d = row.details
    if row.status != "scored" and row.passed is False:
        lines = [f"{row.id} [{d.get('skill')}]: FAIL ({d.get('verdict_reason')}); no score or grade: {row.error}"]
    elif row.status != "scored":
        lines = [f"{row.id}: UNSCORED ({row.error})"]
    else:
        lines = [f"{row.id} [{d.get('skill')}]: {d.get('verdict')}  grade {d.get('grade')}  "
                 f"{d.get('total_score')}/{d.get('max_score')} ({(d.get('score_pct') or 0) * 100:.0f}%)  "
                 f"criteria passed {d.get('criteria_passed')}/{d.get('criteria_total')}  "
                 f"critical failures {d.get('critical_failures')}"
                 + ("  [self-grading]" if "self_grading" in row.flags else "")
                 + ("  [ungrounded quotes]" if "ungrounded" in row.flags else "")]
    width = max((len(c.name or c.id) for c in row.criteria), default=0) + 2
    mismatches = d.get("pass_score_mismatch") or {}
    for c in row.criteria:
        mark = "*" if c.critical else " "
        score = f"{int(c.raw_score)}/2" if c.raw_score is not None else c.status
        ok = "PASS" if c.passed else ("FAIL" if c.passed is False else "-")
        note = "" if c.grounded is not False else " (quote not found)"
        if mismatches.get(c.id):
            note += f" (judge said {mismatches[c.id]})"
        lines.append(f"  {mark} {(c.name or c.id).ljust(width)} {score:>9}  {ok:<4}  "
                     f"{(c.rationale or c.error or '')[:90]}{note}")
    lines.append("  (* = critical)")
    return "\n".join(lines)


def gold_run_notes(rows: list[ResultRow], *, skipped: int, out_dir: Path, totals: Totals,
                   judge_pass_only: bool) -> list[str]:
    """The lines a gold run ends with: the counts and judge calls, then what needs the reader's attention (FAILs
    with unscored criteria, ungraded cases, unfound quotes, the judge's pass flag contradicting its score)."""
    n_fail = sum(r.passed is False for r in rows)
    n_bad = sum(r.status != "scored" and r.passed is None for r in rows)
    n_partial = sum(r.status != "scored" and r.passed is False for r in rows)
    from ..runner._session import totals_line

    counts = f"{sum(r.passed is True for r in rows)} PASS, {n_fail} FAIL, {n_bad} unscored/error, {skipped} skipped"
    lines = [totals_line(totals, out_dir, counts=counts, timed=False)]
    if n_partial:
        lines.append(f"{n_partial} FAIL case(s) have unscored criteria: FAIL is settled by the graded ones, but they "
                     "get no score or grade")
    if n_bad:
        lines.append(f"{n_bad} case(s) could not be graded: that is not a pass")
    note = describe_ungrounded(rows)
    if note:
        lines.append(f"{note} (quotes not found in either document)")
    n_mis = sum("pass_score_mismatch" in r.flags for r in rows)
    if n_mis:
        lines.append(f"note: in {n_mis} case(s) the judge's pass flag contradicts its score (flag "
                     "'pass_score_mismatch'); a score of 0 fails the criterion"
                     + (" (ignored: --judge-pass-only)" if judge_pass_only else
                        " (--judge-pass-only lets pass decide, as the original)"))
    return lines
