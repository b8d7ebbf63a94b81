"""`referee view` in a real headless Chromium: browse, filter, open a case, label three cases, reload and see
them, `referee calibrate` reads the labels; hostile text in every field stays text."""

from __future__ import annotations

import json
from typing import Any

import pytest

from referee.cli import cli
from tests.support import browser
from tests.support.browser import wait_for, wait_until
from tests.view.conftest import PAYLOAD, XSS, Data, Served

pytestmark = [pytest.mark.chromium]

WHY = browser.missing()
if WHY is not None:
    pytestmark.append(pytest.mark.skip(reason=f"browser test skipped: {WHY}"))


def click(d: Any, by: str, what: str) -> None:
    """Find and click in one retried step: the page may re-render (a background refresh) between the two."""
    wait_until(d, lambda: d.find_element(by, what).click() or True)


def text_is(d: Any, element_id: str, expected: str) -> None:
    wait_until(d, lambda: d.find_element("id", element_id).text == expected)


def rows(d: Any) -> list[str]:
    return [str(x) for x in d.execute_script(
        "return [...document.querySelectorAll('#case-table tbody tr.case-row')].map(r => r.dataset.id)")]


def test_browse_filter_open_label_reload_and_calibrate(driver: Any, served: Served, data: Data) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    d = driver
    d.get(served.url + "#/run/1")
    wait_until(d, lambda: len(rows(d)) == 13)
    text_is(d, "total", "13 matching")
    wait_for(d, "#stat-pass-rate")  # the summary of referee score
    wait_until(d, lambda: d.find_element(By.ID, "stat-cases").text.endswith("12"))

    def show_unscored() -> bool:
        Select(d.find_element(By.ID, "filter-status")).select_by_value("unscored")
        return True

    wait_until(d, show_unscored)
    wait_until(d, lambda: rows(d) == ["case-03"])
    d.get(served.url + "#/run/1")
    wait_until(d, lambda: len(rows(d)) == 13)
    wait_until(d, lambda: d.find_element(By.ID, "search").send_keys("Answer number 7\n") or True)
    wait_until(d, lambda: rows(d) == ["case-07"])

    # Open the case: its input, the rendered Markdown output and the evidence highlight.
    click(d, By.CSS_SELECTOR, "tr.case-row")
    text_is(d, "case-title", "case-07")
    wait_until(d, lambda: d.find_element(By.CSS_SELECTOR, ".md strong").text == "Refunds take 5 days.")
    wait_until(d, lambda: d.find_element(By.CSS_SELECTOR, "#judged-text mark").text == "Refunds take 5 days")

    # Label three cases: a click, a key, and a score on the rubric's 1-5 scale.
    def name_the_reviewer() -> bool:
        box = d.find_element(By.ID, "reviewer")
        box.clear()
        box.send_keys("ann")
        box.send_keys("\t")
        value: str | None = box.get_attribute("value")
        return value == "ann"

    wait_until(d, name_the_reviewer)
    click(d, By.ID, "label-pass")
    wait_until(d, lambda: "your label: pass" in d.find_element(By.ID, "label-status").text)
    d.get(served.url + "#/run/1/case/1")
    text_is(d, "case-title", "case-01")
    d.find_element(By.TAG_NAME, "body").send_keys("f")
    wait_until(d, lambda: "your label: fail" in d.find_element(By.ID, "label-status").text)
    d.get(served.url + "#/run/1/case/2")
    text_is(d, "case-title", "case-02")
    d.find_element(By.TAG_NAME, "body").send_keys("4")
    wait_until(d, lambda: "4 (1-5)" in d.find_element(By.ID, "label-status").text)

    labels = data.dir / "results.labels.jsonl"
    saved = [json.loads(x) for x in labels.read_text().splitlines()]
    assert [(x["id"], x["score"], x["reviewer"]) for x in saved] == [
        ("case-07", 1.0, "ann"), ("case-01", 0.0, "ann"), ("case-02", 0.75, "ann")]

    # Reload: the labels come back from the server (nothing lived only in the tab).
    d.get(served.url + "#/run/1?labelled=true")
    d.refresh()
    wait_until(d, lambda: sorted(rows(d)) == ["case-01", "case-02", "case-07"])
    wait_until(d, lambda: sorted(d.execute_script(
        "return [...document.querySelectorAll('#case-table .label-chip')].map(e => e.textContent)"))
        == ["human: 4 (1-5)", "human: fail", "human: pass"])
    wait_for(d, "#agreement-card")
    wait_until(d, lambda: "on 3 case(s)" in d.find_element(By.ID, "agreement-card").text)
    assert cli(["calibrate", str(data.results), str(labels), "--threshold", "1"]) == 0


def test_review_queue_is_driven_by_the_keyboard(driver: Any, served: Served, data: Data) -> None:
    from selenium.webdriver.common.by import By

    d = driver
    d.get(served.url + "#/run/1/review?kind=uncertain&n=3")
    text_is(d, "review-pos", "1 of 3")
    text_is(d, "case-title", "case-03")  # the unscored case first
    d.find_element(By.TAG_NAME, "body").send_keys("f")
    text_is(d, "review-pos", "2 of 3")  # on to the next case
    d.find_element(By.TAG_NAME, "body").send_keys("k")
    text_is(d, "review-pos", "1 of 3")
    text_is(d, "case-title", "case-03")
    labels = data.dir / "results.labels.jsonl"
    wait_until(d, lambda: labels.exists() and labels.read_text().endswith("\n"))
    line = json.loads(labels.read_text().splitlines()[0])
    assert (line["id"], line["passed"]) == ("case-03", False)

    # Pairwise: blind review shows the two outputs without the verdict, and the pick maps back to a/b.
    d.get(served.url + "#/run/2/review?kind=random&n=1&seed=3")
    wait_for(d, "#pick-left")
    text = d.find_element(By.ID, "main").text
    assert "winner" not in text.lower() and "position bias" not in text.lower()
    left = d.execute_script("return document.querySelectorAll('.cols .text')[0].textContent")
    d.find_element(By.TAG_NAME, "body").send_keys("1")
    plabels = data.dir / "pairwise.labels.jsonl"
    wait_until(d, lambda: plabels.exists() and plabels.read_text().endswith("\n"))  # the whole line is written
    saved = json.loads((data.dir / "pairwise.labels.jsonl").read_text())
    assert saved["winner"] == ("a" if left.startswith("Answer A") else "b")


PAGES = [("#/run/1", "#stat-pass-rate"), ("#/run/1/case/12", "#review-panel"), ("#/run/0/case/12", "#review-panel"),
         ("#/compare/0/1?filter=all", "#compare-table tbody tr"), ("#/run/2/case/0", "#review-panel"),
         ("#/run/2/review?kind=random&n=3&seed=1", "#pick-left"), ("#/run/1?q=svg", "#case-table tr.case-row"),
         ("#/run/1/review?kind=uncertain", "#review-panel")]


@pytest.mark.parametrize(("page", "ready"), PAGES)
def test_hostile_text_in_every_field_never_runs(driver: Any, served: Served, page: str, ready: str) -> None:
    d = driver
    d.get(served.url + "#/")
    d.get(served.url + page)
    wait_for(d, ready)
    wait_for(d, "#case-table tr.case-row, #review-panel, #compare-table")
    assert d.execute_script("return window.__xss") is None
    # The charts are the page's own SVG (drawn and escaped by the server, parsed as SVG): nothing else is.
    assert d.execute_script("return document.querySelectorAll('#main script, #main img, "
                            "#main svg:not(figure.chart-card > svg), #main iframe, "
                            "#main [onerror], #main [onload]').length") == 0
    assert d.execute_script("return document.querySelectorAll('figure.chart-card script, figure.chart-card "
                            "foreignObject').length") == 0
    # No script error and no Content-Security-Policy violation (the page's own code needs no exception).
    severe = [e["message"] for e in d.get_log("browser") if e["level"] == "SEVERE"]
    assert severe == []
    hrefs = d.execute_script("return [...document.querySelectorAll('#main a')].map(a => a.getAttribute('href'))")
    assert not [h for h in hrefs if h and h.strip().lower().startswith("javascript")]
    assert d.title == "referee view"


def test_the_hostile_case_shows_its_payload_as_text(driver: Any, served: Served) -> None:
    from selenium.webdriver.common.by import By

    d = driver
    d.get(served.url + "#/run/1/case/12")
    wait_until(d, lambda: d.find_element(By.ID, "case-title").text.startswith("case-xss-"))
    text = d.find_element(By.ID, "main").text
    for x in XSS[:3]:
        assert x in text  # shown as the characters it is made of
    assert d.find_element(By.ID, "case-title").text == "case-xss-" + XSS[1]
    assert text.count(XSS[2]) >= 3  # rationale, raw reply, criterion name ...
    steps = d.execute_script("return [...document.querySelectorAll('.step b')].map(e => e.textContent)")
    assert steps[0] == "step 1: lookup" + XSS[1]
    turns = d.execute_script("return [...document.querySelectorAll('.turn .text')].map(e => e.textContent)")
    assert turns[:2] == [PAYLOAD, PAYLOAD] and len(turns) == 4  # + the input and the output as the last turns
    assert d.execute_script("return window.__xss") is None


def test_compare_side_by_side_and_a_growing_file_shows_up(driver: Any, served: Served, data: Data) -> None:
    from selenium.webdriver.common.by import By

    d = driver
    d.get(served.url + "#/compare/0/1?filter=regressions")
    wait_for(d, "#compare-table tbody tr")
    ids = d.execute_script("return [...document.querySelectorAll('#compare-table tbody tr')].map(r => r.dataset.id)")
    assert "case-00" in ids and "case-08" not in ids
    assert d.find_element(By.ID, "compare-verdict").text.startswith("INCONCLUSIVE: overall pass rate -0.167")
    click(d, By.CSS_SELECTOR, "#compare-table tr[data-id='case-00'] a")
    wait_for(d, "#side-by-side")
    sides = d.execute_script("return [...document.querySelectorAll('#side-by-side .side > p')].map(p => p.textContent)")
    assert "score 0.900" in sides[0] and "pass" in sides[0]
    assert "score 0.100" in sides[1] and "fail" in sides[1]

    # A run still writing: the open table picks up the new row by itself.
    d.get(served.url + "#/run/1")
    wait_until(d, lambda: len(rows(d)) == 13)
    with open(data.results, "a", encoding="utf-8") as f:
        f.write(json.dumps({"schema_version": 1, "id": "late-case", "status": "scored", "score": 0.9}) + "\n")
    wait_until(d, lambda: "late-case" in rows(d))
    text_is(d, "total", "14 matching")


def test_a_comment_written_after_the_label_is_saved_with_it(driver: Any, served: Served, data: Data) -> None:
    from selenium.webdriver.common.by import By

    d = driver
    d.get(served.url + "#/run/1/case/4")
    text_is(d, "case-title", "case-04")
    d.find_element(By.TAG_NAME, "body").send_keys("f")
    wait_until(d, lambda: "your label: fail" in d.find_element(By.ID, "label-status").text)
    def comment() -> bool:
        box = d.find_element(By.ID, "comment")
        box.clear()
        box.send_keys("misses the 5-day rule " + XSS[0])
        box.send_keys("\t")  # leaving the box saves it
        return True

    wait_until(d, comment)
    labels = data.dir / "results.labels.jsonl"
    wait_until(d, lambda: "misses the 5-day rule" in labels.read_text())
    lines = [json.loads(x) for x in labels.read_text().splitlines()]
    assert len(lines) == 1 and lines[0]["passed"] is False and lines[0]["comment"].endswith(XSS[0])
    assert d.execute_script("return window.__xss") is None


def test_the_table_by_keyboard(driver: Any, served: Served) -> None:
    from selenium.webdriver.common.by import By

    d = driver
    d.get(served.url + "#/run/1")
    wait_until(d, lambda: len(rows(d)) == 13)
    body = d.find_element(By.TAG_NAME, "body")
    body.send_keys("jjjk")  # down three, up one: the second row
    wait_until(d, lambda: d.execute_script(
        "return document.querySelector('tr.case-row.selected').dataset.id") == "case-01")
    body.send_keys("\n")
    wait_until(d, lambda: d.find_element(By.ID, "case-title").text == "case-01")
    d.back()
    wait_until(d, lambda: len(rows(d)) == 13)
    d.find_element(By.TAG_NAME, "body").send_keys("/")
    wait_until(d, lambda: d.execute_script("return document.activeElement.id") == "search")
