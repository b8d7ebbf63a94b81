"""Images in the viewer: the API gives a case's image parts in their checked form (contexts too), and in a real
headless Chromium the page shows an inline image from a data: URL under the viewer's CSP and a remote one as a
link that is never loaded."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import browser
from tests.support.images import png
from tests.view.conftest import Served, serve
from tests.view.test_api import get

REMOTE = "https://images.example.invalid/remote.png"
CHART = png(24, 16, rgb=(0, 90, 200))


@pytest.fixture
def image_run(tmp_path: Path) -> Iterator[Served]:
    (tmp_path / "chart.png").write_bytes(CHART)
    (tmp_path / "doc.png").write_bytes(png(3, 3))
    case = {"id": "img-1", "input": [{"type": "text", "text": "Which colour is the bar? <b>bold</b>"},
                                     {"type": "image", "url": REMOTE}],
            "output": {"type": "image", "path": "chart.png"},
            "contexts": [{"type": "image", "path": "doc.png"}, "a text context"]}
    (tmp_path / "cases.jsonl").write_text(json.dumps(case) + "\n")
    (tmp_path / "results.jsonl").write_text(json.dumps({"schema_version": 1, "id": "img-1", "status": "scored",
                                                        "score": 0.9, "rationale": "blue bar"}) + "\n")
    s = serve([tmp_path / "results.jsonl"], [tmp_path / "cases.jsonl"])
    yield s
    s.server.shutdown()
    s.server.server_close()
    from referee.view import close_app

    close_app(s.app)


def test_the_api_gives_checked_image_parts(image_run: Served) -> None:
    c = get(image_run, "/api/runs/0/cases/0")["case"]
    assert base64.b64decode(c["output"]["data"]) == CHART and c["output"]["media_type"] == "image/png"
    assert c["input"][1] == {"type": "image", "url": REMOTE, "sha256": c["input"][1]["sha256"],
                             "name": "remote.png"}
    assert c["contexts"][0]["width"] == 3 and c["contexts"][1] == "a text context"
    assert "output_html" not in c  # an image is no Markdown


WHY = browser.missing()


@pytest.mark.chromium
@pytest.mark.skipif(WHY is not None, reason=f"browser test skipped: {WHY}")
def test_the_viewer_shows_an_image_case_in_chromium(image_run: Served) -> None:
    from tests.support.browser import wait_until

    d: Any = browser.start()
    try:
        d.get(image_run.url + "#/run/0/case/0")
        # The output (as output and as the judged text), then the context document.
        wait_until(d, lambda: len(d.find_elements("css selector", "img.case-image")) == 3)
        shown = d.execute_script(
            "return [...document.querySelectorAll('img.case-image')].map(i => [i.src.slice(0, 22), i.complete, "
            "i.naturalWidth, i.naturalHeight])")
        assert shown == [["data:image/png;base64,", True, 24, 16]] * 2 + [["data:image/png;base64,", True, 3, 3]]
        link = d.find_element("css selector", "p.image-link a")
        assert link.get_attribute("href") == REMOTE and link.get_attribute("rel") == "noopener noreferrer nofollow"
        body = d.find_element("id", "main").text
        assert "Which colour is the bar? <b>bold</b>" in body and "Contexts" in body and "a text context" in body
        assert "[image 1]" not in body and "iVBOR" not in body  # parts shown as parts, no base64 as text
        fetched = d.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
        assert not [u for u in fetched if "example.invalid" in u]  # the remote image was never requested
        assert not d.find_elements("css selector", "img:not(.case-image)")
        assert d.execute_script("return window.__xss") is None
    finally:
        d.quit()


@pytest.mark.chromium
@pytest.mark.skipif(WHY is not None, reason=f"browser test skipped: {WHY}")
def test_an_image_a_tool_returned_is_shown_in_its_trajectory_step(tmp_path: Path) -> None:
    from tests.support.browser import wait_until

    (tmp_path / "shot.png").write_bytes(png(5, 4))
    case = {"id": "agent-1", "input": "take a screenshot", "output": "done",
            "trajectory": [{"tool": "screenshot", "args": {}, "result": {"type": "image", "path": "shot.png"}}]}
    (tmp_path / "cases.jsonl").write_text(json.dumps(case) + "\n")
    (tmp_path / "results.jsonl").write_text(json.dumps({"schema_version": 1, "id": "agent-1", "status": "scored",
                                                        "score": 1.0}) + "\n")
    s = serve([tmp_path / "results.jsonl"], [tmp_path / "cases.jsonl"])
    d: Any = browser.start()
    try:
        d.get(s.url + "#/run/0/case/0")
        wait_until(d, lambda: len(d.find_elements("css selector", "img.case-image")) == 1)
        size = d.execute_script("const i = document.querySelector('img.case-image'); "
                                "return [i.complete, i.naturalWidth, i.naturalHeight]")
        assert size == [True, 5, 4]
        assert "iVBOR" not in d.find_element("id", "main").text  # the part, not its base64 as JSON text
    finally:
        d.quit()
        s.server.shutdown()
        s.server.server_close()
        from referee.view import close_app

        close_app(s.app)
