"""The run history's costs: rows/s into SQLite and PostgreSQL, its size against the JSONL files, and what
recording adds to the judge benchmark (store on vs --no-store, interleaved pairs).

    .venv/bin/python bench/bench_store.py --part throughput      # 20,000 judge-shaped rows, batches of 1,000
    .venv/bin/python bench/bench_store.py --part size            # one run, and 100 reruns of it, vs JSONL
    .venv/bin/python bench/bench_store.py --part overhead        # bench_judge N=10,000 c256, 5 pairs
    .venv/bin/python bench/bench_store.py                        # all three

PostgreSQL: a temporary cluster started as in the tests (tests/support/postgres.py), or --pg-url URL. Targets
(issue 33): >= 50,000 rows/s into SQLite, >= 20,000 into PostgreSQL; one run <= 1.3x its JSONL bytes; 100 reruns
<= 0.2x their 100 JSONL files; recording adds <= 2% wall and <= 0.1 CPU-s per 1,000 rows to the judge benchmark.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

WORDS = ("the answer cites the refund policy and gives the correct window of thirty days but omits the "
         "exception for opened items which the reference requires").split()


def judge_rows(n: int, seed: int = 0, *, latency_seed: int | None = None) -> list[Any]:
    """Rows shaped like `referee judge`'s: a rationale, two criteria, usage, the judge, a raw reply."""
    from referee.results import CriterionScore, JudgeInfo, ResultRow, Usage

    rng = random.Random(seed)
    lat = random.Random(seed if latency_seed is None else latency_seed)
    rows = []
    for i in range(n):
        score = rng.choice((0.0, 0.25, 0.5, 0.75, 1.0))
        why = " ".join(rng.choices(WORDS, k=rng.randint(15, 40)))
        rows.append(ResultRow(
            id=f"case-{i:06d}", status="scored", score=score, passed=score >= 0.7, category=f"cat{i % 7}",
            rationale=why, evaluator="judge", latency_ms=round(lat.uniform(150, 400), 1),
            criteria=[CriterionScore(id="accuracy", status="scored", score=score, rationale=why[:80]),
                      CriterionScore(id="tone", status="scored", score=1.0, rationale="polite")],
            judge=JudgeInfo(provider="openai", model="bench-judge", template_hash="ab" * 32),
            usage=Usage(input_tokens=rng.randint(300, 900), output_tokens=rng.randint(40, 120), calls=1),
            raw_reply=json.dumps({"accuracy": {"score": score, "rationale": why}, "overall_score": score})))
    return rows


def _store(url: str) -> Any:
    from referee.store import open_store

    return open_store(url)


def _begin(st: Any, run_id: str) -> None:
    from referee.results import RunManifest
    from referee.store._recorder import run_values

    m = RunManifest(kind="judge", run_id=run_id)
    st.begin_run(run_values(m, results_path=None, git={}))


def throughput(url: str, n: int = 20_000, batch: int = 1_000, *, recorder_writer: bool = False) -> float:
    """Rows per second through ``Store.add_rows``, or (``recorder_writer``) through the standard-library writer a
    run's recorder uses on a local SQLite file."""
    rows = judge_rows(n)
    st = _store(url)
    if recorder_writer:
        from referee.store._sqlite_writer import open_writer

        st.close()
        st = open_writer(url, timeout_s=30)
        assert st is not None, "the file is not at the head revision"
    try:
        _begin(st, "t" * 32)
        t0 = time.perf_counter()
        for i in range(0, n, batch):
            st.add_rows("t" * 32, rows[i:i + batch], first_seq=i)
        return n / (time.perf_counter() - t0)
    finally:
        st.close()


def _sqlite_bytes(path: Path) -> int:
    import sqlite3

    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def size(folder: Path, n: int = 1_000, reruns: int = 100) -> dict[str, float]:
    from referee.results import ResultWriter

    rows = judge_rows(n)
    jsonl = folder / "one.jsonl"
    with ResultWriter(jsonl, append=False) as w:
        w.write_all(rows)
    jsonl_bytes = jsonl.stat().st_size
    empty = folder / "empty.sqlite"
    _store(f"sqlite:///{empty}").close()
    base = _sqlite_bytes(empty)

    one = folder / "one.sqlite"
    st = _store(f"sqlite:///{one}")
    _begin(st, "1" * 32)
    st.add_rows("1" * 32, rows)
    st.close()
    one_bytes = _sqlite_bytes(one) - base

    many = folder / "many.sqlite"
    st = _store(f"sqlite:///{many}")
    total_jsonl = 0
    for k in range(reruns):
        # A rerun through the response cache: the same verdicts and rationales, new latencies.
        again = judge_rows(n, latency_seed=1000 + k)
        with ResultWriter(folder / "rerun.jsonl", append=False) as w:
            w.write_all(again)
        total_jsonl += (folder / "rerun.jsonl").stat().st_size
        _begin(st, f"{k:032d}")
        st.add_rows(f"{k:032d}", again)
    st.close()
    many_bytes = _sqlite_bytes(many) - base
    return {"rows": n, "jsonl_bytes": jsonl_bytes, "one_run_bytes": one_bytes, "one_ratio": one_bytes / jsonl_bytes,
            "reruns": reruns, "reruns_jsonl_bytes": total_jsonl, "reruns_bytes": many_bytes,
            "reruns_ratio": many_bytes / total_jsonl, "empty_store_bytes": base}


def overhead(pairs: int, n: int, concurrency: int, folder: Path) -> dict[str, float]:
    import bench_judge

    bench_judge._compile_referee()  # as installing a wheel does: each start reads bytecode, not source
    proc, url = bench_judge._start_server(0.2)
    on: list[dict[str, float]] = []
    off: list[dict[str, float]] = []
    try:
        for k in range(pairs):
            store = f"sqlite:///{folder / f'h{k}.sqlite'}"
            order = [("on", ["--store", store]), ("off", ["--no-store"])]
            if k % 2:
                order.reverse()  # interleaved, alternating which goes first
            for name, extra in order:
                r = bench_judge.run_once(n, 0.2, concurrency, url, folder, extra)
                (on if name == "on" else off).append(r)
                print(f"  pair {k + 1} store {name:<3}: wall {r['wall_s']:.2f}s cpu {r['cpu_s']:.2f}s", flush=True)
    finally:
        proc.terminate()
        proc.wait()
    med = statistics.median
    return {"n": n, "concurrency": concurrency, "pairs": pairs,
            "wall_on": med(r["wall_s"] for r in on), "wall_off": med(r["wall_s"] for r in off),
            "cpu_on": med(r["cpu_s"] for r in on), "cpu_off": med(r["cpu_s"] for r in off),
            "wall_pct": 100 * (med(r["wall_s"] / s["wall_s"] for r, s in zip(on, off, strict=True)) - 1),
            "cpu_per_1000": 1000 * med(r["cpu_s"] - s["cpu_s"] for r, s in zip(on, off, strict=True)) / n}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=("throughput", "size", "overhead", "all"), default="all")
    ap.add_argument("--pg-url", default=None, help="a PostgreSQL database to measure (default: start one)")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--concurrency", type=int, default=256)
    args = ap.parse_args()
    print(f"load average {'/'.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory(prefix="referee-bench-store-") as tmp:
        folder = Path(tmp)
        if args.part in ("throughput", "all"):
            rec = throughput("sqlite:///" + str(folder / "w.sqlite"), recorder_writer=True)
            print(f"SQLite, the recorder's writer: {rec:,.0f} rows/s (target >= 50,000)")
            print(f"SQLite, Store.add_rows (imports, merges): {throughput('sqlite:///' + str(folder / 't.sqlite')):,.0f} "
                  "rows/s")
            server = None
            url = args.pg_url
            if url is None:
                try:
                    from tests.support.postgres import start_server

                    server = start_server()
                    db = server.new_database()
                    url = server.url(db)
                except Exception as exc:  # noqa: BLE001 - reported, the rest still runs
                    print(f"PostgreSQL: not measured ({exc})")
            if url is not None:
                try:
                    print(f"PostgreSQL: {throughput(url):,.0f} rows/s (target >= 20,000)")
                finally:
                    if server is not None:
                        server.stop()
        if args.part in ("size", "all"):
            s = size(folder)
            print(f"size, one run of {s['rows']} rows: {s['one_run_bytes']:,} bytes in the store vs "
                  f"{s['jsonl_bytes']:,} JSONL = {s['one_ratio']:.2f}x (target <= 1.3x)")
            print(f"size, {s['reruns']} reruns: {s['reruns_bytes']:,} bytes vs {s['reruns_jsonl_bytes']:,} JSONL = "
                  f"{s['reruns_ratio']:.3f}x (target <= 0.2x); an empty store is {s['empty_store_bytes']:,} bytes")
        if args.part in ("overhead", "all"):
            o = overhead(args.pairs, args.n, args.concurrency, folder)
            print(f"judge N={o['n']} c{o['concurrency']}, {o['pairs']} interleaved pairs (medians): wall "
                  f"{o['wall_on']:.2f}s on vs {o['wall_off']:.2f}s off ({o['wall_pct']:+.1f}%, target <= 2%); CPU "
                  f"{o['cpu_on']:.2f}s vs {o['cpu_off']:.2f}s ({o['cpu_per_1000']:+.3f} CPU-s per 1,000 rows, "
                  "target <= 0.1)")


if __name__ == "__main__":
    main()
