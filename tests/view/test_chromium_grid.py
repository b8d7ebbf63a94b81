"""The grid, the charts and compare in a real headless Chromium: two runs sharing case ids each show their own
output; charts are SVG drawn in the page under the viewer's strict CSP; hostile names stay text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support import browser
from tests.support.browser import wait_for, wait_until
from tests.view.test_grid import two_runs

pytestmark = [pytest.mark.chromium]

WHY = browser.missing()
if WHY is not None:
    pytestmark.append(pytest.mark.skip(reason=f"browser test skipped: {WHY}"))


def test_grid_charts_and_compare_show_each_runs_own_output(driver: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    from referee.view import ViewServer, build_app, close_app

    ra, rb, ca, cb = two_runs(tmp_path)
    app = build_app([str(ra), str(rb)], cases=[f"a={ca}", f"b={cb}"])
    server = ViewServer(app, "127.0.0.1", 0)
    server.start_background()
    d = driver
    try:
        d.get(server.url)  # several runs: the grid is the first screen
        wait_for(d, "#grid tr.grid-row")
        cells = lambda: d.execute_script(  # noqa: E731
            "return [...document.querySelectorAll('#grid tr.grid-row')].map(r => [r.dataset.id,"
            " ...[...r.querySelectorAll('td.grid-cell')].map(c => c.className + '|' +"
            " c.querySelector('.cell-output').textContent)])")
        wait_until(d, lambda: len(cells()) == 6)
        first = cells()[0]
        assert first[0] == "q0"
        assert first[1] == "grid-cell cell-pass|A says q0" and first[2] == "grid-cell cell-fail|B says q0"
        assert d.find_element(By.ID, "grid-total").text == "6 case(s)"
        d.find_element(By.ID, "grid-show-differ").click()
        wait_until(d, lambda: [c[0] for c in cells()] == ["q0", "q2", "q4"])
        box = d.find_element(By.ID, "grid-q")
        box.send_keys("B says q4\n")
        wait_until(d, lambda: [c[0] for c in cells()] == ["q4"])
        d.get(server.url + "#/grid?q=q5")  # an output holding markup is shown as text
        wait_until(d, lambda: [c[0] for c in cells()] == ["q5"])
        assert "<script>window.__xss=1</script>" in cells()[0][2]
        assert d.execute_script("return window.__xss") is None
        assert not d.find_elements(By.CSS_SELECTOR, "#grid script, #grid svg, #grid [onload]")

        d.get(server.url + "#/run/1")  # a run's page: its charts, drawn as SVG in the page
        wait_for(d, "#chart-scores svg rect.bar")
        bars = d.execute_script("return [...document.querySelectorAll('#chart-scores rect.bar')]"
                                ".map(b => Number(b.dataset.count))")
        assert sum(bars) == 6
        wait_for(d, "#chart-categories svg g.interval")
        assert len(d.find_elements(By.CSS_SELECTOR, "#chart-categories g.interval")) == 2
        for cid in ("cost", "latency", "agreement"):
            wait_for(d, f"#chart-{cid} svg")
        assert "script" in d.find_element(By.ID, "chart-categories").get_attribute("innerHTML")  # as text
        assert d.execute_script("return window.__xss") is None

        d.get(server.url + "#/run/1/case/0")  # the judge's own criteria, under the suite's evaluator id
        wait_for(d, "table.check-criteria[data-check='judge'] td")
        assert "correctness" in d.find_element(By.CSS_SELECTOR, "table.check-criteria").text
        assert d.find_element(By.CSS_SELECTOR, "#criteria td").text.startswith("judge (llm_judge)")

        d.get(server.url + "#/compare/0/1")
        wait_for(d, "#compare-chart svg circle.dot")
        # three regressions at the same scores: one dot that stands for the three
        assert sum(int(c.get_attribute("data-n")) for c in
                   d.find_elements(By.CSS_SELECTOR, "#compare-chart circle.regression")) == 3
        # side by side: each run's own output for the same id
        d.find_element(By.CSS_SELECTOR, "#compare-table a[title='side by side']").click()
        wait_for(d, "#side-by-side .side")
        wait_until(d, lambda: "B says q0" in d.find_element(By.ID, "side-by-side").text)
        sides = d.find_element(By.ID, "side-by-side").text
        assert "A says q0" in sides
        assert not [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
    finally:
        server.shutdown()
        server.server_close()
        close_app(app)


def test_eight_runs_fit_a_1400px_window(driver: Any, tmp_path: Path) -> None:
    """Eight targets' runs: the top bar stays inside the window (the run links scroll within it, the reviewer
    box stays visible), and the grid's columns are the targets, each with its own output for every case."""
    import json

    from referee.view import ViewServer, build_app, close_app

    runs = []
    for k in range(8):
        target = {"id": f"prompt-variant-{k}@a-rather-long-model-name-2024-08-06", "kind": "model",
                  "provider": "openai", "model": "a-rather-long-model-name-2024-08-06"}
        p = tmp_path / f"prompt-variant-{k}_a-rather-long-model-name-2024-08-06.jsonl"
        p.write_text("".join(json.dumps({"id": f"q{i}", "score": 0.9 if (i + k) % 3 else 0.2, "target": target})
                             + "\n" for i in range(5)), encoding="utf-8")
        runs.append(str(p))
    app = build_app(runs)
    server = ViewServer(app, "127.0.0.1", 0)
    server.start_background()
    d = driver
    try:
        d.set_window_size(1400, 900)
        d.get(server.url)
        wait_for(d, "#grid tr.grid-row")
        wait_until(d, lambda: d.execute_script("return document.querySelectorAll('#runs-nav a').length") == 10)
        fit = d.execute_script(
            "const w = document.documentElement.clientWidth, top = document.getElementById('top');"
            "const box = document.getElementById('reviewer-box').getBoundingClientRect();"
            "const links = [...document.querySelectorAll('#runs-nav a')].map(a => a.getBoundingClientRect().top);"
            "return [w, top.scrollWidth, top.getBoundingClientRect().right, box.right, box.width,"
            " top.getBoundingClientRect().height, new Set(links).size];")
        width, top_scroll, top_right, box_right, box_width, height, link_lines = fit
        assert top_scroll <= width and top_right <= width, fit
        assert link_lines == 1 and height < 60, fit  # one line: the sticky bar does not cover the page
        assert box_width > 0 and box_right <= width, fit  # the reviewer box is on screen
        heads = d.execute_script("return [...document.querySelectorAll('#grid thead th')].slice(1)"
                                 ".map(h => h.textContent)")
        assert heads == [f"prompt-variant-{k}@a-rather-long-model-name-2024-08-06" for k in range(8)]
        absent = d.execute_script("return document.querySelectorAll('#grid td.absent').length")
        assert absent == 0  # every target has every case
    finally:
        server.shutdown()
        server.server_close()
        close_app(app)


def test_the_compare_page_shows_a_sign_of_work_before_the_comparison(driver: Any, tmp_path: Path) -> None:
    """From the click, the bar says "working..." (and the page left behind is dimmed) before the comparison is
    on screen, and the note goes once it is there. Order, not time: the times are bench_view_compare.py's."""
    from referee.view import ViewServer, build_app, close_app

    ra, rb, ca, cb = two_runs(tmp_path)
    app = build_app([str(ra), str(rb)], cases=[f"a={ca}", f"b={cb}"])
    server = ViewServer(app, "127.0.0.1", 0)
    server.start_background()
    d = driver
    try:
        d.get(server.url)
        wait_for(d, "#grid tr.grid-row")
        assert d.execute_script("return document.getElementById('busy').hidden") is True
        d.execute_script(
            "window.__seen = [];"
            "new MutationObserver(() => {"
            "  const b = !document.getElementById('busy').hidden && document.body.classList.contains('busy');"
            "  const v = !!document.getElementById('compare-verdict');"
            "  const last = window.__seen[window.__seen.length - 1];"
            "  const now = (b ? 'busy' : '') + (v ? 'shown' : '');"
            "  if (now !== last) window.__seen.push(now);"
            "}).observe(document.body, {subtree: true, childList: true, attributes: true});"
            "[...document.querySelectorAll('#runs-nav a')].find(a => a.textContent === 'compare').click();")
        wait_for(d, "#compare-verdict")
        wait_until(d, lambda: d.execute_script("return document.getElementById('busy').hidden"))
        seen = d.execute_script("return window.__seen")
        assert seen[0] == "busy" and seen[-1] == "shown", seen  # work shown first, then the answer alone
    finally:
        server.shutdown()
        server.server_close()
        close_app(app)
