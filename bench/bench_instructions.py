"""Instructions, not seconds: `referee judge` (and `referee monitor`) counted by Valgrind's callgrind, thread by thread.

CPU seconds on a shared 2-core machine move by tens of percent between runs minutes apart (`bench_judge_ab.py`
measured one tree at 1.37-1.84 CPU-s per 1,000 cases within ten minutes). The number of instructions a run
executes barely moves: the same command twice differs by about 0.01%. So a change of 1% in the work a run does,
invisible in CPU seconds without dozens of interleaved runs, is read here from one run of each variant.

    .venv/bin/python bench/bench_instructions.py --old-src /path/to/old/src          # judge: old, new, --no-store
    .venv/bin/python bench/bench_instructions.py --monitor --n 1000                  # monitor vs judge, same cases
    .venv/bin/python bench/bench_instructions.py --monitor --sizes 250,1000          # ... fixed and per trace
    .venv/bin/python bench/bench_instructions.py --monitor --first-request            # ... up to the first call

What it cannot show: time spent waiting (instructions are not seconds: a cache miss, a page fault or a system
call costs time and no instructions here), and the kernel's share. Callgrind runs the threads of a process one at
a time, so work that depends on timing (how many rows the run-history thread finds per write) can differ from a
normal run; the event loop's work per request does not. Valgrind is needed (Debian's `valgrind`).

Each variant is one `python -m referee ...` under `valgrind --tool=callgrind --separate-threads=yes` against one
local server (`python -m referee.testing --fast`); the figures are Valgrind's instruction counts ("Ir"), per
thread: the main thread (the event loop) and every other thread (the run history's writer; executor threads).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import bench_judge as bj  # noqa: E402 - the server, the inputs and the template the CPU benchmarks use
import bench_monitor as bm  # noqa: E402 - the same traces and suite as the monitor's wall-time benchmark
from bench_judge_ab import _compile  # noqa: E402 - a tree byte-compiled as the CPU A/B does it

NEW_SRC = Path(__file__).resolve().parents[1] / "src"
_TOTAL = re.compile(rb"^(?:summary|totals): (\d+)", re.M)


def counted(cmd: list[str], env: dict[str, str], folder: Path, name: str) -> list[int]:
    """Instructions of each thread of ``cmd`` (the main thread first), from one run under callgrind."""
    prefix = folder / f"cg-{name}"
    vg = ["valgrind", "--tool=callgrind", "--separate-threads=yes", f"--callgrind-out-file={prefix}.out", "-q"]
    done = subprocess.run([*vg, *cmd], env=env, capture_output=True, text=True, cwd=folder)
    if done.returncode != 0:
        raise SystemExit(f"{name} exited {done.returncode}:\n{done.stderr[-3000:]}")
    files = sorted(folder.glob(f"cg-{name}.out-*"), key=lambda p: int(p.name.rsplit("-", 1)[1]))
    counts = []
    for f in files:
        m = _TOTAL.search(f.read_bytes())
        counts.append(int(m.group(1)) if m else 0)
        f.unlink()
    if not counts:
        raise SystemExit(f"callgrind wrote no counts for {name}")
    return counts


# ``python -c`` in place of ``python -m referee``: referee's command line, ended (``os._exit``) when it sends its
# first request, so the count is what comes before the first call (imports, reading, setting up), where a command
# cannot overlap its work with calls in flight.
_UNTIL_FIRST_REQUEST = """
import os, sys
import aiohttp
async def _first_request(self, *args, **kwargs):
    os._exit(0)
aiohttp.ClientSession._request = _first_request
sys.argv[0] = "referee"
from referee.cli import main
main()
"""


def _referee(args: argparse.Namespace) -> list[str]:
    return [sys.executable, "-c", _UNTIL_FIRST_REQUEST] if args.first_request else [sys.executable, "-m", "referee"]


def _judge_flags(url: str, concurrency: int) -> list[str]:
    return ["--provider", "openai", "--base-url", url + "/v1", "--model", "bench-judge", "--concurrency",
            str(concurrency), "--no-cache"]


def _judge_cmd(folder: Path, url: str, concurrency: int, cases: Path, out: Path,
               referee: list[str] | None = None) -> list[str]:
    return [*(referee or [sys.executable, "-m", "referee"]), "judge", str(cases), "--template",
            str(folder / "judge.md"), "--out", str(out), *_judge_flags(url, concurrency)]


def _row(name: str, counts: list[int], ref: int | None) -> str:
    total = sum(counts)
    rest = total - counts[0]
    ratio = f"  x{total / ref:.4f}" if ref else ""
    return (f"  {name:16} {total / 1e9:7.4f} G  (main thread {counts[0] / 1e9:.4f} G, other threads "
            f"{rest / 1e9:.4f} G in {len(counts) - 1}){ratio}")


def judge_variants(args: argparse.Namespace, folder: Path, url: str) -> None:
    cases, _ = bj._write_inputs(folder, args.n)
    variants: dict[str, tuple[Path, list[str], str]] = {}
    if args.old_src:
        old = folder / "old-src"
        shutil.copytree(args.old_src, old, ignore=shutil.ignore_patterns("__pycache__"))
        _compile(old)
        variants["old"] = (old, [], f"sqlite:///{folder / 'old.sqlite'}")
    variants["new"] = (NEW_SRC, [], f"sqlite:///{folder / 'new.sqlite'}")
    variants["new --no-store"] = (NEW_SRC, ["--no-store"], f"sqlite:///{folder / 'new.sqlite'}")
    results: dict[str, list[int]] = {}
    for name, (src, extra, store) in variants.items():
        env = {**os.environ, "PYTHONPATH": str(src), "OPENAI_API_KEY": "sk-bench-not-a-real-key",
               "REFEREE_STORE": store}
        out = folder / "results.jsonl"
        # Untimed and uncounted: a store's first use creates and migrates it (once per store, not per run).
        subprocess.run([*_judge_cmd(folder, url, args.concurrency, cases, out), *extra], env=env, cwd=folder,
                       capture_output=True, check=True)
        for p in (out, out.with_name("results.manifest.json")):
            p.unlink(missing_ok=True)
        results[name] = counted([*_judge_cmd(folder, url, args.concurrency, cases, out), *extra], env, folder,
                                name.replace(" ", ""))
        for p in (out, out.with_name("results.manifest.json")):
            p.unlink(missing_ok=True)
    ref = sum(results["old"]) if "old" in results else None
    print(f"referee judge, N={args.n}, concurrency {args.concurrency}: instructions executed (one run each)")
    for name, counts in results.items():
        print(_row(name, counts, ref))
    on, off = sum(results["new"]), sum(results["new --no-store"])
    print(f"  recording (store on - off): {(on - off) / 1e6:.0f} M instructions, {(on - off) / off:.1%} of the run")


def monitor_vs_judge(args: argparse.Namespace, folder: Path, url: str, n: int, src: Path = NEW_SRC,
                     label: str = "") -> tuple[int, int]:
    """(judge's, monitor's) instructions on the same ``n`` traces, with the referee of ``src``."""
    sub = folder / f"n{n}-{'old' if label else 'new'}"
    sub.mkdir()
    traces, cases = bm.make_traces(sub, n)
    bm.write_suite(sub, n)
    env = {**os.environ, "PYTHONPATH": str(src), "OPENAI_API_KEY": "sk-bench-not-a-real-key",
           "REFEREE_STORE": "off"}
    judge = counted(_judge_cmd(sub, url, args.concurrency, cases, sub / "r.jsonl", _referee(args)), env, sub,
                    "judge")
    monitor = counted([*_referee(args), "monitor", str(sub / "monitor.yaml"), "--replay", str(traces), "--once",
                       *_judge_flags(url, args.concurrency)], env, sub, "monitor")
    until = " up to the first request" if args.first_request else ""
    print(f"{label}N={n} traces, concurrency {args.concurrency}, run history off: instructions executed{until} "
          "(one run each)")
    print(_row("referee judge", judge, None))
    print(_row("referee monitor", monitor, sum(judge)))
    return sum(judge), sum(monitor)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old-src", type=Path, help="another tree's src/ folder (read only): judge's baseline; with "
                    "--monitor, that tree's monitor and judge are counted too")
    ap.add_argument("--monitor", action="store_true", help="referee monitor --replay against referee judge")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--sizes", default=None, metavar="N1,N2",
                    help="with --monitor: two or more sizes, and the monitor's extra instructions split into a fixed "
                         "part and a part per trace (a least-squares line through the sizes)")
    ap.add_argument("--first-request", action="store_true",
                    help="with --monitor: count each command only up to its first request to the judge")
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--latency", type=float, default=0.2)
    args = ap.parse_args()
    if args.first_request and not args.monitor:
        ap.error("--first-request goes with --monitor")
    if args.sizes is not None:
        try:
            sizes = [int(x) for x in args.sizes.split(",")]
        except ValueError:
            sizes = []
        if not args.monitor or len(set(sizes)) != len(sizes) or len(sizes) < 2 or min(sizes) < 1:
            ap.error("--sizes goes with --monitor and takes two or more different whole numbers, e.g. 250,1000")
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    _compile(NEW_SRC)
    server, url = bj._start_server(args.latency)
    try:
        with tempfile.TemporaryDirectory(prefix="referee-instr-") as tmp:
            if args.monitor:
                sizes = [int(x) for x in args.sizes.split(",")] if args.sizes else [args.n]
                if args.old_src:
                    old = Path(tmp) / "old-src"
                    shutil.copytree(args.old_src, old, ignore=shutil.ignore_patterns("__pycache__"))
                    _compile(old)
                    for n in sizes:
                        monitor_vs_judge(args, Path(tmp), url, n, old, "old tree: ")
                got = {n: monitor_vs_judge(args, Path(tmp), url, n) for n in sizes}
                if len(sizes) >= 2:
                    per, fixed = bm._line([(n, m - j) for n, (j, m) in got.items()])
                    per_case, _ = bm._line([(n, j) for n, (j, _m) in got.items()])
                    until = " up to the first request" if args.first_request else ""
                    print(f"monitor's extra{until}: {fixed / 1e6:.0f} M instructions fixed, {per / 1e3:.0f} K per trace "
                          f"({per / per_case:.1%} of the judge's {per_case / 1e3:.0f} K per case)")
            else:
                judge_variants(args, Path(tmp), url)
    finally:
        server.terminate()
        server.wait(10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
