"""The viewer's panel page data (``GET /api/runs/<run>/panel``): the cases where a judge panel split, with each
judge's vote and rationale side by side, and the cases escalated to a stronger judge or left for a human.
Shown by ``static/panel.js`` under the run's page; labels given on those cases feed the next
``referee calibrate``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._store import Run, clean

MAX_PANEL_CASES = 500
"""Cases listed per kind (split, escalated): the rest are counted, not sent."""
_MARKS = ("panel_split", "escalated", "needs_human")


def _records(d: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    det = d.get("details")
    if not isinstance(det, Mapping):
        return []
    if isinstance(det.get("panel"), Mapping):
        return [(str(d.get("evaluator") or ""), det["panel"])]
    checks = det.get("checks")
    if not isinstance(checks, Mapping):
        return []
    return [(str(k), v["panel"]) for k, v in checks.items() if isinstance(v, Mapping)
            and isinstance(v.get("panel"), Mapping)]


def _vote(m: Mapping[str, Any]) -> str | None:
    if m.get("status") != "scored":
        return None
    if m.get("winner") is not None:
        return str(m["winner"])
    p = m.get("passed")
    return None if p is None else ("pass" if p else "fail")


def _member(m: Any) -> dict[str, Any]:
    if not isinstance(m, Mapping):
        return {}
    return {"judge": str(m.get("judge", "")), "status": m.get("status"), "vote": _vote(m), "score": m.get("score"),
            "reason": m.get("reason"), "error": m.get("error"), "cost_usd": m.get("cost_usd"),
            "latency_ms": m.get("latency_ms")}


def panel_cases(run: Run) -> dict[str, Any]:
    """The split and escalated cases of ``run`` (module text); empty lists when no panel judged it."""
    idx = run.index()
    t = run.table
    split: list[dict[str, Any]] = []
    escalated: list[dict[str, Any]] = []
    counts = {"split": 0, "escalated": 0}
    judges: list[str] = []
    for i, fl in enumerate(idx.flags):
        if not any(f in fl for f in _MARKS):
            continue
        d = run.read_row(i)
        for label, rec in _records(d):
            members = [_member(m) for m in rec.get("members") or []]
            judges = judges or [m["judge"] for m in members]
            esc = rec.get("escalated")
            entry = {"row": i, "id": t.ids[i], "evaluator": label, "status": d.get("status"),
                     "score": d.get("score"), "passed": d.get("passed"), "winner": d.get("winner"),
                     "rule": rec.get("rule"), "agreement": rec.get("agreement"), "tied": rec.get("tied"),
                     "members": members, "escalated": _member(esc) if isinstance(esc, Mapping) else None,
                     "needs_human": bool(rec.get("needs_human"))}
            votes = {m["vote"] for m in members if m.get("vote") is not None}
            if len(votes) > 1:
                counts["split"] += 1
                if len(split) < MAX_PANEL_CASES:
                    split.append(entry)
            if entry["escalated"] is not None or entry["needs_human"]:
                counts["escalated"] += 1
                if len(escalated) < MAX_PANEL_CASES:
                    escalated.append(entry)
    out = {"run": run.key, "judges": judges, "split": split, "escalated": escalated, "counts": counts}
    return dict(clean(out))
