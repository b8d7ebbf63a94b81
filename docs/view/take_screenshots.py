"""Take the screenshots of docs/view.md in headless Chromium (Debian's chromium + chromium-driver, via selenium).

Runs the built-in example with the local fake judge (``referee.testing``) into a temporary folder, serves its
runs with ``referee view`` and saves one PNG per view next to this script:

    .venv/bin/python docs/view/take_screenshots.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))  # tests.support.browser: the same driver set-up as the tests

from referee.cli import cli  # noqa: E402
from referee.testing import FakeLLMServer, schema_responder  # noqa: E402
from referee.view import ViewServer, build_app, close_app  # noqa: E402
from tests.support import browser  # noqa: E402

SHOTS = [
    # (file, hash route, CSS that marks the view as ready, window height)
    ("run.png", "#/run/1", "#stat-pass-rate", 1300),
    ("case.png", "#/run/1/case/{refund-01}", "#review-panel", 1250),
    ("compare.png", "#/compare/0/1?filter=regressions", "#compare-table", 1150),
    ("review.png", "#/run/1/review?kind=uncertain&n=5", "#review-panel", 1100),
    ("pairwise.png", "#/run/2/case/0", "#review-panel", 1100),
    ("pairwise-blind.png", "#/run/2/review?kind=random&n=3&seed=2", "#pick-left", 800),
    ("trajectory.png", "#/run/3/case/{forbidden-delete}", "#review-panel", 1200),
]


def main() -> None:
    why = browser.missing()
    if why:
        raise SystemExit(why)
    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer(responder=schema_responder) as srv:
        os.environ.update(REFEREE_PROVIDER="openai", REFEREE_BASE_URL=srv.openai_base_url,
                          REFEREE_CACHE_DIR=str(Path(tmp) / "cache"))
        ex = Path(tmp) / "ex"
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            assert cli(["example", "--dir", "ex"]) == 0
        finally:
            os.chdir(cwd)
        files = [ex / "suite_before.jsonl", ex / "suite_after.jsonl", ex / "pairwise.jsonl", ex / "agent_checks.jsonl"]
        cases = [ex / "after.jsonl", ex / "pairs.jsonl", ex / "agent" / "trajectories.jsonl"]
        app = build_app([str(f) for f in files], cases=[str(c) for c in cases])
        for r in app.runs.values():
            r.index()
        server = ViewServer(app, "127.0.0.1", 0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        # Two labels, so the table and the agreement line show them.
        import json
        import urllib.request

        for cid, passed in (("refund-01", False), ("refund-02", True)):
            req = urllib.request.Request(server.url + "api/labels", method="POST",
                                         data=json.dumps({"run": "1", "id": cid, "passed": passed,
                                                          "reviewer": "support-lead"}).encode(),
                                         headers={"Content-Type": "application/json"})
            urllib.request.urlopen(req).read()
        d = browser.start(1400, 1000)
        try:
            from selenium.webdriver.common.by import By
            from selenium.webdriver.support import expected_conditions as ec
            from selenium.webdriver.support.ui import WebDriverWait

            d.get(server.url)
            d.execute_script("localStorage.setItem('referee.reviewer', 'support-lead')")
            d.refresh()
            for name, route, ready, height in SHOTS:
                if "{" in route:  # rows are written as they complete: find the case's row by its id
                    run = route.split("/")[2]
                    cid = route.split("{")[1].rstrip("}")
                    route = route.split("{")[0] + str(app.runs[run].table.ids.index(cid))
                d.set_window_size(1400, height)
                d.get(server.url + "#/")
                d.get(server.url + route)
                WebDriverWait(d, 20).until(ec.presence_of_element_located((By.CSS_SELECTOR, ready)))
                time.sleep(0.8)  # the summary and agreement arrive after the table
                d.save_screenshot(str(HERE / name))
                print(f"wrote {HERE / name}")
        finally:
            d.quit()
            server.shutdown()
            server.server_close()
            close_app(app)


if __name__ == "__main__":
    main()
