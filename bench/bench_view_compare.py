"""``referee view`` with two runs of 20,000 rows each, in headless Chromium: from the click on the compare link,
how long until the page shows a sign of work, and until the comparison is on screen.

Two results files of ``--rows`` rows (bench_view.py's generator; the second with a fifth of its scores changed)
are written to a temporary folder and served by ``referee view A B --port 0`` in a subprocess, as a user runs
it. The grid opens first (the first screen of several runs); then the bench clicks the top bar's "compare" link
``--wait`` seconds after the viewer printed its URL (a user reading the grid first; 0: at once) and, in the
page, a MutationObserver notes the time of the first sign of work (the "working..." note shown) and of the
comparison's verdict card, both against the click's own timestamp.

    .venv/bin/python bench/bench_view_compare.py [--rows 20000] [--runs 3] [--wait 0]

Needs Debian's chromium and chromium-driver and selenium (scripts/test installs it). Targets: a sign of work
within 100 ms of the click, the comparison on screen within 2 s.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support import browser  # noqa: E402

import bench_view  # noqa: E402

TARGET_SIGN_MS = 100
TARGET_SHOWN_S = 2.0

_WATCH = """
window.__t = {};
const t0 = performance.now();
window.__t.click = t0;
new MutationObserver(() => {
  const now = performance.now();
  const b = document.getElementById('busy');
  if (!('sign' in window.__t) && ((b && !b.hidden) || document.getElementById('compare-verdict'))) window.__t.sign = now;
  if (!('shown' in window.__t) && document.getElementById('compare-verdict')) window.__t.shown = now;
}).observe(document.body, {subtree: true, childList: true, attributes: true});
[...document.querySelectorAll('#runs-nav a')].find(a => a.textContent === 'compare').click();
"""


def make_runs(folder: Path, n: int) -> list[Path]:
    out = []
    for name, seed in (("base", 7), ("cand", 8)):
        sub = folder / name
        sub.mkdir()
        random.seed(seed)
        results, _ = bench_view.generate(sub, n)
        if name == "cand":
            rng = random.Random(3)
            rows = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
            for row in rows:
                if "score" in row and rng.random() < 0.2:
                    row["score"] = round(rng.random(), 3)
            results.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        out.append(results)
    return out


def one_run(runs: list[Path], wait: float) -> tuple[float, float]:
    proc = subprocess.Popen([sys.executable, "-m", "referee", "view", *map(str, runs), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    d = None
    try:
        assert proc.stdout is not None
        url = next(line.split()[2] for line in proc.stdout if line.startswith("serving on "))
        served = time.perf_counter()
        d = browser.start(1400, 1000)
        d.get(url)
        browser.wait_for(d, "#grid tr.grid-row")
        time.sleep(max(0.0, wait - (time.perf_counter() - served)))
        d.execute_script(_WATCH)
        browser.wait_until(d, lambda: d.execute_script("return 'shown' in window.__t"), timeout=120)
        t = d.execute_script("return window.__t")
        return (t.get("sign", float("inf")) - t["click"], (t["shown"] - t["click"]) / 1000)
    finally:
        if d is not None:
            d.quit()
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--wait", type=float, default=0.0,
                    help="Seconds between the viewer's URL and the click (0: the click as soon as the grid shows).")
    args = ap.parse_args()
    why = browser.missing()
    if why:
        raise SystemExit(f"needs a browser: {why}")
    with tempfile.TemporaryDirectory() as tmp:
        runs = make_runs(Path(tmp), args.rows)
        got = [one_run(runs, args.wait) for _ in range(args.runs)]
    signs, shown = [g[0] for g in got], [g[1] for g in got]
    print(f"2 x {args.rows:,} rows, click {args.wait:g} s after the URL, {args.runs} run(s)")
    print(f"sign of work after the click: median {statistics.median(signs):.0f} ms, max {max(signs):.0f} ms "
          f"(target {TARGET_SIGN_MS} ms)")
    print(f"comparison on screen:         median {statistics.median(shown):.2f} s, max {max(shown):.2f} s "
          f"(target {TARGET_SHOWN_S} s)")


if __name__ == "__main__":
    main()
