"""Large but legitimate inputs that used to take minutes: the claims table of a row citing 1,000 quotes from one
1.9 MB chunk (the HTML report's ``--cases`` and the viewer's case page build it), and 1,200 x 1,200 parallel tool
calls paired by ``tool_calls``.

    .venv/bin/python bench/bench_hostile_sizes.py [--runs 3]

Each figure is the best of ``--runs`` and is printed beside its floor measured in the same run, so the ratio stays
meaningful on a busy machine: the claims table against normalising the chunk once and slicing one window per
quote (what any table must do), the pairing against comparing each actual call with its own expected call once
(what a pairing that already knew the answer would do).

Targets: 1,000 quotes over 1.9 MB in under 10 s; 100 quotes (a viewer request) in under 1 s; 1,200 x 1,200 calls
paired in under 5 s.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from typing import Any


def _claims_row(n_quotes: int, chunk_chars: int) -> tuple[dict[str, Any], Any]:
    from referee.cases._case import Case

    rng = random.Random(9)
    words = ("refunds are issued within thirty days of purchase unless the item was damaged by the customer "
             "“gift cards” are never refunded — orders ship in 2 days").split()
    chunk = " ".join(rng.choice(words) for _ in range(chunk_chars // 6))[:chunk_chars]
    supports = []
    for i in range(n_quotes):
        at = rng.randrange(0, len(chunk) - 80)
        quote = chunk[at:at + 60].split(" ", 1)[1].rsplit(" ", 1)[0]
        if i % 2:
            quote = quote[:20] + "x" + quote[21:]  # half near matches
        supports.append({"passage": "ctx1", "quote": quote, "found": True})
    details = {"metric": "faithfulness", "claims": [{"id": "a1", "of": "answer", "text": "t", "checks": {
        "contexts": {"supported": True, "by": ["ctx1"], "supports": supports}}}]}
    return details, Case("c", {"id": "c", "contexts": [chunk]})


def _best(fn: Any, runs: int) -> float:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return min(out)


def bench_claims(runs: int) -> None:
    from referee.evaluators._evidence import normalise_with_map
    from referee.reports._claims import WINDOW, claims_table

    for n in (1000, 100):
        details, case = _claims_row(n, 1_900_000)
        chunk = case.contexts[0].text
        table = _best(lambda d=details, c=case: claims_table(d, c), runs)
        floor = _best(lambda c=chunk, k=n: (normalise_with_map(c), [c[i:i + 2 * WINDOW] for i in range(k)]), runs)
        print(f"claims table, {n:>5} quotes over a {len(chunk) / 1e6:.1f} MB chunk: {table:6.2f} s "
              f"(floor {floor:.2f} s, x{table / floor:.1f})")


def bench_pairing(runs: int) -> None:
    from referee.evaluators import _tool_calls, match_tool_calls

    n = 1200
    expected = [{"get_weather": {"city": [f"City {i}", f"C{i}"], "days": [i % 7 + 1, ""]}} for i in range(n)]
    ordered = [{"get_weather": {"city": f"city {i}", "days": i % 7 + 1}} for i in range(n)]
    shuffled = ordered[:]
    random.Random(1).shuffle(shuffled)
    paired = _best(lambda: match_tool_calls(shuffled, expected), runs)
    calls, parsed = _tool_calls._calls(ordered), _tool_calls._check_expected(expected)
    floor = _best(lambda: [_tool_calls._call_problem(c.name, c.args, c.problem, w, p, None)
                           for c, (w, p) in zip(calls, parsed, strict=True)], runs)
    print(f"tool_calls, {n} x {n} parallel calls in another order: {paired:6.2f} s "
          f"(floor {floor:.2f} s, x{paired / floor:.1f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    print(f"load average (1 min): {os.getloadavg()[0]:.1f}")
    bench_claims(args.runs)
    bench_pairing(args.runs)


if __name__ == "__main__":
    main()
