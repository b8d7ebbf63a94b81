"""``referee view`` over a large run history: the history page's requests on a store of many runs.

A store (SQLite by default, or ``--store postgresql://...``, which must be empty) is filled with ``--runs`` runs
(10,000 by default) over 20 suites, 5 branches and 1,000 commits, each with its summary columns as the recorder
writes them, and ``--rows-per-run`` rows each (default 10; the issue's one-off figure is 1,000). ``referee view
--store URL --port 0`` then runs as a user runs it, in a subprocess; over HTTP, best of ``--repeat``:

- the history page: ``/api/history`` (the newest 100 runs and the filters' facets) and ``/api/history/trend`` (one
  suite's trend over its newest 50 commits, both charts), fetched together as the page does,
- the same filtered by a suite and a branch,
- a stored run opened (exported and loaded as a run of the viewer).

    .venv/bin/python bench/bench_history.py [--runs 10000] [--rows-per-run 10] [--store URL | --postgres]

Target: the history page in under 1 s.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

TARGET_PAGE_S = 1.0


def fill(url: str, runs: int, rows_per_run: int, suites: int = 20) -> float:
    from sqlalchemy import insert

    from referee.results import ResultRow, RunManifest
    from referee.store import _schema as s
    from referee.store import open_store
    from referee.store._recorder import run_values

    t0 = time.perf_counter()
    with open_store(url) as st:
        batch: list[dict[str, object]] = []
        for i in range(runs):
            suite = f"suite-{i % suites}"
            m = RunManifest(kind="suite", run_id=f"{i:032x}", created_at="2026-01-01T00:00:00+00:00",
                            extra={"suite": {"name": suite, "gates": {"fail_under": 0.7}}})
            v = run_values(m, results_path=f"r{i}.jsonl", git={"commit": f"{i // 10:040x}",
                                                               "branch": f"branch-{i % 5}", "dirty": False})
            p = 0.6 + 0.3 * ((i * 7919) % 100) / 100
            v.update(status="complete", started_at=f"2026-{1 + i * 11 // runs:02d}-01T00:00:{i % 60:02d}.{i:06d}",
                     finished_at="2026-12-31T00:00:00", n_rows=rows_per_run, n_scored=rows_per_run, n_unscored=0,
                     n_error=0, pass_rate=p, pass_rate_lo=p - 0.05, pass_rate_hi=min(1.0, p + 0.05), mean=p,
                     mean_lo=p - 0.04, mean_hi=min(1.0, p + 0.04))
            batch.append(v)
            if len(batch) == 2000 or i == runs - 1:
                with st.engine.begin() as conn:
                    conn.execute(insert(s.runs), batch)
                for r in batch if rows_per_run else []:
                    st.add_rows(str(r["id"]), [ResultRow(id=f"c{j}", status="scored", score=float(j % 2),
                                                         passed=j % 2 == 1, evaluator="suite",
                                                         rationale=f"row {j} of run {r['id']}")
                                               for j in range(rows_per_run)])
                batch = []
        st.tag(f"{runs - 1:032x}", ["nightly"])
    return time.perf_counter() - t0


def lookups(url: str, a: argparse.Namespace, cwd: str) -> None:
    """The history's other reads: the library calls in this process, the commands as a user runs them."""
    from referee.store import find_run, list_runs, open_store

    def cli(*args: str) -> float:
        def once() -> None:
            subprocess.run([sys.executable, "-m", "referee", *args], cwd=cwd, check=True, capture_output=True)
        return timed(once, a.repeat)

    suite = "suite-3"
    listed = timed(lambda: list_runs(url, limit=20), a.repeat)
    with open_store(url) as st:
        last = timed(lambda: find_run(st, "last"), a.repeat)
        branch = timed(lambda: find_run(st, "branch-3"), a.repeat)
        run_id = find_run(st, "last").id
        rows = timed(lambda: st.rows(run_id), a.repeat)
        n_trend = len(st.list_runs(suite=suite, status="complete", limit=1000))
    bare = cli("--version")
    print(f"list_runs(limit=20): {listed * 1000:.0f} ms; a baseline found by name: last {last * 1000:.0f} ms, "
          f"a branch {branch * 1000:.0f} ms; its {a.rows_per_run} rows loaded: {rows * 1000:.0f} ms")
    print(f"commands (best of {a.repeat}, wall): referee --version {bare * 1000:.0f} ms; "
          f"runs list {cli('runs', 'list', '--store', url) * 1000:.0f} ms; "
          f"runs trend over {n_trend} runs {cli('runs', 'trend', '--store', url, '--suite', suite, '--limit', '1000', '--json') * 1000:.0f} ms")


def fetch(base: str, path: str, body: object = None) -> object:
    req = urllib.request.Request(base + path, data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json", "Origin": base})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.load(r)


def timed(fn: object, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--rows-per-run", type=int, default=10)
    ap.add_argument("--store", default=None, help="an empty PostgreSQL database (default: a fresh SQLite file)")
    ap.add_argument("--postgres", action="store_true",
                    help="start a temporary PostgreSQL cluster as the tests do (tests/support/postgres.py) and fill "
                         "a new database of it")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--suites", type=int, default=20, help="runs spread over this many suites (10: 1,000 runs each "
                                                            "at 10,000 runs, for a trend over 1,000 runs)")
    a = ap.parse_args()
    server = None
    if a.postgres:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from tests.support.postgres import start_server

        server = start_server()
        a.store = server.url(server.new_database())
    try:
        return measure(a)
    finally:
        if server is not None:
            server.stop()


def measure(a: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="referee-bench-history-") as tmp:
        url = a.store or f"sqlite:///{Path(tmp) / 'history.sqlite'}"
        took = fill(url, a.runs, a.rows_per_run, a.suites)
        print(f"store: {a.runs} runs, {a.runs * a.rows_per_run} rows, filled in {took:.1f} s "
              f"({'PostgreSQL' if a.store else 'SQLite'})")
        lookups(url, a, tmp)
        proc = subprocess.Popen([sys.executable, "-m", "referee", "view", "--store", url, "--port", "0"], cwd=tmp,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            assert proc.stdout is not None
            base = ""
            for line in proc.stdout:
                if "serving on" in line:
                    base = line.split("serving on ", 1)[1].split()[0].rstrip("/")
                    break
            if not base:
                raise SystemExit("referee view did not start")
            pool = ThreadPoolExecutor(2)

            def page(q: str = "") -> None:
                a1 = pool.submit(fetch, base, "/api/history" + q)
                a2 = pool.submit(fetch, base, "/api/history/trend" + q)
                a1.result()
                a2.result()

            first = timed(page, 1)
            page_s = timed(page, a.repeat)
            filtered = timed(lambda: page("?suite=suite-3&branch=branch-3"), a.repeat)
            open_s = timed(lambda: fetch(base, "/api/history/open", {"runs": [f"{a.runs // 2:032x}"]}), 1)
            ok = "under" if page_s < TARGET_PAGE_S else "OVER"
            print(f"history page (runs + trend), first: {first * 1000:.0f} ms; best of {a.repeat}: "
                  f"{page_s * 1000:.0f} ms ({ok} the {TARGET_PAGE_S:.0f} s target)")
            print(f"filtered by suite and branch: {filtered * 1000:.0f} ms")
            print(f"a stored run opened ({a.rows_per_run} rows): {open_s * 1000:.0f} ms")
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
