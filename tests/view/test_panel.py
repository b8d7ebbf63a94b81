"""The viewer's panel section: the cases a panel split on with each judge's vote and rationale, the escalated
cases, and the review queue putting cases left for a human first."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import referee
from referee.judges import LLMJudge
from referee.providers import FakeProvider
from tests.view.conftest import XSS, Served, serve
from tests.view.test_api import call


def _judge(model: str, fails: set[int]) -> referee.Judge:
    def reply(req: object) -> str:
        i = int(re.search(r"answer-(\d+)", " ".join(m.content for m in req.messages)).group(1))  # type: ignore
        return json.dumps({"overall_score": 0.1 if i in fails else 0.9,
                           "quality": {"score": 0.5, "rationale": f"{model} on {i} " + XSS[0]}})

    return referee.Judge(FakeProvider(reply, model=model), cache=False)


@pytest.fixture
def panel_run(tmp_path: Path) -> Iterator[tuple[Served, str]]:
    cases = [{"id": f"c{i}", "input": "q", "output": f"answer-{i}"} for i in range(6)]
    out = tmp_path / "panel.jsonl"
    referee.evaluate(cases, [LLMJudge(rubric="- quality")],
                     judge=[_judge("m1", {0}), _judge("m2", {0, 1}), _judge("m3", set())],  # a panel
                     panel={"escalate_below": 1.0}, out=out, progress=False)
    s = serve([out], [])
    key = s.app.api_index()["runs"][0]["run"]
    yield s, key
    s.server.shutdown()
    s.server.server_close()
    from referee.view import close_app

    close_app(s.app)


def test_split_cases_show_each_judge_side_by_side(panel_run: tuple[Served, str]) -> None:
    s, key = panel_run
    status, d, _ = call(s, "GET", f"/api/runs/{key}/panel")
    assert status == 200
    assert d["judges"] == ["fake:m1", "fake:m2", "fake:m3"]
    assert [c["id"] for c in d["split"]] == ["c0", "c1"]  # c0: 2 fail, 1 pass; c1: 1 fail, 2 pass
    c0 = d["split"][0]
    assert [m["vote"] for m in c0["members"]] == ["fail", "fail", "pass"]
    assert c0["members"][0]["reason"] == "m1 on 0 " + XSS[0]  # the judge's own rationale, as data
    # Below the threshold (agreement 1.0) with no stronger judge: left for a human.
    assert {c["id"] for c in d["escalated"]} == {"c0", "c1"}
    assert all(c["needs_human"] for c in d["escalated"])
    assert d["counts"] == {"split": 2, "escalated": 2}


def test_the_review_queue_puts_cases_left_for_a_human_first(panel_run: tuple[Served, str]) -> None:
    s, key = panel_run
    status, q, _ = call(s, "GET", f"/api/runs/{key}/queue?kind=uncertain&n=3")
    assert status == 200
    ids = [c["id"] for c in q["cases"]]
    assert set(ids[:2]) == {"c0", "c1"}


def test_the_panel_script_is_served_and_included(panel_run: tuple[Served, str]) -> None:
    s, _ = panel_run
    status, body, resp = call(s, "GET", "/static/panel.js")
    assert status == 200 and resp.getheader("Content-Type", "").startswith("text/javascript")
    text = body.decode() if isinstance(body, bytes) else str(body)
    assert "innerHTML" not in text  # strings from results files only ever become text nodes
    status, page, _ = call(s, "GET", "/")
    assert '<script src="/static/panel.js" defer></script>' in (page.decode() if isinstance(page, bytes) else page)


def test_a_run_without_a_panel_has_an_empty_panel_section(served: Served) -> None:
    key = served.app.api_index()["runs"][0]["run"]
    status, d, _ = call(served, "GET", f"/api/runs/{key}/panel")
    assert status == 200 and d["split"] == [] and d["escalated"] == []
    assert call(served, "GET", "/api/runs/nope/panel")[0] == 404


@pytest.mark.chromium
def test_the_panel_section_renders_in_a_browser_and_hostile_text_stays_text(panel_run: tuple[Served, str]) -> None:
    from tests.support import browser

    why = browser.missing()
    if why is not None:
        pytest.skip(f"browser test skipped: {why}")
    s, key = panel_run
    d = browser.start()
    try:
        from selenium.webdriver.support.ui import WebDriverWait

        d.get(s.url + f"#/run/{key}")
        # Rows and text read in one script: the page may be re-rendered between two calls (#panel gone).
        text = WebDriverWait(d, 60).until(lambda _: d.execute_script(
            "const p = document.getElementById('panel');"
            "return p && p.querySelectorAll('.panel-table tbody tr').length === 4 ? p.innerText : null"))  # 2 split + 2 escalated
        assert "m1 on 0 <script>window.__xss=1</script>" in text
        assert "needs a human" in text
        assert d.execute_script("return window.__xss") is None
    finally:
        d.quit()
