"""``referee view`` on a large results file (1,000,000 rows by default): time to ready, the first grid page, the
first table page, the index, search, the summary, and the viewer's peak memory.

The results file (judge rows with a rationale, a criterion with evidence, cost and latency; 3% unscored, 2%
ungrounded) and a matching cases file are generated in a temporary folder. ``referee view`` runs as a user runs
it, in a subprocess with ``--port 0``; the clock starts just before the process is spawned (interpreter start-up
and imports count) and "ready" is when it prints the URL it serves. Then, over HTTP:

- the first page of the grid (the first screen of several runs: ids and verdicts; each output once the cases
  file is read, in the background),
- the first page of the table,
- a filter that needs the lazy row index (flag=ungrounded; waits for the background index if still building),
- a full-text search over input, output and rationale,
- a sorted, filtered page (score descending, failures only),
- the summary of ``referee score`` (``--n-boot`` resamples).

    .venv/bin/python bench/bench_view.py [--rows 1000000] [--runs 1]

Targets: ready in under 3 s, the first grid page in under 0.2 s, under 1.5 GB peak resident memory.
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
import urllib.request
from pathlib import Path
from typing import Any

TARGET_READY_S = 3.0
TARGET_GRID_S = 0.2
TARGET_RSS_GB = 1.5
CATS = ["billing", "refunds", "login", "shipping", "privacy", "outage", "pricing", "api"]


def generate(folder: Path, n: int) -> tuple[Path, Path]:
    rng = random.Random(7)
    results, cases = folder / "results.jsonl", folder / "cases.jsonl"
    with open(results, "w", encoding="utf-8") as fr, open(cases, "w", encoding="utf-8") as fc:
        for i in range(n):
            cid = f"case-{i:06d}"
            topic = rng.choice(["refund", "password", "invoice", "outage", "export"])
            fc.write(json.dumps({"id": cid, "input": f"Question {i} about the {topic}",
                                 "output": f"The {topic} answer number {i}: see the policy.",
                                 "category": rng.choice(CATS)}) + "\n")
            row = {"schema_version": 1, "id": cid, "category": rng.choice(CATS), "evaluator": "judge",
                   "judge": {"provider": "openai", "model": "gpt-4o-mini"},
                   "cost_usd": round(rng.random() / 1000, 6), "latency_ms": round(rng.random() * 2000, 1),
                   "rationale": f"The answer on the {topic} misses step {i % 7} of the policy.",
                   "criteria": [{"id": "accuracy", "score": 0.5, "raw_score": 3, "scale": "1-5",
                                 "rationale": "partly right", "evidence": [f"{topic} answer"],
                                 "grounded": rng.random() > 0.02}]}
            if rng.random() < 0.03:
                row.update(status="unscored", raw_reply="no verdict")
            else:
                row.update(status="scored", score=round(rng.random(), 2))
            fr.write(json.dumps(row) + "\n")
    return results, cases


def _get(url: str) -> tuple[float, dict[str, Any]]:
    t = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as r:
        data = json.loads(r.read())
    return time.perf_counter() - t, data


def _cpu_seconds(pid: int) -> float | None:
    """user + system CPU of a running process (Linux /proc), or None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        import os

        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def _peak_rss_gb(pid: int) -> float | None:
    """The process's peak resident memory (VmHWM, Linux), or None."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1e6
    except (OSError, ValueError, IndexError):
        return None
    return None


def one_run(results: Path, cases: Path, n_boot: int) -> dict[str, float]:
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "referee", "view", str(results), "--cases", str(cases),
                             "--port", "0", "--labels", str(results.with_name("labels.jsonl")),
                             "--n-boot", str(n_boot)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    url = ""
    try:
        for line in proc.stdout:
            if line.startswith("serving on "):
                url = line.split()[2]
                break
        ready = time.perf_counter() - t0
        if not url:
            raise SystemExit("referee view did not start")
        out = {"ready": ready}
        cpu = _cpu_seconds(proc.pid)
        if cpu is not None:  # less sensitive than wall time to other load on the machine
            out["ready, CPU of the viewer"] = cpu
        out["first grid page"], grid = _get(url + "api/grid?limit=50")
        assert grid["total"] == sum(1 for _ in open(results, "rb"))
        out["first page"], page = _get(url + "api/runs/0/cases?limit=50")
        assert page["total"] == sum(1 for _ in open(results, "rb"))
        out["flag filter (index)"], _ = _get(url + "api/runs/0/cases?flag=ungrounded&limit=50")
        out["since start, index ready"] = time.perf_counter() - t0
        out["full-text search"], found = _get(url + "api/runs/0/cases?q=password%20answer%20number%2042&limit=50")
        assert found["total"] >= 1
        out["sorted + filtered page"], _ = _get(url + "api/runs/0/cases?passed=false&sort=score&order=desc")
        out["summary (referee score)"], _ = _get(url + "api/runs/0/summary")
        while True:  # the grid with its outputs, once the background read of the cases file is done
            t, grid = _get(url + "api/grid?limit=50")
            if not grid["outputs_pending"]:
                break
            time.sleep(0.2)
        out["grid page with outputs"] = t
        out["since start, outputs shown"] = time.perf_counter() - t0
        rss = _peak_rss_gb(proc.pid)
        if rss is not None:
            out["peak memory (GB)"] = rss
        return out
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--n-boot", type=int, default=2000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results, cases = generate(Path(tmp), args.rows)
        size = results.stat().st_size / 1e6
        print(f"referee view on {args.rows:,} rows ({size:.1f} MB results + cases file), {args.runs} run(s)")
        runs = [one_run(results, cases, args.n_boot) for _ in range(args.runs)]
    for key in runs[0]:
        vals = [r[key] for r in runs]
        unit = "" if "GB" in key else " s"
        print(f"  {key:28s} median {statistics.median(vals):7.3f}{unit}   (runs: "
              f"{', '.join(f'{v:.3f}' for v in vals)})")
    ready = statistics.median(r["ready"] for r in runs)
    grid = statistics.median(r["first grid page"] for r in runs)
    rss = max((r.get("peak memory (GB)", 0.0) for r in runs), default=0.0)
    ok = ready < TARGET_READY_S and grid < TARGET_GRID_S and rss < TARGET_RSS_GB
    print(f"ready in {ready:.2f} s (target < {TARGET_READY_S:g} s), first grid page {grid:.3f} s "
          f"(< {TARGET_GRID_S:g} s), peak memory {rss:.2f} GB (< {TARGET_RSS_GB:g} GB): "
          + ("OK" if ok else "OVER TARGET"))
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
