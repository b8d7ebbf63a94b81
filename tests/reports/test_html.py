"""The HTML report: self-contained, escaped, highlighted evidence, counts, charts, any results file."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from referee.cli import cli
from referee.reports._html import highlight_segments, render_html
from referee.results import CriterionScore, JudgeInfo, ResultRow

EVIL = 'Refunds take 5 days. <script>document.title="pwned"</script> <img src=x onerror="document.title=\'x\'">'


def rows() -> list[ResultRow]:
    judge = JudgeInfo(provider="openai", model="m1")
    crit = [
        CriterionScore(id="accuracy", name="Accuracy", score=0.75, raw_score=4, scale="1-5", weight=0.3,
                       rationale="Right <b>claim</b>", evidence=["Refunds take 5 days"], grounded=True),
        CriterionScore(id="helpfulness", name="Helpfulness", score=0.25, raw_score=2, scale="1-5", weight=0.1,
                       rationale="thin", evidence=["an invented quote"], grounded=False),
    ]
    return [
        ResultRow(id="evil", score=0.6, passed=True, evaluator="rubric", criteria=crit, judge=judge,
                  flags=["ungrounded", "self_grading"],
                  details={"text": EVIL, "verdict": "GOOD", "composite": 3.4, "summary": "<i>ok</i>",
                           "self_grading": "judge m1 is the system under test",
                           "evidence_checks": {"helpfulness": [{"quote": "an invented quote", "found": False}]}}),
        ResultRow(id="lost", status="unscored", evaluator="rubric", judge=judge, error="invalid judge reply: x"),
        ResultRow(id="seedrow", score=0.2, category="billing", rationale="wrong refund window"),
    ]


def test_case_text_is_escaped_and_evidence_highlighted() -> None:
    html = render_html(rows(), title="t <script>")
    assert "<script>" not in html and "<img src=x" not in html and "onerror=\"document" not in html
    assert "&lt;script&gt;document.title=&#34;pwned&#34;&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=" in html and "Right &lt;b&gt;claim&lt;/b&gt;" in html
    assert '<mark title="accuracy">Refunds take 5 days</mark>' in html
    assert "[not found in the judged text]" in html
    # Offline and self-contained: nothing is fetched.
    assert not re.search(r'(src|href)="(https?:)?//', html) and "<link" not in html


def test_summary_counts_caveats_and_charts() -> None:
    html = render_html(rows())
    assert re.search(r'id="n-unscored">1<', html) and re.search(r'id="n-ungrounded">1<', html)
    assert "Self-grading caveat" in html and "1 of 3 case(s)" in html
    assert html.count("<svg") == 6  # overall + one per criterion + pass rate per category, cost, latency
    row = re.search(r"<tr><td>Helpfulness</td>.*?</tr>", html)
    assert row is not None and "<td>1</td>" in row.group(0)  # one ungrounded helpfulness score


def test_highlight_segments_merge_overlaps_and_keep_raw_text() -> None:
    segs = highlight_segments("abc <b>def</b> ghi", [("x", "<b>def</b>"), ("y", "def</b> ghi")])
    assert "".join(s.text for s in segs) == "abc <b>def</b> ghi"
    marked = [s for s in segs if s.labels]
    assert len(marked) == 1 and marked[0].labels == ["x", "y"] and marked[0].text == "<b>def</b> ghi"


def test_report_command_renders_any_results_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    res = tmp_path / "r.jsonl"
    res.write_text(json.dumps({"id": "c1", "score": 0.4, "rationale": "meh"}) + "\n"
                   + json.dumps({"id": "c2", "score": True}) + "\n")
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "c1", "output": "<script>x()</script> hello"}) + "\n")
    out = tmp_path / "r.html"
    assert cli(["report", str(res), "--html", str(out), "--cases", str(cases)]) == 0
    html = out.read_text()
    assert "c1" in html and "c2" in html and "&lt;script&gt;x()&lt;/script&gt; hello" in html
    assert cli(["report", str(tmp_path / "none.jsonl"), "--html", str(out)]) == 2


def test_report_includes_the_pairwise_leaderboard_escaped(tmp_path: Path) -> None:
    res = tmp_path / "pw.jsonl"
    winners = ["a", "a", "b", "tie"]
    res.write_text("".join(json.dumps({
        "schema_version": 1, "id": f"p{i}", "score": {"a": 1.0, "b": 0.0, "tie": 0.5}[w], "evaluator": "pairwise",
        "winner": w, "details": {"system_a": "<b>prompt-v2</b>", "system_b": "prompt-v1"}}) + "\n"
        for i, w in enumerate(winners)))
    out = tmp_path / "r.html"
    assert cli(["report", str(res), "--html", str(out)]) == 0
    html = out.read_text()
    assert 'class="referee-leaderboard"' in html and "Pairwise leaderboard" in html
    assert "&lt;b&gt;prompt-v2&lt;/b&gt;" in html and "<b>prompt-v2</b>" not in html
    head = re.search(r"<h3>Head to head</h3>.*?</table>", html, re.S)
    assert head is not None and re.search(r"<td>2</td><td>1</td><td>1</td>", head.group(0))  # 2 wins, 1 loss, 1 tie
    # Rows without system names are not ranked.
    plain = tmp_path / "plain.jsonl"
    plain.write_text(json.dumps({"schema_version": 1, "id": "p", "score": 1.0, "evaluator": "pairwise",
                                 "winner": "a"}) + "\n")
    assert cli(["report", str(plain), "--html", str(out)]) == 0
    assert "referee-leaderboard" not in out.read_text()


def test_a_quote_that_failed_verification_is_not_highlighted() -> None:
    text = "Refunds are not possible for invoices older than 30 days."
    row = ResultRow(id="x", score=0.5, evaluator="rubric", details={
        "text": text, "evidence_checks": {
            "accuracy": [{"quote": "Refunds are possible for invoices older than 30 days", "found": False}],
            "tone": [{"quote": "older than 30 days", "found": True}]}},
        criteria=[CriterionScore(id="accuracy", score=0.5, evidence=[
                      "Refunds are possible for invoices older than 30 days"], grounded=False),
                  CriterionScore(id="tone", score=0.5, evidence=["older than 30 days"], grounded=True)])
    html = render_html([row])
    assert '<mark title="tone">older than 30 days</mark>' in html
    assert '<mark title="accuracy' not in html and "[not found in the judged text]" in html


def test_the_html_figures_are_referee_scores(tmp_path: Path) -> None:
    # Repeats (a case's score is the mean of its repeats), unscored and error rows: the report's cards and chart
    # come from the aggregator, so they are the figures `referee score --json-out` writes.
    from referee.aggregate import score_distribution

    rows = [ResultRow(id="a", repeat=0, status="scored", score=1.0, passed=True),
            ResultRow(id="a", repeat=1, status="scored", score=0.0, passed=False),
            ResultRow(id="b", repeat=0, status="scored", score=0.9, passed=True),
            ResultRow(id="b", repeat=1, status="unscored", error="reply was not JSON"),
            ResultRow(id="c", repeat=0, status="scored", score=0.2, passed=False),
            ResultRow(id="c", repeat=1, status="scored", score=0.3, passed=False),
            ResultRow(id="d", repeat=0, status="error", error="timeout"),
            ResultRow(id="d", repeat=1, status="unscored", error="no verdict")]
    res = tmp_path / "r.jsonl"
    res.write_text("".join(r.model_dump_json(exclude_none=True) + "\n" for r in rows), encoding="utf-8")
    assert cli(["score", str(res), "--json-out", str(tmp_path / "s.json")]) == 0
    s = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))["overall"]
    assert cli(["report", str(res), "--html", str(tmp_path / "r.html")]) == 0
    cards = dict((label, value) for value, label in re.findall(
        r'<div class="card"><b[^>]*>([^<]*)</b><span>([^<]*)</span>', (tmp_path / "r.html").read_text()))
    assert (s["rows"], s["cases"], s["unscored"], s["errors"]) == (8, 3, 2, 1)
    assert cards["cases"] == "8" and cards["scored"] == "3" and cards["unscored"] == "2" and cards["error"] == "1"
    assert cards["mean score (0-1)"] == f"{s['mean']['estimate']:.2f}" == "0.55"  # (0.5 + 0.9 + 0.25) / 3
    assert cards["median score"] == "0.50"  # of the cases' scores 0.25, 0.5, 0.9 (the rows' median is 0.3)
    median, hist = score_distribution(res)
    assert median == 0.5 and hist == [0, 0, 1, 0, 0, 1, 0, 0, 0, 1] and sum(hist) == s["cases"]


def test_the_report_has_the_viewers_charts_escaped() -> None:
    evil_cat = [ResultRow(id=f"c{i}", score=0.9 if i % 2 else 0.1, category='<script>x</script>' if i < 2 else "ok",
                          cost_usd=0.001 * i, latency_ms=100.0 * i) for i in range(6)]
    html = render_html(evil_cat)
    charts = html.split('id="report-charts"', 1)[1].split("</div>\n</div>", 1)[0]
    assert "<script>x" not in html and "&lt;script&gt;x&lt;/script&gt;" in charts
    assert charts.count('class="interval"') == 2  # two categories, each with its interval
    cost = charts.split('id="chart-cost"', 1)[1].split('id="chart-latency"', 1)[0]
    assert sum(int(n) for n in re.findall(r'data-count="(\d+)"', cost)) == 6
