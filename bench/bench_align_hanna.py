"""The score map on real labels, no model call: HANNA's recorded LLM ratings against its human ratings.

For every judge (prompt 1) and criterion, the 960 generated stories are split once (half held out, stratified by
the human mean's quartile, grouped by story prompt: the 10 stories written from one prompt stay on one side), the
map is fitted on the other half, and the raw judge, the mapped judge and the no-judge baseline (the training
labels' median) are measured on the held-out half: Krippendorff's alpha (interval) and the mean absolute delta
on the 1-5 scale, each with its percentile bootstrap interval, and the mapped judge's gain over both with a paired
bootstrap interval. "kept" is the procedure's decision (the lower bound of the alpha gain over both above 0).

    .venv/bin/python bench/bench_align_hanna.py [--data ../shared/data/hanna] [--judge Beluga-13B]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from referee.alignment import align_values
from referee.metaeval._hanna import CRITERIA, JUDGES, read_hanna
from referee.stats._bootstrap import Interval

REPO = Path(__file__).resolve().parents[1]


def _iv(iv: Interval) -> str:
    if iv.estimate is None:
        return "n/a"
    if iv.lo is None or iv.hi is None:
        return f"{iv.estimate:.2f}"
    return f"{iv.estimate:.2f} [{iv.lo:.2f}, {iv.hi:.2f}]"


def rows(path: Path, judges: list[str], criteria: list[str], *, prompt: int = 1, n_boot: int = 2000
         ) -> list[dict[str, object]]:
    cols = [CRITERIA[c] for c in criteria] + [f"{j} {c} {prompt}" for j in judges for c in criteria]
    table = read_hanna(path, columns=cols)
    n = len(table.systems)
    ids = [f"s{i}" for i in range(n)]
    groups = {cid: f"prompt-{i % 96}" for i, cid in enumerate(ids)}  # stories are in prompt order per system
    out = []
    for j in judges:
        for c in criteria:
            human = dict(zip(ids, table.column(CRITERIA[c]).tolist(), strict=True))
            judge = dict(zip(ids, table.column(f"{j} {c} {prompt}").tolist(), strict=True))
            al, _, _ = align_values(judge, human, groups=groups, n_boot=n_boot)
            f = al.figures
            out.append({"judge": j, "criterion": c, "n_heldout": f.n,
                        **{f"{p}_{m}": f.values[p][m] for p in ("raw", "aligned", "baseline") for m in ("alpha", "mae")},
                        **{f"gain_{r}_{m}": f.gains[r][m] for r in ("raw", "baseline") for m in ("alpha", "mae")},
                        "kept": al.written})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "hanna")
    ap.add_argument("--judge", action="append", choices=JUDGES)
    ap.add_argument("--n-boot", type=int, default=2000)
    a = ap.parse_args(argv)
    path = a.data / "hanna_metric_scores_llm.csv"
    if not path.is_file():
        print(f"HANNA not found at {path}: pass --data", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    res = rows(path, a.judge or list(JUDGES), list(CRITERIA), n_boot=a.n_boot)
    print("| judge | crit | alpha raw | alpha mapped | alpha no judge | MAE raw | MAE mapped | MAE no judge | "
          "alpha gain vs raw | alpha gain vs no judge | kept |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in res:
        print(f"| {r['judge']} | {r['criterion']} | {_iv(r['raw_alpha'])} | {_iv(r['aligned_alpha'])} | "  # type: ignore[arg-type]
              f"{_iv(r['baseline_alpha'])} | {_iv(r['raw_mae'])} | {_iv(r['aligned_mae'])} | "  # type: ignore[arg-type]
              f"{_iv(r['baseline_mae'])} | {_iv(r['gain_raw_alpha'])} | {_iv(r['gain_baseline_alpha'])} | "  # type: ignore[arg-type]
              f"{'yes' if r['kept'] else 'no'} |")
    kept = sum(bool(r["kept"]) for r in res)
    print(f"\n{kept} of {len(res)} kept; {res[0]['n_heldout']} held-out stories each; "
          f"{time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
