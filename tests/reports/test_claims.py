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


def _big_claims_row(n_quotes: int, chunk_chars: int) -> tuple[dict[str, Any], Case]:
    """One claim-level row citing ``n_quotes`` quotes from one chunk of about ``chunk_chars`` characters: a third
    found as written, a third near matches (a typo), a third not found."""
    import random

    rng = random.Random(9)
    words = ("refunds are issued within thirty days of purchase unless the item was damaged by the customer "
             "“gift cards” are never refunded — orders ship in 2 days").split()
    chunk = " ".join(rng.choice(words) for _ in range(chunk_chars // 6))[:chunk_chars]
    supports = []
    for i in range(n_quotes):
        at = rng.randrange(0, len(chunk) - 80)
        quote = chunk[at:at + 60].split(" ", 1)[1].rsplit(" ", 1)[0]
        if i % 3 == 1:
            quote = quote[:20] + "x" + quote[21:]  # a typo: a near match
        elif i % 3 == 2:
            quote = f"invented sentence number {i} that the chunk never holds"
        supports.append({"passage": "ctx1", "quote": quote, "found": i % 3 != 2})
    details = {"metric": "faithfulness", "claims": [{"id": "a1", "of": "answer", "text": "t", "checks": {
        "contexts": {"supported": True, "by": ["ctx1"], "supports": supports}}}]}
    return details, Case("c", {"id": "c", "contexts": [chunk]})


def test_the_claims_table_normalises_each_chunk_once_and_never_searches_it_whole_per_quote(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """1,000 quotes over a 1.9 MB chunk kept ``referee report`` busy ~11 minutes: the chunk was normalised again
    for every quote, and each quote not found as written was searched for over the whole chunk. Counted here,
    not timed: one normalisation per chunk, and every near-match search in a window a few quotes long."""
    from referee.evaluators import _evidence

    normalised: list[int] = []
    searched: list[int] = []
    real_norm, real_fuzzy = _evidence.normalise_with_map, _evidence.fuzz.partial_ratio_alignment

    def counting_norm(text: str) -> Any:
        normalised.append(len(text))
        return real_norm(text)

    def counting_fuzzy(a: str, b: str, **kw: Any) -> Any:
        searched.append(len(b))
        return real_fuzzy(a, b, **kw)

    monkeypatch.setattr(_evidence, "normalise_with_map", counting_norm)
    monkeypatch.setattr(_evidence.fuzz, "partial_ratio_alignment", counting_fuzzy)
    details, case = _big_claims_row(1000, 1_900_000)
    t = claims_table(details, case)
    assert t is not None
    supports = t["rows"][0]["supports"]
    big = [n for n in normalised if n > 100_000]
    assert big == [len(case.contexts[0].text)]  # the chunk, once (quotes are normalised on their own)
    assert searched and max(searched) < 1000  # windows around an anchor, never the 1.9 MB chunk
    marked = [s for s in supports if any(g["mark"] for g in s["segments"])]
    exact = [s for s in supports[0::3]]
    assert all(any(g["mark"] for g in s["segments"]) for s in exact)  # every quote found as written is marked
    assert len(marked) > 600  # and most near matches are found where they sit
    assert not any(any(g["mark"] for g in s["segments"]) for s in supports[2::3])  # never a quote not found
    for s in supports:  # each row carries a window of the chunk, not the chunk
        assert sum(len(g["text"]) for g in s["segments"]) < 3 * MAX_TEXT


def test_a_near_match_is_marked_where_it_sits_as_the_whole_text_search_would() -> None:
    """The anchored search marks what the checker's near-match search over the whole text finds."""
    from referee.evaluators._evidence import Locator, _find, normalise

    details, case = _big_claims_row(60, 20_000)
    chunk = case.contexts[0].text
    loc = Locator(chunk)
    for s in details["claims"][0]["checks"]["contexts"]["supports"][1::3]:
        norm = normalise(s["quote"])
        whole = _find(norm, loc.norm, 0, len(loc.norm))
        spans = loc.spans(s["quote"])
        assert (whole is not None) == bool(spans), s["quote"]
        if spans:
            assert normalise(chunk[spans[0][0]:spans[0][1]]) in loc.norm
