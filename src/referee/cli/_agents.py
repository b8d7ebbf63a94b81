"""Helpers shared by the agent commands (trajectory, conversation, redteam)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..cases import Case
from ..results._manifest import RunManifest
from ..results._schema import ResultRow
from . import invoked_argv
from ._common import echo_err


def unique_cases(path: str) -> tuple[list[Case], int]:
    """Cases of ``path``; a duplicate id is reported and skipped (the first kept), as the seed does."""
    from .._grade import unique_cases as unique

    _, cases, skipped = unique(path, on_invalid=lambda problem: echo_err(f"invalid: {problem}"))
    return cases, skipped


def ensure_parent(out: str) -> Path:
    p = Path(out)
    p.parent.mkdir(parents=True, exist_ok=True)
    return p


def new_manifest(kind: str, cases_path: str, cases: Sequence[Case], **kwargs: Any) -> RunManifest:
    return RunManifest.for_cases(kind, cases_path, [c.id for c in cases], command=invoked_argv(), **kwargs)


def summarise(rows: Sequence[ResultRow], out: str | Path, *, threshold: float = 0.7, by_category: bool = False,
              limit: int = 10) -> None:
    """Counts, the failing cases with their reason (never an aggregate without examples), per category."""
    scored = [r for r in rows if r.status == "scored"]
    passed = [r for r in scored if (r.passed if r.passed is not None else (r.score or 0.0) >= threshold)]
    passed_ids = {id(r) for r in passed}  # identity: comparing pydantic rows field by field is quadratic
    bad = [r for r in rows if id(r) not in passed_ids]
    for r in sorted(bad, key=lambda r: (r.status != "error", r.score if r.score is not None else -1.0))[:limit]:
        what = f"{r.score:.2f}" if r.score is not None else r.status
        turn = f" turn {r.turn}" if r.turn is not None else ""
        echo_err(f"  {r.id}{turn} [{what}]: {r.rationale or r.error or ''}")
    if len(bad) > limit:
        echo_err(f"  ... and {len(bad) - limit} more (see {out})")
    if by_category and rows:
        from ..aggregate import ScoreOptions, summarize

        # Per attack type through the one aggregator (the rows' own verdict, else score >= threshold).
        summary = summarize(list(rows), ScoreOptions(threshold=threshold, pass_rule="evaluator", n_boot=200))
        for g in summary.categories:
            n_pass = round((g.pass_rate.estimate or 0.0) * g.cases)
            rate = f"{g.pass_rate.estimate:.0%}" if g.pass_rate.estimate is not None else "n/a"
            echo_err(f"  {g.name:<20} {g.rows:>3} cases  pass {n_pass}/{g.cases} ({rate})"
                     f"  unscored {g.unscored}  error {g.errors}")
    echo_err(f"{len(passed)} passed, {len(scored) - len(passed)} failed, "
             f"{sum(r.status == 'unscored' for r in rows)} unscored, {sum(r.status == 'error' for r in rows)} error "
             f"-> {out}")
