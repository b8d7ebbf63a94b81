"""A run against its baseline: shared cases, paired tests (Benjamini-Hochberg), regressions, the verdict."""

from __future__ import annotations

from itertools import repeat

import numpy as np
from numpy.typing import NDArray

from ..errors import UserError
from ..stats import (
    benjamini_hochberg,
    mcnemar_exact,
    paired_bootstrap,
)
from ._format import _fmt, format_p, printable
from ._groups import _group, _split, by_code, case_lines
from ._load import ResultsTable
from ._model import CaseLine, Comparison, PairedTest, ScoreOptions
from ._units import Units, build_units


def _compare(table: ResultsTable, units: Units, adv_units: Units, baseline: ResultsTable,
             opts: ScoreOptions) -> tuple[Comparison, NDArray[np.float64] | None]:
    b_cor, b_adv = _split(baseline, opts)
    bunits = build_units(baseline, b_cor, opts.threshold, opts.pass_rule)
    badv = build_units(baseline, b_adv, opts.threshold, opts.pass_rule)
    same_order = units.keys == bunits.keys and adv_units.keys == badv.keys  # the usual case: one C-speed pass
    missing: list[str] = []
    added: list[str] = []
    if not same_order:
        cur_keys = set(units.keys) | set(adv_units.keys)
        base_keys = set(bunits.keys) | set(badv.keys)
        missing = sorted(base_keys - cur_keys)
        added = sorted(cur_keys - base_keys)
    if (missing or added) and not opts.allow_case_set_change:
        def _few(xs: list[str]) -> str:
            return printable(", ".join(xs[:5])) + (f", ... ({len(xs)} in all)" if len(xs) > 5 else "")
        parts = []
        if missing:
            parts.append(f"{len(missing)} case(s) of the baseline missing from {table.path} ({_few(missing)})")
        if added:
            parts.append(f"{len(added)} case(s) not in the baseline ({_few(added)})")
        raise UserError("case sets differ, so no regression verdict is given: " + "; ".join(parts)
                        + ". `referee score` and `referee runs compare` take --allow-case-set-change to compare "
                          "the shared cases only")
    warnings = _run_differences(table, baseline)
    base_overall = _group("baseline", baseline, bunits, slice(None), slice(None), opts, baseline.has_repeats)

    if same_order:
        cur_i = base_i = np.arange(len(units), dtype=np.int64)
    else:
        bidx = bunits.index()
        matched = np.fromiter(map(bidx.get, units.keys, repeat(-1)), dtype=np.int64, count=len(units))
        cur_i = np.nonzero(matched >= 0)[0]
        base_i = matched[cur_i]
    both = units.scored[cur_i] & bunits.scored[base_i]
    ci, bi = cur_i[both], base_i[both]
    cur_pass = units.pass_share[ci] >= 0.5
    base_pass = bunits.pass_share[bi] >= 0.5
    regressed = base_pass & ~cur_pass
    reg, reg_bi = ci[regressed], bi[regressed]
    shown = np.argsort(units.mean[reg], kind="stable")[:200]  # lowest current score first
    regressions = case_lines(table, units, reg[shown].tolist())
    for line, b_unit in zip(regressions, reg_bi[shown].tolist(), strict=True):
        line.baseline_score = float(bunits.mean[b_unit])
    regression_scores = list(zip([units.keys[i] for i in reg.tolist()], bunits.mean[reg_bi].tolist(),
                                 units.mean[reg].tolist(), strict=True))
    drop_lines: list[CaseLine] = []
    drop_scores: list[tuple[str, float, float]] = []
    n_drops = 0
    if opts.regression_min_drop is not None:
        # Rounded so that float noise (0.9 - 0.7 = 0.20000000000000007) is no drop "by more than 0.2".
        fell = np.round(bunits.mean[bi] - units.mean[ci], 9) > opts.regression_min_drop
        dropped = base_pass & cur_pass & fell
        drop, drop_bi = ci[dropped], bi[dropped]
        n_drops = len(drop)
        biggest = np.argsort(units.mean[drop] - bunits.mean[drop_bi], kind="stable")[:200]
        drop_lines = case_lines(table, units, drop[biggest].tolist())
        for line, b_unit in zip(drop_lines, drop_bi[biggest].tolist(), strict=True):
            line.baseline_score = float(bunits.mean[b_unit])
        drop_scores = list(zip([units.keys[i] for i in drop.tolist()], bunits.mean[drop_bi].tolist(),
                               units.mean[drop].tolist(), strict=True))
    fixed = int((~base_pass & cur_pass).sum())
    lost_mask = (units.n_scored[cur_i] == 0) & (bunits.n_scored[base_i] > 0) & (bunits.pass_share[base_i] >= 0.5)
    lost = [units.keys[i] for i in cur_i[lost_mask].tolist()]

    d_pass = units.pass_share[ci] - bunits.pass_share[bi]
    d_score = units.mean[ci] - bunits.mean[bi]
    tests: list[PairedTest] = []
    skipped: list[str] = []
    category_tests: dict[str, tuple[int, str | None]] = {}
    sides = {"pass rate": (units.pass_share[ci], bunits.pass_share[bi]),
             "mean score": (units.mean[ci], bunits.mean[bi])}

    def _run(scope: str, sel: NDArray[np.int64] | None) -> None:
        dp = d_pass if sel is None else d_pass[sel]
        ds = d_score if sel is None else d_score[sel]
        if dp.size < 3:
            why = f"{dp.size} shared scored case(s), fewer than 3"
            skipped.append(f"{scope}: {why}")
            if sel is not None:
                category_tests[scope] = (int(dp.size), why)
            return
        if sel is not None:
            category_tests[scope] = (int(dp.size), None)
        for metric, d in (("pass rate", dp), ("mean score", ds)):
            r = paired_bootstrap(d, n_boot=opts.n_boot, seed=opts.boot_seed, alpha=opts.alpha)
            direction = "drop" if r.diff < 0 else "improvement" if r.diff > 0 else "none"
            cur, base = (x if sel is None else x[sel] for x in sides[metric])
            tests.append(PairedTest(scope, metric, r.n, r.diff, r.lo, r.hi, r.p_value, direction=direction,
                                    method=r.method, point_a=float(cur.mean()), point_b=float(base.mean())))

    _run("overall", None)
    present = by_code(units.category[ci])
    if len(present) > 1:
        for code, sel in present.items():
            _run(table.category_names[code], sel)
    elif present:
        skipped.append("per-category tests: one category covers every case (the overall test is the same)")
        code, sel = next(iter(present.items()))
        category_tests[table.category_names[code]] = (
            int(sel.size), "one category covers every shared case: the run-wide test is the same")
    # As the seed: drops form one family and everything else (improvements and zero differences, whose p of 1
    # still counts towards m) the other, so an improvement can never lower the bar for a drop.
    for family in ({"drop"}, {"improvement", "none"}):
        fam = [t for t in tests if t.direction in family]
        if fam:
            rej, adj = benjamini_hochberg([t.p_value for t in fam], alpha=opts.alpha)
            for t, r, a in zip(fam, rej.tolist(), adj.tolist(), strict=True):
                t.significant, t.p_adjusted = bool(r), float(a)
    b = len(reg)
    c = fixed
    mc = mcnemar_exact(b, c)

    overall_tests = [t for t in tests if t.scope == "overall"]
    sig_drops = [t for t in tests if t.direction == "drop" and t.significant]
    if sig_drops:
        verdict = "REGRESSED"
        reason = "; ".join(f"{t.scope} {t.metric} {t.diff:+.3f} (adjusted p {format_p(t.p_adjusted, opts.n_boot)})"
                           for t in sig_drops[:4])
    elif not overall_tests:
        verdict, reason = "INCONCLUSIVE", "too few shared scored cases for a paired test"
    elif any(t.direction == "drop" for t in overall_tests):
        t = next(t for t in overall_tests if t.direction == "drop")
        verdict = "INCONCLUSIVE"
        reason = (f"overall {t.metric} {t.diff:+.3f} is within noise "
                  f"(p {format_p(t.p_value, opts.n_boot)}; 95% CI "
                  f"{_fmt(t.lo)} to {_fmt(t.hi)})")
    elif any(t.direction == "improvement" and t.significant for t in tests):
        verdict, reason = "IMPROVED", "significant improvement and no significant drop"
    else:
        verdict, reason = "NO REGRESSION", "no drop observed overall and none significant in any category"

    adv_regs: list[CaseLine] = []
    if len(adv_units) and len(badv):
        badx = badv.index()
        picks = [i for i, k in enumerate(adv_units.keys) if k in badx and adv_units.n_scored[i]
                 and badv.n_scored[badx[k]] and badv.pass_share[badx[k]] >= 0.5 and adv_units.pass_share[i] < 0.5]
        adv_regs = case_lines(table, adv_units, picks)
    comp = Comparison(
        baseline=baseline.path, baseline_overall=base_overall, shared=len(cur_i), missing=missing, added=added,
        regressions=regressions, regression_count=len(reg), fixed=fixed, lost_scores=lost, tests=tests,
        skipped=skipped,
        mcnemar_b=b, mcnemar_c=c, mcnemar_p=mc.p_value, verdict=verdict, verdict_reason=reason,
        adversarial_regressions=adv_regs, warnings=warnings, regression_scores=regression_scores,
        magnitude_drops=drop_lines, magnitude_drop_count=n_drops, magnitude_drop_scores=drop_scores,
        regression_min_drop=opts.regression_min_drop, category_tests=category_tests,
    )
    return comp, d_pass


def _run_differences(table: ResultsTable, baseline: ResultsTable) -> list[str]:
    """What the run manifests say differs between the two runs besides the system under test: a different
    judge prompt or judge model makes the comparison one of judges, not of systems."""
    a, b = table.manifest, baseline.manifest
    if a is None or b is None:
        return []
    out = []
    if a.template and b.template and a.template.sha256 != b.template.sha256:
        out.append("the judge prompt differs between the runs (template sha256 "
                   f"{b.template.sha256[:12]} -> {a.template.sha256[:12]}): differences may be the judge's")
    if a.judge and b.judge and (a.judge.provider, a.judge.model) != (b.judge.provider, b.judge.model):
        out.append(f"the judge differs between the runs ({b.judge.provider}/{b.judge.model} -> "
                   f"{a.judge.provider}/{a.judge.model}): differences may be the judge's")
    return out
