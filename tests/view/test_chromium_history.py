"""The history page in a real headless Chromium: a suite name and a tag carrying markup stay text (in the filters,
the table and the trend chart), the trend's point opens its run, and two chosen runs open side by side compared."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from referee.store import open_store
from referee.view import close_app
from referee.view._server import CSP
from tests.support import browser
from tests.support.browser import wait_until
from tests.view.conftest import XSS, Served
from tests.view.test_history import HOSTILE_MODEL, HOSTILE_SUITE, HOSTILE_TAG, seed, serve_history

pytestmark = [pytest.mark.chromium]

WHY = browser.missing()
if WHY is not None:
    pytestmark.append(pytest.mark.skip(reason=f"browser test skipped: {WHY}"))


@pytest.fixture
def hist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Served]:
    monkeypatch.chdir(tmp_path)
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    with open_store(url) as st:
        seed(st)
    s = serve_history(url, tmp_path)
    yield s
    s.server.shutdown()
    s.server.server_close()
    close_app(s.app)


def test_history_page_keeps_hostile_names_as_text_and_opens_and_compares_runs(driver: Any, hist: Served) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    d = driver
    d.get(hist.url)  # no run loaded: the landing page is the history
    wait_until(d, lambda: len(d.find_elements(By.CSS_SELECTOR, "#history-runs tbody tr")) == 7)
    suites = [c.text for c in d.find_elements(By.CSS_SELECTOR, "#history-runs td.suite")]
    assert suites.count(HOSTILE_SUITE) == 5  # shown as the text it is
    tags = [c.text for c in d.find_elements(By.CSS_SELECTOR, "#history-runs td.tags .flag")]
    assert tags == [HOSTILE_TAG]
    judges = [c.text for c in d.find_elements(By.CSS_SELECTOR, "#history-alignments td.judge")]
    assert judges == ["openai/" + HOSTILE_MODEL]
    d.execute_script("document.querySelector('details.alignment-prompt').open = true")
    diff = d.find_element(By.CSS_SELECTOR, "details.alignment-prompt pre.diff").text
    assert diff.endswith(XSS[0])  # the rewrite's diff, shown as the text it is
    assert d.execute_script("return window.__xss") is None
    assert not d.find_elements(By.CSS_SELECTOR, "#main script, #main iframe, #main img")
    # The newest complete run is of "plain"; filter to the hostile suite and its trend is drawn.
    def pick_the_hostile_suite() -> bool:
        Select(d.find_element(By.ID, "h-suite")).select_by_visible_text(HOSTILE_SUITE)
        return True

    wait_until(d, pick_the_hostile_suite)
    d.find_element(By.CSS_SELECTOR, "#history-filters button").click()
    wait_until(d, lambda: len(d.find_elements(By.CSS_SELECTOR, "#history-runs tbody tr")) == 5)
    wait_until(d, lambda: len(d.find_elements(By.CSS_SELECTOR, "#chart-trend-pass_rate circle")) == 4)
    assert len(d.find_elements(By.CSS_SELECTOR, "#chart-trend-pass_rate circle.regression")) == 1
    assert d.find_elements(By.CSS_SELECTOR, "#chart-trend-pass_rate .gate")
    assert d.find_element(By.CSS_SELECTOR, "#history-trend h2").text.endswith(HOSTILE_SUITE)
    assert d.execute_script("return window.__xss") is None

    # A point opens its run: the regression (run2, 40% of 20 cases).
    wait_until(d, lambda: d.execute_script(
        "const c = document.querySelector('#chart-trend-pass_rate circle.regression');"
        "c.dispatchEvent(new MouseEvent('click', {bubbles: true})); return true;"))
    wait_until(d, lambda: d.current_url.split("#")[1].startswith("/run/h"))
    wait_until(d, lambda: d.find_element(By.ID, "total").text == "20 matching")

    # Choose two runs and compare them: the older is the baseline.
    d.get(hist.url + "#/history?suite=" + quote(HOSTILE_SUITE))
    wait_until(d, lambda: len(d.find_elements(By.CSS_SELECTOR, "#history-runs tbody tr")) == 5)
    rows = d.find_elements(By.CSS_SELECTOR, "#history-runs tbody tr")
    by_id = {r.get_attribute("data-run")[:4]: r for r in rows}
    by_id["run2"].find_element(By.CSS_SELECTOR, "input.pick").click()
    assert not d.find_element(By.ID, "history-compare").is_enabled()
    by_id["run0"].find_element(By.CSS_SELECTOR, "input.pick").click()
    d.find_element(By.ID, "history-compare").click()
    wait_until(d, lambda: d.current_url.split("#")[1].startswith("/compare/h"))
    keys = d.current_url.split("#")[1].split("/")[2:4]
    opened = {k: v for v, k in hist.app.history.opened.items()}
    assert [opened[k][:4] for k in keys] == ["run0", "run2"]
    # The viewer's compare page with the paired statistics, the runs named by their ids.
    wait_until(d, lambda: d.find_element(By.ID, "compare-verdict").text.strip() != "")
    assert Select(d.find_element(By.ID, "compare-base")).first_selected_option.text == "run run00000"
    assert Select(d.find_element(By.ID, "compare-cand")).first_selected_option.text == "run run20000"
    assert "paired" in d.find_element(By.ID, "main").text.lower()
    assert d.execute_script("return window.__xss") is None
    assert "'unsafe-inline'" not in CSP
