"""Several reviewers and the align view in a real headless Chromium: a reviewer sees only their own labels, the
run page shows the reviewers' agreement beside the judge's, and "align" shows the held-out figures, the cases
that changed verdict and the prompt diff; reviewer names and case ids made of script stay text."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from referee.view import close_app
from tests.support import browser
from tests.support.browser import wait_for, wait_until
from tests.view.conftest import XSS, Data, Served
from tests.view.test_review import HOSTILE_REVIEWER, _bigger, _serve, _two_reviewers, _write_labels, get

pytestmark = [pytest.mark.chromium]

WHY = browser.missing()
if WHY is not None:
    pytestmark.append(pytest.mark.skip(reason=f"browser test skipped: {WHY}"))


def _no_script_ran(d: Any, answered_400: str | None = None) -> None:
    assert d.execute_script("return window.__xss") is None
    assert d.execute_script("return document.querySelectorAll('#main script, #main img, #main iframe, "
                            "#main [onerror], #main [onload]').length") == 0
    severe = [e["message"] for e in d.get_log("browser") if e["level"] == "SEVERE"]
    # The one error the page expects: the API's 400 it shows as a message (the browser logs the status).
    assert [m for m in severe if not (answered_400 and answered_400 in m and "status of 400" in m)] == []


def _hostile_ids(data: Data) -> dict[str, str]:
    """Every case id made to carry a script payload (in the results and the cases file alike)."""
    new = {f"case-{i:02d}": f"case-{i:02d}-" + XSS[i % len(XSS)] for i in range(100)}
    for path in (data.results, data.cases):
        items = [json.loads(x) for x in path.read_text().splitlines()]
        for it in items:
            it["id"] = new.get(it["id"], it["id"])
        path.write_text("".join(json.dumps(x) + "\n" for x in items), encoding="utf-8")
    return new


def _stop(s: Served) -> None:
    s.server.shutdown()
    s.server.server_close()
    close_app(s.app)


@pytest.fixture
def two_reviewers(data: Data) -> Iterator[Served]:
    _write_labels(data, [x for x in _two_reviewers(data) if x["reviewer"] == HOSTILE_REVIEWER])
    s = _serve(data, 2)
    yield s
    _stop(s)


def test_a_reviewer_sees_only_their_own_labels_and_the_reviewers_agreement(driver: Any,
                                                                            two_reviewers: Served) -> None:
    from selenium.webdriver.common.by import By

    d = driver
    s = two_reviewers
    d.get(s.url + "#/")
    d.execute_script("localStorage.setItem('referee.reviewer', 'ann')")
    d.get(s.url + "#/run/0/case/0")
    d.refresh()
    wait_until(d, lambda: d.find_element(By.ID, "reviewer").get_attribute("value") == "ann")
    wait_until(d, lambda: d.find_element(By.ID, "case-title").text == "case-00")
    # The other reviewer labelled case-00: ann is told so, not what they said.
    wait_until(d, lambda: d.find_element(By.ID, "label-status").text
               == "labelled by 1 other reviewer(s) (their labels are not shown)")
    d.find_element(By.TAG_NAME, "body").send_keys("p")
    wait_until(d, lambda: "your label: pass" in d.find_element(By.ID, "label-status").text)
    # ann's queue leaves out what she labelled; the page says how many reviewers each case asks for.
    d.get(s.url + "#/run/0/review?kind=random&n=50&seed=1")
    wait_until(d, lambda: "(2 reviewers per case; you: ann)" in d.find_element(By.TAG_NAME, "h1").text)
    wait_until(d, lambda: d.find_element(By.ID, "review-pos").text.endswith(" of 12"))  # 13 cases, one done
    queued = d.execute_script("return new URLSearchParams(location.hash.split('?')[1]).get('rows')").split(",")
    assert "0" not in queued and len(queued) == 12
    d.get(s.url + "#/run/0")
    wait_until(d, lambda: d.execute_script(
        "return [...document.querySelectorAll('#case-table tr.case-row')].length") == 13)
    chips = d.execute_script("return [...document.querySelectorAll('.label-chip')].map(c => c.title)")
    assert chips == ["human label by ann"]  # the other reviewer's eleven labels are not shown
    card = wait_for(d, "#reviewers-card")
    wait_until(d, lambda: "ceiling" in card.text)
    names = d.execute_script("return [...document.querySelectorAll('#judge-per-reviewer .reviewer-name')]"
                             ".map(e => e.textContent)")
    assert sorted(names) == sorted(["ann", HOSTILE_REVIEWER])  # the name is shown as the characters it is
    api = get(s, "/api/runs/0/reviewers")["criteria"][0]
    assert api["cases_shared"] == 1
    cell = d.find_element(By.CSS_SELECTOR, "#reviewers-card .reviewers-row .judge-alpha").text
    assert cell.startswith(f"{api['judge_alpha']['estimate']:.3f}")
    _no_script_ran(d)


def test_align_shows_the_held_out_figures_the_changed_cases_and_the_prompt_diff(driver: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    data = _bigger(tmp_path)
    lines = _two_reviewers(data)
    new = _hostile_ids(data)
    _write_labels(data, [{**x, "id": new[x["id"]]} for x in lines])
    s = _serve(data, 2)
    try:
        api = get(s, "/api/runs/0/align")
        d = driver
        d.get(s.url + "#/run/0")
        wait_for(d, "#start-align").click()
        wait_for(d, "#align-figures")
        metrics = d.execute_script("return [...document.querySelectorAll('#align-figures tr.align-metric')]"
                                   ".map(r => r.dataset.metric)")
        assert metrics == list(api["heldout"]["values"]["aligned"])
        kappa = d.find_element(By.CSS_SELECTOR, "tr[data-metric=kappa] .gain-baseline").text
        assert kappa.startswith(f"{api['heldout']['gains']['baseline']['kappa']['estimate']:.3f}")
        decision = d.find_element(By.ID, "align-decision").text
        assert ("referee align would write it" in decision) == api["written"]
        changed = d.execute_script("return [...document.querySelectorAll('#align-changed tr.changed-row')]"
                                   ".map(r => r.dataset.id)")
        assert changed == [c["id"] for c in api["changed"]] and changed
        shown = d.execute_script("return [...document.querySelectorAll('#align-changed tr.changed-row a')]"
                                 ".map(a => a.textContent)")
        assert shown == changed and any(x in shown[0] for x in XSS)  # ids made of script, shown as text
        words = {0.0: "fail", 1.0: "pass"}  # pass/fail labels are shown as the words
        cells = d.execute_script("return [...document.querySelectorAll('#align-changed tr.changed-row')]"
                                 ".map(r => [...r.querySelectorAll('td.num')].map(t => t.textContent))")
        assert cells == [[words[c["raw"]], words[c["aligned"]], words[c["human"]]] for c in api["changed"]]
        assert d.find_element(By.ID, "prompt-diff-empty").text.startswith("none")
        names = d.execute_script("return [...document.querySelectorAll('#align-split .reviewer-name')]"
                                 ".map(e => e.textContent)")
        assert names == api["reviewers"] and HOSTILE_REVIEWER in names
        assert f"{api['no_consensus']} case(s) without consensus" in d.find_element(By.ID, "align-split").text
        assert d.find_element(By.ID, "align-command").text == api["command"]
        _no_script_ran(d)
    finally:
        _stop(s)


def test_align_on_one_class_only_says_why(driver: Any, data: Data) -> None:
    from selenium.webdriver.common.by import By

    ids = [json.loads(x)["id"] for x in data.results.read_text().splitlines()]
    _write_labels(data, [{"id": i, "score": 1.0, "reviewer": HOSTILE_REVIEWER} for i in ids])
    s = _serve(data)
    try:
        d = driver
        d.get(s.url + "#/run/0/align")
        err = wait_for(d, "#align-error")
        assert "one class only" in err.text
        assert d.find_element(By.ID, "main").text.count("Error:") == 0  # a message, not a crash
        _no_script_ran(d, answered_400="/api/runs/0/align")
    finally:
        _stop(s)
