"""CPU of ``referee judge`` A/B, interleaved: another source tree (``--old-src``, e.g. a worktree of an older main)
against this one with the run history on and with ``--no-store``, in rotating order, in the same minutes.

On a shared machine CPU per run drifts with the load by tens of percent within minutes; runs of the three variants
taken side by side (and their per-triple ratios) stay comparable when runs taken minutes apart do not.

    .venv/bin/python bench/bench_judge_ab.py --old-src /path/to/old/src --triples 5   # N=1000, c32
    .venv/bin/python bench/bench_judge_ab.py --old-src /path/to/old/src --n 10000 --concurrency 256 --triples 3

Each variant is a ``python -m referee judge`` subprocess with ``PYTHONPATH`` set to its source tree, against one
fast local server (``python -m referee.testing --fast``); CPU is the child's user+sys (``RUSAGE_CHILDREN``). The old
tree is copied to a temporary folder and byte-compiled there (never written to), the new one byte-compiled in
place, as ``bench_judge.py`` does. The run history goes to a SQLite file of each tree's own in the temporary folder
(``REFEREE_STORE``), created by one untimed run of each variant first (a store's first use migrates it: a one-off,
not a run's cost).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench_judge as bj

NEW_SRC = Path(__file__).resolve().parents[1] / "src"


def _compile(src: Path) -> None:
    subprocess.run([sys.executable, "-c", "import compileall, sys; compileall.compile_dir(sys.argv[1], quiet=1)",
                    str(src)], check=True)


def _run(src: Path, extra: list[str], url: str, folder: Path, n: int, concurrency: int,
         store: str) -> tuple[float, float]:
    out = folder / "results.jsonl"
    for p in (out, out.with_name("results.manifest.json")):
        p.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "referee", "judge", str(folder / "cases.jsonl"), "--template",
           str(folder / "judge.md"), "--out", str(out), "--provider", "openai", "--base-url", url + "/v1",
           "--model", "bench-judge", "--concurrency", str(concurrency), "--no-cache", *extra]
    env = {**os.environ, "PYTHONPATH": str(src), "OPENAI_API_KEY": "sk-bench-not-a-real-key", "REFEREE_STORE": store}
    bj._take_stats(url)
    cpu0 = bj._child_cpu()
    started = time.time()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=folder)
    ended = time.time()
    cpu = bj._child_cpu() - cpu0
    phases = bj._phases(url, started, ended)
    if done.returncode != 0:
        raise SystemExit(f"referee judge ({src}) exited {done.returncode}:\n{done.stderr}")
    scored = sum(1 for line in out.read_text().splitlines() if '"score"' in line)
    if scored != n:
        raise SystemExit(f"expected {n} scored rows from {src}, found {scored}")
    return cpu, phases.get("startup_s", float("nan"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old-src", required=True, type=Path, help="the other tree's src/ folder (read only)")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--triples", type=int, default=5, help="rounds of (old, new, new --no-store), order rotating")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="referee-ab-") as tmp:
        folder = Path(tmp)
        old = folder / "old-src"
        shutil.copytree(args.old_src, old, ignore=shutil.ignore_patterns("__pycache__"))
        _compile(old)
        _compile(NEW_SRC)
        bj._write_inputs(folder, args.n)
        variants = {"old": (old, []), "new": (NEW_SRC, []), "new --no-store": (NEW_SRC, ["--no-store"])}
        names = list(variants)
        # A store of its own for each tree: a newer schema is refused (never altered) by the older tree, which then
        # records nothing, after paying for the attempt. (A tree from before the run history ignores the variable.)
        stores = {"old": f"sqlite:///{folder / 'old.sqlite'}", "new": f"sqlite:///{folder / 'new.sqlite'}",
                  "new --no-store": f"sqlite:///{folder / 'new.sqlite'}"}
        cpu: dict[str, list[float]] = {k: [] for k in names}
        server, url = bj._start_server(args.latency)
        try:
            # Untimed: the store created and migrated (a user's first run pays that once), the files cached.
            for name in names:
                _run(*variants[name], url, folder, args.n, args.concurrency, stores[name])
            for i in range(args.triples):
                order = names[i % 3:] + names[:i % 3]
                line = []
                for name in order:
                    src, extra = variants[name]
                    c, startup = _run(src, extra, url, folder, args.n, args.concurrency, stores[name])
                    cpu[name].append(c)
                    line.append(f"{name} {c:.2f} s (start-up {startup:.2f} s)")
                print(f"  triple {i + 1}: " + ", ".join(line) + f"  (load {bj._load()})", flush=True)
        finally:
            server.terminate()
            server.wait(10)
    per = 1000 / args.n
    print(f"referee judge, N={args.n}, concurrency {args.concurrency}, {args.triples} interleaved triples "
          "(CPU-s per 1000 judged cases, median and lowest):")
    for name in names:
        print(f"  {name:15} {statistics.median(cpu[name]) * per:.3f}  (lowest {min(cpu[name]) * per:.3f})")
    for a, b in (("new", "old"), ("new --no-store", "old"), ("new", "new --no-store")):
        ratios = [x / y for x, y in zip(cpu[a], cpu[b], strict=True)]
        print(f"  {a} / {b}: median of per-triple ratios {statistics.median(ratios):.3f}")
    diffs = [(x - y) * per for x, y in zip(cpu["new"], cpu["new --no-store"], strict=True)]
    print(f"  recording (store on - off): median {statistics.median(diffs):.3f} CPU-s per 1000 rows")


if __name__ == "__main__":
    main()
