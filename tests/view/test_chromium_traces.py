"""The traces page in a real headless Chromium: span attributes, messages and a service name carrying HTML and
script stay text in the list, the filters, the trace's case, its spans and its scores; a trace opens from the list
and from an alert's example; the "with an error span" box lists only the failed trace, marked in words."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from referee.view import close_app
from tests.support import browser
from tests.support.browser import wait_until
from tests.view.conftest import PAYLOAD, Served
from tests.view.test_history import serve_history
from tests.view.test_traces import HOSTILE_SERVICE, OFFLINE_BRANCH, PLAIN_SERVICE, Seeded, seed_traces

pytestmark = [pytest.mark.chromium]

WHY = browser.missing()
if WHY is not None:
    pytestmark.append(pytest.mark.skip(reason=f"browser test skipped: {WHY}"))


@pytest.fixture
def traced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Served, Seeded]]:
    monkeypatch.chdir(tmp_path)
    seeded = seed_traces(f"sqlite:///{tmp_path / 'history.sqlite'}")
    s = serve_history(seeded.url, tmp_path)
    yield s, seeded
    s.server.shutdown()
    s.server.server_close()
    close_app(s.app)


def _clean(d: Any) -> None:
    from selenium.webdriver.common.by import By

    assert d.execute_script("return window.__xss") is None
    assert not d.find_elements(By.CSS_SELECTOR, "#main script, #main iframe, #main img, #main [onerror], #main [onload]")


def test_traces_page_keeps_hostile_span_text_as_text(driver: Any, traced: tuple[Served, Seeded]) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    s, seeded = traced
    d = driver
    d.get(s.url)
    wait_until(d, lambda: d.find_element(By.ID, "nav-traces")).click()
    wait_until(d, lambda: len(d.find_elements(By.CSS_SELECTOR, "#trace-list tbody tr")) == 8)
    services = [c.text for c in d.find_elements(By.CSS_SELECTOR, "#trace-list td.service")]
    assert services.count(HOSTILE_SERVICE) == 6 and services.count(PLAIN_SERVICE) == 2
    options = [o.text for o in Select(d.find_element(By.ID, "t-service")).options]
    assert HOSTILE_SERVICE in options
    assert len(d.find_elements(By.CSS_SELECTOR, "#trace-charts figure circle.regression")) == 2
    assert len(d.find_elements(By.CSS_SELECTOR, "#trace-alerts li")) == 2
    # The suite's offline run beside each alert and under the chart, its branch name shown as the text it is.
    notes = d.find_elements(By.CSS_SELECTOR, "#trace-alerts li .offline-note") + \
        d.find_elements(By.CSS_SELECTOR, "#trace-charts .chart-offline .offline-note")
    assert len(notes) == 3
    assert all(OFFLINE_BRANCH in n.text and "for context, not the reference" in n.text for n in notes)
    _clean(d)

    # Filter to the hostile service: its six traces.
    Select(d.find_element(By.ID, "t-service")).select_by_visible_text(HOSTILE_SERVICE)
    d.find_element(By.CSS_SELECTOR, "#trace-filters button").click()
    wait_until(d, lambda: len(d.find_elements(By.CSS_SELECTOR, "#trace-list tbody tr")) == 6)
    _clean(d)

    # Open the hostile trace: its input, output and attributes are shown as the text they are.
    bad = seeded.hostile[-1].trace_id
    d.find_element(By.CSS_SELECTOR, f'#trace-list tr[data-trace="{bad}"] a.open-trace').click()
    wait_until(d, lambda: d.find_element(By.ID, "trace-id").text == bad)
    case_text = d.find_element(By.ID, "trace-case").text
    assert PAYLOAD.split("\n")[0][:40] in case_text
    assert d.find_element(By.CSS_SELECTOR, "#trace-case .text").text == PAYLOAD
    rows = d.find_elements(By.CSS_SELECTOR, "#trace-spans tbody tr")
    assert len(rows) == 3
    root = d.find_element(By.CSS_SELECTOR, f'#trace-spans tr[data-span="{seeded.hostile[-1].root_span_id}"]')
    root.find_element(By.TAG_NAME, "summary").click()
    attrs = root.find_element(By.CSS_SELECTOR, "pre.span-attrs").text
    assert "window.__xss=2" in attrs and "app.note" in attrs
    assert "error: boom" in root.text
    score_row = d.find_element(By.CSS_SELECTOR, '#trace-score-table tr[data-evaluator="is_json"]')
    assert "fail" in score_row.text
    _clean(d)

    # An alert's example opens its trace.
    d.find_element(By.ID, "nav-traces").click()
    wait_until(d, lambda: len(d.find_elements(By.CSS_SELECTOR, "#trace-list tbody tr")) == 8)
    d.find_elements(By.CSS_SELECTOR, "#trace-alerts a.alert-example")[0].click()
    wait_until(d, lambda: d.find_element(By.ID, "trace-id").text in {x.trace_id for x in seeded.hostile})
    assert d.find_elements(By.CSS_SELECTOR, "#trace-own-alerts li")
    _clean(d)


def test_the_error_span_box_lists_the_failed_trace_marked_in_words(driver: Any, traced: tuple[Served, Seeded]) -> None:
    from selenium.webdriver.common.by import By

    s, seeded = traced
    failed = seeded.hostile[-1].trace_id
    d = driver
    d.get(s.url + "#/traces")
    wait_until(d, lambda: len(d.find_elements(By.CSS_SELECTOR, "#trace-list tbody tr")) == 8)
    # In the full list the failed trace says so in text (not only a colour); the others say nothing of the kind.
    states = {r.get_attribute("data-trace"): r.find_element(By.CSS_SELECTOR, "td.state").text
              for r in d.find_elements(By.CSS_SELECTOR, "#trace-list tbody tr")}
    assert states[failed] == "scored error"
    assert all(v == "scored" for k, v in states.items() if k != failed)
    box = d.find_element(By.ID, "t-error")
    assert box.get_attribute("type") == "checkbox" and not box.is_selected()
    assert "with an error span" in d.find_element(By.ID, "trace-filters").text
    box.click()
    d.find_element(By.CSS_SELECTOR, "#trace-filters button").click()
    wait_until(d, lambda: len(d.find_elements(By.CSS_SELECTOR, "#trace-list tbody tr")) == 1)
    assert "error=1" in d.current_url
    [row] = d.find_elements(By.CSS_SELECTOR, "#trace-list tbody tr")
    assert row.get_attribute("data-trace") == failed
    assert row.find_element(By.CSS_SELECTOR, ".trace-error").text == "error"
    assert d.find_element(By.ID, "t-error").is_selected()  # the page drawn from the URL keeps the box checked
    _clean(d)
    # The trace's own page says it too; unchecking the box lists every trace again.
    row.find_element(By.CSS_SELECTOR, "a.open-trace").click()
    wait_until(d, lambda: d.find_element(By.ID, "trace-id").text == failed)
    assert "has an error span" in d.find_element(By.CSS_SELECTOR, "#main p.muted").text
    d.back()
    wait_until(d, lambda: len(d.find_elements(By.CSS_SELECTOR, "#trace-list tbody tr")) == 1)
    d.find_element(By.ID, "t-error").click()
    d.find_element(By.CSS_SELECTOR, "#trace-filters button").click()
    wait_until(d, lambda: len(d.find_elements(By.CSS_SELECTOR, "#trace-list tbody tr")) == 8)
    assert "error=" not in d.current_url
