"""Several reviewers and the judge's alignment, seen from the labelling page.

``reviewers_agreement``: how far the reviewers agree with each other (Krippendorff's alpha per criterion, the
ceiling a judge is measured against) beside the judge's agreement with them (the same alpha, the judge against the
reviewers' consensus and against each reviewer). ``align_page``: ``referee align``'s score map run on the labels
given so far (``referee.alignment.align``), its held-out figures, the cases whose verdict it changed and the
prompt diff. ``open_ids``: the cases a reviewer still has to label when each case wants ``k`` reviewers.

Nothing here computes agreement itself: the alpha is ``stats``' Krippendorff's alpha (the ``krippendorff``
package), the judge's values are ``calibrate.judge_labels`` (what ``referee calibrate`` reads), the consensus is
``alignment.read_human_labels``', and the alignment's figures are ``referee align``'s own.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import RefereeError
from ._labels import _reviewer_of

if TYPE_CHECKING:
    from ._labels import LabelStore
    from ._store import Run

OVERALL = "overall"
"""The criterion of a label on the case as a whole (every label the page gives)."""
MAX_ALPHA_BOOT = 500
"""Resamples for the reviewers' alpha: a figure beside the others, not a gate."""


def reviewers_of(store: LabelStore) -> dict[str, set[str]]:
    """case id -> the reviewers who labelled it."""
    out: dict[str, set[str]] = {}
    for o in store.lines:
        out.setdefault(str(o["id"]), set()).add(_reviewer_of(o))
    return out


def open_ids(store: LabelStore, reviewer: str, k: int) -> set[str]:
    """The case ids a queue leaves out for ``reviewer``: those they labelled and those ``k`` reviewers have."""
    return {cid for cid, who in reviewers_of(store).items() if reviewer in who or len(who) >= k}


def _by_criterion(store: LabelStore) -> dict[str, dict[str, dict[str, float]]]:
    """criterion -> reviewer -> case id -> score (a reviewer's later line for a case wins, as on disk)."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for o in store.lines:
        v = o.get("score")
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            continue  # a line another tool wrote without a usable score (alignment skips it with a warning)
        crit = o.get("criterion")
        crit = str(crit)[:200] if crit not in (None, "") else OVERALL
        out.setdefault(crit, {}).setdefault(_reviewer_of(o), {})[str(o["id"])] = float(v)
    return out


def _level(values: list[float]) -> str:
    return "nominal" if set(values) <= {0.0, 1.0} else "interval"


def reviewers_agreement(run: Run, store: LabelStore, *, threshold: float, pass_rule: str,
                        n_boot: int) -> dict[str, Any]:
    """The reviewers' agreement with each other per criterion, and the judge's with them (see the module)."""
    from ..alignment import read_human_labels
    from ..calibrate import judge_labels
    from ..stats._panel import krippendorff_alpha

    if not store.lines:
        return {"run": run.key, "criteria": [], "reviewers": [], "message": "no labels yet"}
    hl = read_human_labels(store.path)
    # Labels of the case as a whole are read as alignment reads them (the viewer's, calibrate's, any tool's);
    # lines another tool wrote per criterion are grouped by it.
    by_crit = any(o.get("criterion") not in (None, "") for o in store.lines)
    crits = _by_criterion(store) if by_crit else {OVERALL: hl.by_reviewer} if hl.by_reviewer else {}
    if not crits:
        return {"run": run.key, "criteria": [], "reviewers": [], "message": "no usable labels yet",
                "warnings": hl.warnings[:20]}
    boot = min(n_boot, MAX_ALPHA_BOOT)
    judged = judge_labels(run.path, threshold=threshold, pass_rule=pass_rule, table=run.table)
    out_crits = []
    for crit, by_rev in sorted(crits.items(), key=lambda kv: (kv[0] != OVERALL, kv[0])):
        reviewers = sorted(by_rev)
        cases = sorted({c for vals in by_rev.values() for c in vals})
        values = [v for vals in by_rev.values() for v in vals.values()]
        level = _level(values)
        both = sum(1 for c in cases if sum(c in by_rev[r] for r in reviewers) >= 2)
        entry: dict[str, Any] = {
            "criterion": crit, "level": level, "reviewers": reviewers, "cases": len(cases), "cases_shared": both,
            "reviewers_alpha": None, "judge_alpha": None, "judge_per_reviewer": [], "no_consensus": None}
        if len(reviewers) > 1:
            votes = [[by_rev[r].get(c) for c in cases] for r in reviewers]
            entry["reviewers_alpha"] = krippendorff_alpha(votes, level=level, n_boot=boot).to_dict()  # type: ignore[arg-type]
        if not by_crit:
            # The judge scores the case as a whole: its pass/fail verdict meets pass/fail labels, its score others.
            def judge_value(c: str, level: str = level) -> float | None:
                if level == "nominal":
                    p = judged.passed.get(c)
                    return None if p is None else float(p)
                return judged.values.get(c)

            entry["no_consensus"] = len(hl.no_consensus)
            shared = sorted(c for c in hl.values if judge_value(c) is not None)
            if shared:
                entry["judge_alpha"] = krippendorff_alpha(
                    [[judge_value(c) for c in shared], [hl.values[c] for c in shared]], level=level,  # type: ignore[arg-type]
                    n_boot=boot).to_dict()
            for r in reviewers:
                mine = sorted(c for c in by_rev[r] if judge_value(c) is not None)
                iv = krippendorff_alpha([[judge_value(c) for c in mine], [by_rev[r][c] for c in mine]],
                                        level=level, n_boot=boot) if mine else None  # type: ignore[arg-type]
                entry["judge_per_reviewer"].append({"reviewer": r, "cases": len(mine),
                                                    "alpha": None if iv is None else iv.to_dict()})
        out_crits.append(entry)
    all_reviewers = sorted({r for by_rev in crits.values() for r in by_rev})
    warnings = hl.warnings[:20]
    if by_crit:
        warnings.append("some labels name a criterion: referee align and referee calibrate read every line of the "
                        "file as a label of the case as a whole; keep per-criterion labels in a file of their own")
    return {"run": run.key, "reviewers": all_reviewers, "criteria": out_crits, "warnings": warnings}


def prompt_diff(al: Any) -> str:
    """The judge prompt's change as a unified diff: empty for the score map, which leaves the prompt as it is; a
    method that rewrites the prompt keeps its winning diff on ``Alignment.prompt.diff``."""
    fit = getattr(al, "prompt", None)
    diff = getattr(fit, "diff", None) if fit is not None else None
    return diff if isinstance(diff, str) else ""


class AlignPageError(RefereeError):
    """Labels the alignment cannot use (too few, one class only, none on the run's ids): a 400 with this message."""


def align_page(run: Run, store: LabelStore, *, threshold: float, n_boot: int) -> dict[str, Any]:
    """``referee align`` (the score map) on the labels given so far: what the align view shows."""
    from ..alignment import align, read_human_labels
    from ..errors import InputError, UserError

    if not store.lines or not Path(store.path).is_file():
        raise AlignPageError("no labels yet: label some cases (pass and fail both) and align again")
    try:
        hl = read_human_labels(store.path)
        if not hl.values:
            raise AlignPageError(f"no labelled case has a consensus ({len(hl.no_consensus)} case(s) where the "
                                 "reviewers split): label more cases")
        al = align(run.path, hl, threshold=threshold, n_boot=n_boot)
    except (UserError, InputError) as exc:
        raise AlignPageError(str(exc)) from None
    rows = {cid: i for i, cid in reversed(list(enumerate(run.table.ids)))}  # a case's first row
    out = al.to_dict()
    out["changed"] = [{**c, "row": rows.get(c["id"])} for c in al.changed]
    out["prompt_diff"] = prompt_diff(al)
    out["report"] = al.lines()
    out["reviewers"] = hl.reviewers
    out["no_consensus"] = len(hl.no_consensus)
    out["run"] = run.key
    out["command"] = f"referee align {run.path} {store.path} --threshold {threshold:g} -o judge.aligned.json"
    return out


__all__ = ["AlignPageError", "OVERALL", "align_page", "open_ids", "prompt_diff", "reviewers_agreement", "reviewers_of"]
