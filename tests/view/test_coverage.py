"""The viewer's coverage panel: a run on generated cases shows cases per document, per kind and per persona (the
figures of ``referee.synth.coverage_of``, the terminal table's own), hostile names stay text in a real browser, and
a run on other cases shows no panel."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from referee.view import close_app
from tests.support import browser
from tests.support.browser import wait_until
from tests.support.synth_runs import generate_and_run
from tests.view.conftest import XSS, Data, Served, serve
from tests.view.test_api import call

NAMES = ("doc-" + XSS[0] + ".md", "doc-" + XSS[2] + ".html")
PERSONAS = ("persona " + XSS[1], "support agent")


@pytest.fixture
def synth_run(tmp_path: Path) -> Iterator[tuple[Served, str, Any]]:
    result, results = generate_and_run(tmp_path, names=NAMES, personas=PERSONAS)
    s = serve([results], [])
    key = s.app.api_index()["runs"][0]["run"]
    yield s, key, result
    s.server.shutdown()
    s.server.server_close()
    close_app(s.app)


def test_the_panel_has_the_generation_runs_figures(synth_run: tuple[Served, str, Any]) -> None:
    s, key, result = synth_run
    status, d, _ = call(s, "GET", f"/api/runs/{key}/coverage")
    assert status == 200
    cov = result.coverage()
    assert d["cases"] == len(result.cases) > 0 and d["figures"] == cov
    assert [c["id"] for c in d["charts"]] == ["coverage-documents", "coverage-kinds", "coverage-personas"]
    docs = dict(re.findall(r'<rect class="bar"[^>]*><title>([^<]*): ([^<]*)</title>', d["charts"][0]["svg"]))
    assert {html.unescape(k): v for k, v in docs.items()} == {k: str(v) for k, v in cov["document"].items()}
    assert "<script>" not in d["charts"][0]["svg"] and "onerror=" not in d["charts"][2]["svg"].replace(
        "onerror=&quot;", "")


def test_a_run_on_other_cases_has_no_panel(data: Data) -> None:
    s = serve([data.results], [data.cases])
    try:
        key = s.app.api_index()["runs"][0]["run"]
        status, d, _ = call(s, "GET", f"/api/runs/{key}/coverage")
        assert status == 200 and d["cases"] == 0 and d["charts"] == []
    finally:
        s.server.shutdown()
        s.server.server_close()
        close_app(s.app)


@pytest.mark.chromium
@pytest.mark.skipif(browser.missing() is not None, reason=f"browser test skipped: {browser.missing()}")
def test_hostile_document_names_and_personas_stay_text_in_the_browser(synth_run: tuple[Served, str, Any]) -> None:
    from selenium.webdriver.common.by import By

    s, key, result = synth_run
    d = browser.start()
    try:
        d.get(s.url + "#/run/" + key)
        wait_until(d, lambda: len(d.find_elements(By.CSS_SELECTOR, "#coverage figure svg")) == 3)
        assert d.find_element(By.ID, "coverage-count").text.startswith(f"{len(result.cases)} generated case")
        labels = d.execute_script(
            "return [...document.querySelectorAll('#chart-coverage-documents svg text title, "
            "#chart-coverage-personas svg text title')].map(t => t.textContent)")
        cov = result.coverage()
        assert set(labels) == set(cov["document"]) | set(cov["persona"])  # the names, as text
        assert d.execute_script("return window.__xss === undefined")
        assert not d.find_elements(By.CSS_SELECTOR, "#coverage script, #coverage img, #coverage iframe")
    finally:
        d.quit()


def test_rows_without_metadata_take_the_coverage_from_the_runs_cases(tmp_path: Path) -> None:
    import json

    result, results = generate_and_run(tmp_path)
    bare = tmp_path / "bare.jsonl"
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    bare.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "metadata"}) + "\n" for r in rows))
    s = serve([bare], [tmp_path / "cases.jsonl"])
    try:
        key = s.app.api_index()["runs"][0]["run"]
        status, d, _ = call(s, "GET", f"/api/runs/{key}/coverage")
        assert status == 200 and d["figures"] == result.coverage()
    finally:
        s.server.shutdown()
        s.server.server_close()
        close_app(s.app)
