"""Runs to view: judged rows with criteria and evidence, a pairwise run, an agent case, and hostile text everywhere."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from referee.view import ViewApp, ViewServer, build_app, close_app

# Each would set window.__xss if it ever became markup (the browser test checks it stays unset).
XSS = [
    '<script>window.__xss=1</script>',
    '<img src=x onerror="window.__xss=2">',
    '"><svg onload=window.__xss=3>',
    "[click me](javascript:window.__xss=4)",
    "</textarea><iframe srcdoc='<script>parent.__xss=5</script>'>",
]
PAYLOAD = " ".join(XSS)


def _judged(i: int, score: float | None, *, category: str = "billing", **extra: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "schema_version": 1, "id": f"case-{i:02d}", "category": category, "evaluator": "judge",
        "judge": {"provider": "openai", "model": "gpt-4o-mini"}, "cost_usd": 0.0001 * (i + 1),
        "latency_ms": 100.0 + i, "rationale": f"rationale {i}: the answer cites the refund policy",
        "criteria": [{"id": "accuracy", "score": score if score is not None else None, "raw_score": None,
                      "scale": "1-5", "rationale": f"accuracy rationale {i}",
                      "evidence": ["Refunds take 5 days"], "grounded": True}],
    }
    if score is None:
        row.update(status="unscored", raw_reply="I refuse to grade this", criteria=[])
    else:
        row.update(status="scored", score=score)
    row.update(extra)
    return row


@dataclass
class Data:
    dir: Path
    results: Path
    cases: Path
    baseline: Path
    pairwise: Path
    pair_cases: Path


def make_data(tmp: Path, n: int = 12) -> Data:
    tmp.mkdir(parents=True, exist_ok=True)
    cases: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    base: list[dict[str, Any]] = []
    for i in range(n):
        cases.append({"id": f"case-{i:02d}", "input": f"Question {i}: how long do refunds take?",
                      "output": f"**Refunds take 5 days.** Answer number {i}.", "reference": "5 business days",
                      "category": "billing" if i % 2 else "login"})
        score = None if i == 3 else round(0.1 + 0.08 * i, 3)
        rows.append(_judged(i, score, category="billing" if i % 2 else "login"))
        base.append(_judged(i, None if i == 3 else (0.9 if i < 6 else 0.2), category="billing" if i % 2 else "login"))
    # An ungrounded quote, position bias is for pairwise; a self-grading row.
    rows[5]["criteria"][0].update(evidence=["a quote the answer never says"], grounded=False)
    rows[5]["flags"] = ["ungrounded"]
    rows[6]["details"] = {"self_grading": "the judge model is the system under test"}
    rows[6]["flags"] = ["self_grading"]
    # The hostile case: payloads in every text field of the row and of the case.
    hostile_id = "case-xss-" + XSS[1]
    cases.append({"id": hostile_id, "input": PAYLOAD, "output": "# Title\n\n" + PAYLOAD + "\n\n" + XSS[3],
                  "reference": PAYLOAD, "category": XSS[0],
                  "turns": [{"role": "user", "content": PAYLOAD}, {"role": "assistant", "content": PAYLOAD}],
                  "trajectory": [{"step": 1, "tool": "lookup" + XSS[1], "args": {"q": PAYLOAD}, "result": PAYLOAD},
                                 {"step": 2, "tool": "refund", "args": {}, "error": PAYLOAD}]})
    rows.append({"schema_version": 1, "id": hostile_id, "status": "scored", "score": 0.5, "category": XSS[0],
                 "evaluator": "judge" + XSS[2], "rationale": PAYLOAD, "raw_reply": PAYLOAD, "error": None,
                 "flags": ["ungrounded", XSS[1]], "metadata": {"note": PAYLOAD},
                 "details": {"summary": PAYLOAD},
                 "criteria": [{"id": "c" + XSS[0], "name": XSS[2], "score": 0.5, "rationale": PAYLOAD,
                               "evidence": [XSS[0], "never said " + XSS[1]], "grounded": False}]})
    base.append(_judged(n, 0.9, category=XSS[0]) | {"id": hostile_id})
    pairs = [{"id": f"pair-{i}", "input": f"Pick the better answer {i}", "output_a": f"Answer A{i}: " + PAYLOAD,
              "output_b": f"Answer B{i}", "system_a": "before", "system_b": "after"} for i in range(3)]
    prow = []
    for i in range(3):
        bias = i == 1
        prow.append({"schema_version": 1, "id": f"pair-{i}", "status": "scored", "evaluator": "pairwise",
                     "score": 0.5 if bias else 1.0, "winner": "tie" if bias else "a", "position_bias_detected": bias,
                     "rationale": "A is clearer " + PAYLOAD,
                     "details": {"orders": [
                         {"shown_first": "a", "status": "scored", "verdict": "response_1", "winner": "a",
                          "rationale": "first order " + PAYLOAD},
                         {"shown_first": "b", "status": "scored", "verdict": "response_1" if bias else "response_2",
                          "winner": "b" if bias else "a", "rationale": "second order"}]}})
    d = Data(dir=tmp, results=tmp / "results.jsonl", cases=tmp / "cases.jsonl", baseline=tmp / "baseline.jsonl",
             pairwise=tmp / "pairwise.jsonl", pair_cases=tmp / "pairs.jsonl")
    for path, items in ((d.results, rows), (d.cases, cases), (d.baseline, base), (d.pairwise, prow),
                        (d.pair_cases, pairs)):
        path.write_text("".join(json.dumps(x) + "\n" for x in items), encoding="utf-8")
    return d


@pytest.fixture
def data(tmp_path: Path) -> Data:
    return make_data(tmp_path / "runs")


@dataclass
class Served:
    app: ViewApp
    server: ViewServer
    url: str


def serve(results: list[Path], cases: list[Path], labels: Path | None = None) -> Served:
    app = build_app([str(p) for p in results], cases=[str(c) for c in cases],
                    labels=None if labels is None else str(labels))
    for r in app.runs.values():
        r.index()  # tests are deterministic: wait for the background index
    server = ViewServer(app, "127.0.0.1", 0)
    server.start_background()
    return Served(app, server, server.url)


@pytest.fixture
def served(data: Data) -> Iterator[Served]:
    s = serve([data.baseline, data.results, data.pairwise], [data.cases, data.pair_cases])
    yield s
    s.server.shutdown()
    s.server.server_close()
    close_app(s.app)


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    """One headless Chromium for a module's browser tests (``tests/support/browser.py``)."""
    from tests.support import browser

    d = browser.start()
    yield d
    d.quit()
