"""The duplicate gate of ``referee synth``: one look-up among N kept inputs, every pair compared (exact Jaccard of
character 4-grams) against MinHash proposing the pairs (then measured exactly), in one run, and MinHash's recall
of planted near-duplicates.

    .venv/bin/python bench/bench_synth.py [--sizes 500,2000,8000] [--queries 200]

The inputs are templated questions ("What does the policy say about ..." + 6 words of 3,000), the hard case for
MinHash: every pair shares the template, so more pairs fall in one band. Printed per size: ms per look-up each way,
their ratio, and how many of the planted near-duplicates (one word changed) each way finds.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import time

from referee.synth import _gates
from referee.synth._gates import DuplicateIndex


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="500,2000,8000")
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args()
    rng = random.Random(1)
    words = [f"term{i}" for i in range(3000)]

    def question() -> str:
        return "What does the policy say about " + " ".join(rng.choice(words) for _ in range(6)) + "?"

    print(f"# {platform.python_version()}, load {os.getloadavg()[0]:.1f}; threshold {_gates.NEAR_DUPLICATE}")
    print(f"{'texts':>6}  {'all pairs ms':>12}  {'MinHash ms':>10}  {'ratio':>6}  {'found (all / MinHash)':>22}")
    for n in (int(x) for x in args.sizes.split(",")):
        texts = [question() for _ in range(n)]
        idx = DuplicateIndex()
        for i, t in enumerate(texts):
            idx.add(t, str(i))
        probes = [question() for _ in range(args.queries // 2)]
        planted = []
        for i in rng.sample(range(n), args.queries // 2):
            w = texts[i].rstrip("?").split()
            planted.append((str(i), " ".join(w[:-1] + [w[-1] + "x"]) + "?"))
        out = {}
        for name, limit in (("all", 10**9), ("minhash", 0)):
            _gates.ALL_PAIRS_LIMIT = limit
            t0 = time.perf_counter()
            for p in probes:
                idx.nearest(p)
            found = 0
            for label, p in planted:
                hit = idx.nearest(p)
                found += hit is not None and hit.label == label
            out[name] = ((time.perf_counter() - t0) * 1000 / (len(probes) + len(planted)), found)
        ratio = out["minhash"][0] / out["all"][0]
        print(f"{n:>6}  {out['all'][0]:>12.2f}  {out['minhash'][0]:>10.2f}  {ratio:>6.3f}  "
              f"{out['all'][1]:>9} / {out['minhash'][1]:<3} of {len(planted)}")


if __name__ == "__main__":
    main()
