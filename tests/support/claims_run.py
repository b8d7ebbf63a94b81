"""A real faithfulness run for the claims tables (viewer and HTML report): the scripted claims judge over the real
HTTP client, one case whose second chunk holds hostile markup, one quote found in its chunk and one that is not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import referee
from tests.support.claims import ClaimsJudge, judge_for

XSS = ['<script>window.__xss=1</script>', '<img src=x onerror="window.__xss=2">', '"><svg onload=window.__xss=3>']
ANSWER = "The tower is in Paris. It was finished in 1889. It is made of gold."
CTX1 = "The Eiffel Tower is a wrought-iron tower in Paris. It was finished in 1889."
CTX2 = "Bananas " + XSS[0] + " are yellow " + XSS[1] + " fruit, and the tower is " + XSS[2] + " tall."
CLAIMS = ["The Eiffel Tower is in Paris.", "The Eiffel Tower was finished in 1889.",
          "The Eiffel Tower is made of gold " + XSS[1]]
FOUND_QUOTE = "a wrought-iron tower in Paris"
BAD_QUOTE = "the tower is pure gold " + XSS[0]


def faithfulness_run(server: Any, tmp: Path) -> tuple[Path, Path, referee.EvalResult]:
    """Run faithfulness on the case through ``server`` (the fake LLM server); the results and cases files, and the
    result. Needs ``OPENAI_API_KEY`` set (any value: the server is local)."""
    server.responder = ClaimsJudge(
        claims={ANSWER: CLAIMS},
        supports={CLAIMS[0]: [("wrought-iron", FOUND_QUOTE)], CLAIMS[1]: [("wrought-iron", "It was finished in 1889")],
                  CLAIMS[2]: [("Bananas", BAD_QUOTE)]})
    case = {"id": "rag-1", "input": "Where is the tower?", "output": ANSWER,
            "contexts": [CTX1, {"id": "fruit", "text": CTX2, "source": "fruit.txt"}]}
    cases = tmp / "cases.jsonl"
    cases.write_text(json.dumps(case) + "\n", encoding="utf-8")
    out = tmp / "rag.jsonl"
    r = referee.evaluate(str(cases), [referee.judges.Faithfulness()], judge=judge_for(server), out=out,
                         progress=False)
    return out, cases, r
