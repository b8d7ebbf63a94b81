"""The aggregate of a results file (optionally against a baseline): the numbers every report renders."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import repeat
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ..errors import UserError
from ..results.schema import ResultRow
from ..results.self_grading import same_model
from ..stats import (
    DEFAULT_N_BOOT,
    DEFAULT_SEED,
    Interval,
    benjamini_hochberg,
    cases_needed,
    mcnemar_exact,
    mean_interval,
    min_detectable_drop,
    paired_bootstrap,
    wilson_interval,
)
from .load import SCORED, ResultsTable, load_table, table_from_rows
from .units import Units, build_units

SMALL_SAMPLE = 20
NEAR_DUPLICATE_RATIO = 0.82
LOWEST_SHOWN = 3
PASS_RULE_WARNING = "the rows' own 'passed' disagrees with score >="


@dataclass
class ScoreOptions:
    threshold: float = 0.7
    n_boot: int = DEFAULT_N_BOOT
    boot_seed: int = DEFAULT_SEED
    alpha: float = 0.05
    adversarial_categories: frozenset[str] = frozenset()
    """Normalised category names reported as attack types, apart from correctness."""
    target_drop: float = 0.05
    allow_case_set_change: bool = False
    pass_rule: str = "threshold"
    """``threshold`` (the seed's ``score >= threshold``) or ``evaluator`` (the row's own ``passed`` where it
    has one): applied to every pass statistic, both tracks and the baseline alike."""
    cost_rows: str = "scored"
    """Rows whose cost and latency enter the means (and their gates): ``scored`` (the seed's meaning: its
    runners write no row for a case they could not grade) or ``all`` (unscored and error rows too)."""


@dataclass
class Group:
    """Aggregate of one group of cases (everything, one category, one attack type)."""

    name: str
    rows: int
    cases: int
    """Cases with at least one scored row: the n of every rate and mean."""
    unscored: int
    errors: int
    pass_rate: Interval
    """Percentile bootstrap CI."""
    pass_rate_wilson: Interval
    mean: Interval
    mean_cost: float | None
    mean_latency_ms: float | None
    pass_at_k: float | None = None
    """Share of cases where at least one repeat passes (repeats only)."""
    pass_all_k: float | None = None
    """pass^k: share of cases where every repeat passes (repeats only)."""

    @property
    def unscored_rate(self) -> float:
        return (self.unscored + self.errors) / self.rows if self.rows else 0.0


@dataclass
class CaseLine:
    """One case as reports show it."""

    id: str
    category: str
    score: float | None
    """Mean over scored repeats."""
    passed: bool | None
    rationale: str | None
    line: int
    repeats: int = 1
    pass_share: float | None = None
    sd: float | None = None
    min: float | None = None
    max: float | None = None
    baseline_score: float | None = None
    status: str = "scored"
    verdict_source: str = "threshold"
    """``evaluator`` when the pass verdict came from the rows' own ``passed`` (``--pass-rule evaluator``)."""


@dataclass
class PairedTest:
    scope: str
    """``overall`` or a category name."""
    metric: str
    """``pass rate`` or ``mean score``."""
    n: int
    diff: float
    lo: float | None
    hi: float | None
    p_value: float
    p_adjusted: float | None = None
    direction: str = "none"
    """``drop``, ``improvement`` or ``none``; drops are one Benjamini-Hochberg family, the rest the other."""
    significant: bool = False
    method: str = "paired percentile bootstrap"
    """With ``(Cornish-Fisher expansion, n large)`` where resampling would be slow and the expansion is as
    accurate (see ``stats.counts``)."""


@dataclass
class Power:
    n: int
    sd: float
    basis: str
    min_detectable_drop: float | None
    target_drop: float
    cases_needed: int | None
    detectable: bool = True
    """False when the minimum detectable drop exceeds 100 points: no drop in pass rate can be detected."""


@dataclass
class Comparison:
    baseline: str
    baseline_overall: Group
    shared: int
    missing: list[str]
    """Case ids in the baseline but not in the current results."""
    added: list[str]
    regressions: list[CaseLine]
    """Cases that passed in the baseline and fail now (the seed's definition); the first 200, lowest first."""
    regression_count: int
    fixed: int
    lost_scores: list[str]
    """Cases that passed in the baseline and are unscored now: not a regression, not a pass either."""
    tests: list[PairedTest]
    skipped: list[str]
    mcnemar_b: int
    mcnemar_c: int
    mcnemar_p: float
    verdict: str
    """REGRESSED, INCONCLUSIVE, IMPROVED or NO REGRESSION."""
    verdict_reason: str
    adversarial_regressions: list[CaseLine] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    """Differences between the runs other than the system (judge prompt, judge model)."""
    regression_scores: list[tuple[str, float, float]] = field(default_factory=list)
    """Every correctness regression as (id, baseline score, current score), in the current file's order:
    the seed's JSON ``regressions`` list."""


@dataclass
class RepeatInfo:
    max_repeats: int
    flaky: list[CaseLine]
    """Cases with repeats on both sides of the threshold (the first 50)."""
    flaky_count: int = 0
    below_min_pass_rate: list[CaseLine] = field(default_factory=list)
    """The first 50 cases under ``--min-case-pass-rate``."""
    below_min_count: int = 0


@dataclass
class Summary:
    path: str
    threshold: float
    n_boot: int
    boot_seed: int
    overall: Group
    categories: list[Group]
    lowest: list[CaseLine]
    adversarial: list[Group]
    adversarial_failures: list[CaseLine]
    warnings: list[str]
    power: Power | None
    repeats: RepeatInfo | None = None
    comparison: Comparison | None = None
    small_sample: bool = False
    pass_rule: str = "threshold"
    cost_rows: str = "scored"
    """Which rows the mean cost and latency are over (see ``ScoreOptions.cost_rows``)."""
    self_grading: str | None = None
    """The self-grading caveat (rows whose judge graded its own model's output), or None."""
    self_grading_rows: int = 0


def _mean_or_none(x: NDArray[np.float64]) -> float | None:
    v = x[~np.isnan(x)]
    return float(v.mean()) if v.size else None


def _group(name: str, table: ResultsTable, units: Units, sel: NDArray[np.int64] | slice,
           row_sel: NDArray[np.int64] | slice, opts: ScoreOptions, repeats: bool) -> Group:
    """``sel`` / ``row_sel``: the group's units / positions in ``units.rows`` (``slice(None)`` for all)."""
    scored = units.scored[sel]
    share = units.pass_share[sel][scored]
    means = units.mean[sel][scored]
    n = int(scored.sum())
    rows = units.rows[row_sel]
    cost_rows = rows if opts.cost_rows == "all" else rows[table.status[rows] == SCORED]
    pass_rate = mean_interval(share, n_boot=opts.n_boot, seed=opts.boot_seed, alpha=opts.alpha)
    g = Group(
        name=name, rows=len(rows), cases=n,
        unscored=int(units.n_unscored[sel].sum()), errors=int(units.n_error[sel].sum()),
        pass_rate=pass_rate,
        pass_rate_wilson=wilson_interval(float(share.sum()), n, alpha=opts.alpha),
        mean=mean_interval(means, n_boot=opts.n_boot, seed=opts.boot_seed, alpha=opts.alpha),
        mean_cost=_mean_or_none(table.cost[cost_rows]), mean_latency_ms=_mean_or_none(table.latency[cost_rows]),
    )
    if repeats and n:
        g.pass_at_k = float((share > 0).mean())
        g.pass_all_k = float((share >= 1).mean())
    return g


def _case_line(table: ResultsTable, units: Units, i: int, *, worst_row: int | None = None,
               texts: dict[int, dict[str, object]] | None = None) -> CaseLine:
    row = int(units.first_row[i]) if worst_row is None else worst_row
    text = (texts or {}).get(row, {})
    rationale = text.get("rationale") or text.get("error")
    mean = float(units.mean[i]) if units.n_scored[i] else None
    share = float(units.pass_share[i]) if units.n_scored[i] else None
    status = "scored" if units.n_scored[i] else ("error" if units.n_error[i] else "unscored")
    return CaseLine(
        id=units.keys[i], category=table.category_names[int(units.category[i])], score=mean,
        passed=None if share is None else bool(share >= 0.5), rationale=str(rationale) if rationale else None,
        line=int(table.line[row]), repeats=int(units.n_rows[i]), pass_share=share,
        sd=None if mean is None else float(units.sd[i]), min=None if mean is None else float(units.lo[i]),
        max=None if mean is None else float(units.hi[i]), status=status,
        verdict_source="evaluator" if units.n_verdicts[i] else "threshold",
    )


def _worst_rows(table: ResultsTable, units: Units, picks: list[int]) -> dict[int, int]:
    """For each picked unit, its lowest-scoring failing scored row, else its lowest-scoring scored row (the
    rationale shown is that repeat's). Under the threshold rule the lowest score is always a failing one."""
    if not picks:
        return {}
    want = np.isin(units.unit_of_row, np.asarray(picks))
    out: dict[int, int] = {}
    rank: dict[int, tuple[bool, float]] = {}
    for r, u, ok in zip(units.rows[want].tolist(), units.unit_of_row[want].tolist(), units.row_pass[want].tolist(),
                        strict=True):
        s = table.score[r]
        key = (ok, s)
        best = rank.get(u)
        if best is None or (not math.isnan(s) and (math.isnan(best[1]) or key < best)):
            out[u] = r
            rank[u] = key
    return out


def case_lines(table: ResultsTable, units: Units, picks: list[int]) -> list[CaseLine]:
    worst = _worst_rows(table, units, picks)
    texts = table.read_rows(list(worst.values()))
    return [_case_line(table, units, i, worst_row=worst.get(i), texts=texts) for i in picks]


_MAX_CATEGORIES_COMPARED = 400


def near_duplicate_categories(keys: list[str], names: list[str]) -> list[str]:
    """Warnings for category names that look alike (difflib ratio >= 0.82); they are never merged."""
    if len(keys) > _MAX_CATEGORIES_COMPARED:  # pairwise difflib is quadratic; that many categories is a smell
        return [f"{len(keys)} categories: the near-duplicate check was skipped (is 'category' holding ids?)"]
    out = []
    for i in range(len(keys)):
        for j in range(i + 1, len(keys)):
            sm = difflib.SequenceMatcher(None, keys[i], keys[j])
            if sm.real_quick_ratio() < NEAR_DUPLICATE_RATIO or sm.quick_ratio() < NEAR_DUPLICATE_RATIO:
                continue
            r = sm.ratio()
            if r >= NEAR_DUPLICATE_RATIO:
                out.append(f"categories '{names[i]}' and '{names[j]}' look alike (similarity {r:.2f}); "
                           "they are kept apart: fix the spelling if they are the same")
    return out


def self_grading_note(table: ResultsTable) -> str | None:
    """The seed's rule: never let a judge grade its own output unflagged. From the rows' flags, else from the
    run manifest (judge model = system under test)."""
    man = table.manifest
    judge = man.judge.model if man is not None and man.judge is not None else None
    sut = man.system_under_test if man is not None else None
    if table.self_graded_rows:
        return (f"{table.self_graded_rows} of {len(table)} rows were graded by the model that produced them"
                + (f" (judge {judge})" if judge else "") + ": self-grading inflates scores")
    if sut and any(same_model(judge, m) for m in sut.split(",")):
        return f"the judge model ({judge}) is the system under test ({sut}): self-grading inflates scores"
    return None


def _power(units: Units, scored: NDArray[np.bool_], paired: NDArray[np.float64] | None,
           opts: ScoreOptions) -> Power | None:
    n = int(scored.sum())
    if n == 0:
        return None
    if paired is not None and paired.size >= 2 and float(paired.std(ddof=1)) > 0:
        sd, basis = float(paired.std(ddof=1)), "paired differences of per-case pass flags vs the baseline"
    else:
        p = float(np.clip(units.pass_share[scored].mean(), 0.05, 0.95))
        sd, basis = math.sqrt(2 * p * (1 - p)), "two independent runs at the current pass rate"
    mdd = min_detectable_drop(sd, n, alpha=opts.alpha)
    return Power(n=n, sd=sd, basis=basis, min_detectable_drop=mdd, target_drop=opts.target_drop,
                 cases_needed=cases_needed(sd, opts.target_drop, alpha=opts.alpha),
                 detectable=mdd is not None and mdd <= 1.0)


def _split(table: ResultsTable, opts: ScoreOptions) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Row indices of the correctness track and of the adversarial track."""
    all_rows = np.arange(len(table), dtype=np.int64)
    if table.adversarial:
        return all_rows[:0], all_rows
    adv_codes = [c for c, k in enumerate(table.categories) if k in opts.adversarial_categories]
    if not adv_codes:
        return all_rows, all_rows[:0]
    adv = np.isin(table.category, np.asarray(adv_codes, dtype=np.int32))
    return all_rows[~adv], all_rows[adv]


def by_code(codes: NDArray[np.int32]) -> dict[int, NDArray[np.int64]]:
    """Each code present (ascending) -> the positions holding it, in order: one stable sort rather than a
    comparison over every position per code (a million cases in 20 categories)."""
    if not codes.size:
        return {}
    order = np.argsort(codes, kind="stable")
    ordered = codes[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], ordered.size]
    return {int(ordered[a]): order[a:b] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)}


def _groups_by_category(table: ResultsTable, units: Units, opts: ScoreOptions, repeats: bool) -> list[Group]:
    out = []
    row_groups = by_code(table.category[units.rows])
    for code, sel in by_code(units.category).items():
        out.append(_group(table.category_names[code], table, units, sel, row_groups[code], opts, repeats))
    out.sort(key=lambda g: g.name.lower())
    return out


Rows = ResultsTable | Sequence[ResultRow] | str | Path
"""What :func:`summarize` aggregates: a results file, rows in memory, or a table already loaded."""


def as_table(source: Rows) -> ResultsTable:
    """A results file, rows in memory or a table, as a table (the one reader's rules for each)."""
    if isinstance(source, ResultsTable):
        return source
    if isinstance(source, str | Path):
        return load_table(source)
    return table_from_rows(list(source))


def summarize(table: Rows, opts: ScoreOptions | None = None, *, baseline: Rows | None = None,
              min_case_pass_rate: float | None = None) -> Summary:
    """Aggregate ``table`` (a results file, rows in memory, or a loaded table) and compare it with
    ``baseline``: the numbers ``referee score`` prints. Raises ``UserError`` when the case sets differ and
    ``opts.allow_case_set_change`` is not set."""
    table = as_table(table)
    baseline = None if baseline is None else as_table(baseline)
    opts = opts or ScoreOptions()
    warnings = list(table.warnings)
    repeats = table.has_repeats
    cor_rows, adv_rows = _split(table, opts)
    units = build_units(table, cor_rows, opts.threshold, opts.pass_rule)
    overall = _group("overall", table, units, slice(None), slice(None), opts, repeats)
    categories = _groups_by_category(table, units, opts, repeats) if len(units) else []
    scored_idx = np.nonzero(units.scored)[0]
    sort_keys: list[NDArray[np.int64] | NDArray[np.float64]] = [scored_idx, units.mean[scored_idx]]
    if opts.pass_rule == "evaluator":  # a PASS at 0.5 is not a failure: failing cases come first
        sort_keys.append(units.pass_share[scored_idx])
    order = scored_idx[np.lexsort(sort_keys)][:LOWEST_SHOWN]
    lowest = case_lines(table, units, order.tolist())

    present = np.flatnonzero(np.bincount(table.category)).tolist()
    cat_keys = [table.categories[c] for c in present]
    cat_names = [table.category_names[c] for c in present]
    if baseline is not None:  # the seed checks the names of both runs: a typo may sit in either
        for c in np.flatnonzero(np.bincount(baseline.category)).tolist():
            if baseline.categories[c] not in cat_keys:
                cat_keys.append(baseline.categories[c])
                cat_names.append(baseline.category_names[c])
    warnings += near_duplicate_categories(cat_keys, cat_names)
    warnings += _pass_rule_warnings(table, baseline, opts)
    for k in sorted(opts.adversarial_categories - set(table.categories)):
        warnings.append(f"adversarial category '{k}' does not occur in {table.path}")
    small = 0 < overall.cases < SMALL_SAMPLE
    if small:
        warnings.append(f"small sample: {overall.cases} scored cases (under {SMALL_SAMPLE}); intervals are wide "
                        "and a few cases swing the rates")
    if overall.cases == 0 and len(adv_rows) and not len(cor_rows):
        warnings.append("every row is in the adversarial track: there are no correctness numbers")
    elif overall.cases == 0:
        warnings.append("no scored cases: pass rate and mean are undefined")

    adv_units = build_units(table, adv_rows, opts.threshold, opts.pass_rule)
    adversarial = _groups_by_category(table, adv_units, opts, repeats) if len(adv_units) else []
    adv_fail = [i for i in range(len(adv_units)) if adv_units.n_scored[i] and adv_units.pass_share[i] < 0.5]
    adversarial_failures = case_lines(table, adv_units, adv_fail[:20])

    rep_info = None
    if repeats:
        flaky_idx = np.nonzero(units.scored & (units.pass_share > 0) & (units.pass_share < 1))[0]
        below: list[int] = []
        if min_case_pass_rate is not None:
            below = np.nonzero(units.scored & (units.pass_share < min_case_pass_rate))[0].tolist()
        rep_info = RepeatInfo(max_repeats=int(units.n_rows.max()) if len(units) else 0,
                              flaky=case_lines(table, units, flaky_idx[:50].tolist()),
                              below_min_pass_rate=case_lines(table, units, below[:50]),
                              below_min_count=len(below), flaky_count=len(flaky_idx))
    elif min_case_pass_rate is not None:
        below = np.nonzero(units.scored & (units.pass_share < min_case_pass_rate))[0].tolist()
        rep_info = RepeatInfo(max_repeats=1, flaky=[],
                              below_min_pass_rate=case_lines(table, units, below[:50]),
                              below_min_count=len(below))

    comparison = None
    paired_pass: NDArray[np.float64] | None = None
    if baseline is not None:
        warnings += [f"baseline: {w}" for w in baseline.warnings]
        comparison, paired_pass = _compare(table, units, adv_units, baseline, opts)
        warnings += comparison.warnings
    return Summary(
        path=table.path, threshold=opts.threshold, n_boot=opts.n_boot, boot_seed=opts.boot_seed,
        overall=overall, categories=categories, lowest=lowest, adversarial=adversarial,
        adversarial_failures=adversarial_failures, warnings=warnings,
        power=_power(units, units.scored, paired_pass, opts), repeats=rep_info, comparison=comparison,
        small_sample=small, pass_rule=opts.pass_rule, cost_rows=opts.cost_rows,
        self_grading=self_grading_note(table), self_grading_rows=table.self_graded_rows,
    )


def _pass_rule_warnings(table: ResultsTable, baseline: ResultsTable | None, opts: ScoreOptions) -> list[str]:
    """One line when the rows' own ``passed`` and the pass rule in force could tell different stories."""
    counts = [table.disagreements(opts.threshold)]
    if baseline is not None:
        counts.append(baseline.disagreements(opts.threshold))
    if opts.pass_rule == "evaluator":
        if not any(n for _, n in counts):
            return ["--pass-rule evaluator: no scored row carries its own 'passed', so score >= "
                    f"{opts.threshold:g} decides every case"]
        return []
    parts = [f"{bad} of {n} scored rows" + ("" if i == 0 else " of the baseline")
             for i, (bad, n) in enumerate(counts) if bad]
    if not parts:
        return []
    # A stable prefix (PASS_RULE_WARNING) so tools can recognise the line.
    return [f"{PASS_RULE_WARNING} {opts.threshold:g} in {' and '.join(parts)}; they count by the threshold: pass "
            "--pass-rule evaluator to count the evaluator's own verdict"]


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
                        + ". Pass --allow-case-set-change to compare the shared cases only")
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
    fixed = int((~base_pass & cur_pass).sum())
    lost_mask = (units.n_scored[cur_i] == 0) & (bunits.n_scored[base_i] > 0) & (bunits.pass_share[base_i] >= 0.5)
    lost = [units.keys[i] for i in cur_i[lost_mask].tolist()]

    d_pass = units.pass_share[ci] - bunits.pass_share[bi]
    d_score = units.mean[ci] - bunits.mean[bi]
    tests: list[PairedTest] = []
    skipped: list[str] = []

    def _run(scope: str, sel: NDArray[np.int64] | None) -> None:
        dp = d_pass if sel is None else d_pass[sel]
        ds = d_score if sel is None else d_score[sel]
        if dp.size < 3:
            skipped.append(f"{scope}: {dp.size} shared scored case(s), fewer than 3")
            return
        for metric, d in (("pass rate", dp), ("mean score", ds)):
            r = paired_bootstrap(d, n_boot=opts.n_boot, seed=opts.boot_seed, alpha=opts.alpha)
            direction = "drop" if r.diff < 0 else "improvement" if r.diff > 0 else "none"
            tests.append(PairedTest(scope, metric, r.n, r.diff, r.lo, r.hi, r.p_value, direction=direction,
                                    method=r.method))

    _run("overall", None)
    present = by_code(units.category[ci])
    if len(present) > 1:
        for code, sel in present.items():
            _run(table.category_names[code], sel)
    elif present:
        skipped.append("per-category tests: one category covers every case (the overall test is the same)")
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


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """Case text (ids, categories) bound for a terminal: control characters such as ANSI escapes become
    a replacement character, so a results file cannot rewrite the user's terminal or CI log."""
    return _CONTROL.sub("\ufffd", text)


def format_p(p: float | None, n_boot: int) -> str:
    """A bootstrap p of 0 means no resample crossed zero: it is below 1/n_boot, not zero."""
    if p is None:
        return "n/a"
    return f"<{1 / n_boot:.2g}" if p == 0 else f"{p:.3g}"


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.3f}"


def all_cases(table: ResultsTable, opts: ScoreOptions) -> tuple[list[CaseLine], list[CaseLine]]:
    """Every case of the correctness and adversarial tracks (for JUnit); rationales are read back only
    for cases that fail or are unscored."""
    out: list[list[CaseLine]] = []
    for rows in _split(table, opts):
        units = build_units(table, rows, opts.threshold, opts.pass_rule)
        bad = [i for i in range(len(units)) if not units.n_scored[i] or units.pass_share[i] < 0.5]
        worst = _worst_rows(table, units, bad)
        texts = table.read_rows(list(worst.values()))
        out.append([_case_line(table, units, i, worst_row=worst.get(i), texts=texts)
                    for i in range(len(units))])
    return out[0], out[1]
