"""The claims table of a claim-level RAG row: each claim's verdict, quotes, chunk and found or not, the chunk's text
split around a found quote (never around one that was not found), and the HTML report showing it with the chunk's
hostile markup escaped."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import markupsafe
import pytest

from referee.cases._case import Case
from referee.reports import render_html
from referee.reports._claims import MAX_TEXT, claims_table
from referee.results import read_results
from tests.support.claims_run import BAD_QUOTE, CTX2, FOUND_QUOTE, XSS, faithfulness_run


def test_a_long_chunk_is_cut_around_the_quote_and_rows_without_claims_have_none() -> None:

    text = "x" * MAX_TEXT + " the quoted words here " + "y" * MAX_TEXT
    details = {"metric": "faithfulness", "claims": [{"id": "a1", "of": "answer", "text": "quoted words", "checks": {
        "contexts": {"supported": True, "by": ["ctx1"], "supports": [
            {"passage": "ctx1", "quote": "the quoted words here", "found": True}]}}}, {"id": "a2", "text": "t"}]}
    t = claims_table(details, Case("c", {"id": "c", "contexts": [text]}))
    assert t is not None
    segs = t["rows"][0]["supports"][0]["segments"]
    assert [x["text"] for x in segs if x["mark"]] == ["the quoted words here"]
    assert segs[0]["text"] == "..." and segs[-1]["text"] == "..."
    assert sum(len(x["text"]) for x in segs) < len(text) // 2
    assert t["rows"][1]["verdict"] == "not checked"  # a claim with no check is never shown as supported
    assert claims_table({"summary": "no claims here"}, None) is None
    # A combined row: each metric's claims, answer relevancy's verdict on the question; no case, no chunk text.
    both = claims_table({"checks": {"faithfulness": details, "answer_relevancy": {"claims": [
        {"id": "a1", "of": "answer", "text": "quoted words", "relevant": False}]}}}, None)
    assert both is not None and not both["has_case"]
    assert [(r["metric"], r["verdict"]) for r in both["rows"]] == [
        ("faithfulness", "supported"), ("faithfulness", "not checked"), ("answer_relevancy", "not relevant")]
    assert both["rows"][0]["supports"][0]["segments"] is None


def test_the_html_report_marks_the_quote_in_its_chunk(fake_server: Any, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from referee.cases import load_cases

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    out, cases, _ = faithfulness_run(fake_server, tmp_path)
    page = render_html(read_results(out).rows, cases=list(load_cases(str(cases))))
    table = page[page.index('<table class="claims">'):]
    table = table[:table.index("</table>")]
    assert f"<mark>{FOUND_QUOTE}</mark>" in table
    assert table.count("<mark>") == 2  # a1's and a2's quotes; a3's quote was not found and is not marked
    assert "not found" in table and str(markupsafe.escape(BAD_QUOTE)) in table
    assert f'<pre class="judged">{markupsafe.escape(CTX2)}</pre>' in table  # the whole chunk, escaped, unmarked
    for x in XSS:
        assert x not in page  # the chunk's, the claim's and the quote's markup stay text
    assert len(re.findall(r"<tr><td>faithfulness</td>", table)) == 3


def test_a_hundred_chunks_of_ten_kb_and_many_quotes_stay_bounded() -> None:
    from referee.cases._case import Case
    from referee.reports._claims import MAX_SUPPORTS, WINDOW

    chunks = [{"id": f"k{i}", "text": ("w" * 5000) + f" fact number {i} " + ("z" * 5000)} for i in range(100)]
    claims = [{"id": f"a{j}", "of": "answer", "text": f"fact {j}", "checks": {"contexts": {
        "supported": True, "by": [], "supports": [{"passage": f"k{i}", "quote": f"fact number {i}", "found": True}
                                                  for i in range(12)]}}} for j in range(100)]
    t = claims_table({"metric": "faithfulness", "claims": claims}, Case("c", {"id": "c", "contexts": chunks}))
    assert t is not None and t["total"] == 100 and t["quotes"] == 1200
    shown = [s for r in t["rows"] for s in r["supports"]]
    assert len(shown) == MAX_SUPPORTS
    assert all(sum(len(g["text"]) for g in s["segments"]) <= 2 * WINDOW + 40 for s in shown)
    assert all([g["text"] for g in s["segments"] if g["mark"]] == [s["quote"]] for s in shown)
