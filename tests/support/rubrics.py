"""Builders shared by the rubric tests."""

from __future__ import annotations

import json
from typing import Any

OUTPUT = ("Sorry about that! Refunds are not possible for invoices older than 30 days. "
          "Please contact your bank.")
QUOTES = {
    "accuracy": "Refunds are not possible for invoices older than 30 days",
    "groundedness": "Please contact your bank",
    "completeness": "Sorry about that!",
    "coherence": "Refunds are not possible",
    "helpfulness": "contact your bank",
}


def rubric_reply(scores: dict[str, Any] | None = None, *, quotes: dict[str, str] | None = None,
                 drop: str | None = None, summary: str = "Mostly fine.",
                 actions: list[str] | None = None) -> str:
    scores = {"accuracy": 4, "groundedness": 3, "completeness": 4, "coherence": 5, "helpfulness": 2,
              **(scores or {})}
    q = {**QUOTES, **(quotes or {})}
    crit = {k: {"score": v, "evidence": [q[k]], "rationale": f"{k} rationale"} for k, v in scores.items()
            if k != drop}
    return json.dumps({"criteria": crit, "summary": summary, "required_actions": actions or []})
