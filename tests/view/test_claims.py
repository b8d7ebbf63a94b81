"""The viewer's claims table: on a real faithfulness run (a scripted judge over the real HTTP client), each claim
with its verdict, quote, chunk and found or not, the found quote marked inside its chunk's text, and hostile
markup in a chunk, a claim or a quote staying text."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from referee.view import close_app
from tests.support.claims_run import BAD_QUOTE, CLAIMS, CTX1, CTX2, FOUND_QUOTE, faithfulness_run
from tests.view.conftest import Served, serve
from tests.view.test_api import call


@pytest.fixture
def claims_run(fake_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Served, str]]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    out, cases, r = faithfulness_run(fake_server, tmp_path)
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
    assert marked == [FOUND_QUOTE]
    assert "".join(x["text"] for x in a1["segments"]) == CTX1  # the whole chunk, split around the quote
    a3 = rows[2]["supports"][0]
    assert (a3["passage"], a3["source"], a3["quote"], a3["found"]) == ("fruit", "fruit.txt", BAD_QUOTE, False)
    assert not any(x["mark"] for x in a3["segments"])  # a quote not found is never marked as evidence
    assert "".join(x["text"] for x in a3["segments"]) == CTX2
    # The criteria's quotes are the chunks' quotes: found or not as checked in the chunk, never marked in the answer.
    assert [[e["found"] for e in k["evidence"]] for k in c["criteria"]] == [[True], [True], [False]]
    assert not any(seg["labels"] for seg in c["judged_text"])


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
        assert got[0]["marks"] == [FOUND_QUOTE]
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
