"""The viewer's claims table: on a real faithfulness run (a scripted judge over the real HTTP client), each claim
with its verdict, quote, chunk and found or not, the found quote marked inside its chunk's text, and hostile
markup in a chunk, a claim or a quote staying text."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import referee
from referee.view import close_app
from referee.reports._claims import MAX_TEXT, claims_table
from tests.support.claims import ClaimsJudge, judge_for
from tests.view.conftest import XSS, Served, serve
from tests.view.test_api import call

ANSWER = "The tower is in Paris. It was finished in 1889. It is made of gold."
CTX1 = "The Eiffel Tower is a wrought-iron tower in Paris. It was finished in 1889."
CTX2 = "Bananas " + XSS[0] + " are yellow " + XSS[1] + " fruit, and the tower is " + XSS[2] + " tall."
CLAIMS = ["The Eiffel Tower is in Paris.", "The Eiffel Tower was finished in 1889.",
          "The Eiffel Tower is made of gold " + XSS[1]]
BAD_QUOTE = "the tower is pure gold " + XSS[0]


@pytest.fixture
def claims_run(fake_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Served, str]]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    fake_server.responder = ClaimsJudge(
        claims={ANSWER: CLAIMS},
        supports={CLAIMS[0]: [("wrought-iron", "a wrought-iron tower in Paris")],
                  CLAIMS[1]: [("wrought-iron", "It was finished in 1889")],
                  CLAIMS[2]: [("Bananas", BAD_QUOTE)]})
    case = {"id": "rag-1", "input": "Where is the tower?", "output": ANSWER,
            "contexts": [CTX1, {"id": "fruit", "text": CTX2, "source": "fruit.txt"}]}
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(case) + "\n", encoding="utf-8")
    out = tmp_path / "rag.jsonl"
    r = referee.evaluate(str(cases), [referee.judges.Faithfulness()], judge=judge_for(fake_server), out=out,
                         progress=False)
    assert r.rows[0].score == pytest.approx(2 / 3)  # the run itself: a3's quote is not in its chunk
    s = serve([out], [cases])
    yield s, s.app.api_index()["runs"][0]["run"]
    s.server.shutdown()
    s.server.server_close()
    close_app(s.app)


def test_the_case_api_gives_each_claim_its_verdict_quote_chunk_and_highlight(claims_run: tuple[Served, str]) -> None:
    s, key = claims_run
    status, c, _ = call(s, "GET", f"/api/runs/{key}/cases/0")
    assert status == 200
    rows = c["claims"]["rows"]
    assert [(r["id"], r["verdict"]) for r in rows] == [("a1", "supported"), ("a2", "supported"), ("a3", "unsupported")]
    a1 = rows[0]["supports"][0]
    assert (a1["passage"], a1["rank"], a1["found"]) == ("ctx1", 1, True)
    marked = [x["text"] for x in a1["segments"] if x["mark"]]
    assert marked == ["a wrought-iron tower in Paris"]
    assert "".join(x["text"] for x in a1["segments"]) == CTX1  # the whole chunk, split around the quote
    a3 = rows[2]["supports"][0]
    assert (a3["passage"], a3["source"], a3["quote"], a3["found"]) == ("fruit", "fruit.txt", BAD_QUOTE, False)
    assert not any(x["mark"] for x in a3["segments"])  # a quote not found is never marked as evidence
    assert "".join(x["text"] for x in a3["segments"]) == CTX2


def test_a_long_chunk_is_cut_around_the_quote_and_rows_without_claims_have_none() -> None:
    from referee.cases._case import Case

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


def test_the_claims_script_is_served_and_included(claims_run: tuple[Served, str]) -> None:
    s, _ = claims_run
    status, body, resp = call(s, "GET", "/static/claims.js")
    assert status == 200 and resp.getheader("Content-Type", "").startswith("text/javascript")
    text = body.decode() if isinstance(body, bytes) else str(body)
    assert "innerHTML" not in text and "fetch(\"http" not in text
    page = call(s, "GET", "/")[1]
    assert '<script src="/static/claims.js" defer></script>' in (page.decode() if isinstance(page, bytes) else page)


@pytest.mark.chromium
def test_the_claims_table_renders_with_the_quote_marked_and_hostile_text_stays_text(
        claims_run: tuple[Served, str]) -> None:
    from tests.support import browser

    why = browser.missing()
    if why is not None:
        pytest.skip(f"browser test skipped: {why}")
    s, key = claims_run
    d = browser.start()
    try:
        from selenium.webdriver.support.ui import WebDriverWait

        d.get(s.url + f"#/run/{key}/case/0")
        WebDriverWait(d, 60).until(lambda _: d.execute_script(
            "return document.querySelectorAll('#claims-view .claims-table tbody tr').length") == 3)
        got = d.execute_script("""
            const rows = [...document.querySelectorAll('#claims-view .claims-table tbody tr')];
            return rows.map((r) => ({cells: [...r.children].map((td) => td.textContent),
                                     marks: [...r.querySelectorAll('mark')].map((m) => m.textContent),
                                     elements: r.querySelectorAll('script, img, svg, iframe').length}));""")
        verdicts = [r["cells"][2] for r in got]
        assert verdicts == ["supported", "supported", "unsupported"]
        assert got[0]["marks"] == ["a wrought-iron tower in Paris"]
        assert got[0]["cells"][3] == "\u201ca wrought-iron tower in Paris\u201d" and got[0]["cells"][5] == "found"
        assert got[0]["cells"][6] == CTX1
        # The quote that is not in its chunk: marked not found, nothing highlighted, the chunk's markup as text.
        assert got[2]["cells"][5].startswith("not found") and got[2]["marks"] == []
        assert got[2]["cells"][4] == "fruit (rank 2) fruit.txt"
        assert got[2]["cells"][6] == CTX2 and BAD_QUOTE in got[2]["cells"][3]
        assert CLAIMS[2] in got[2]["cells"][1]
        assert all(r["elements"] == 0 for r in got)
        assert d.execute_script("return window.__xss") is None
    finally:
        d.quit()
