"""The aggregate of a results file or of rows in memory (optionally against a baseline): the numbers every
report renders. The dataclasses are in ``_model.py``, the groups in ``_groups.py``, the baseline comparison in
``_compare.py``; this module is their public face."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from .._util._numbers import count
from ..results._schema import ResultRow
from ..results._self_grading import same_model
from ._compare import _compare
from ._format import format_p, printable
from ._groups import (
    _case_line,
    _group,
    _groups_by_category,
    _power,
    _split,
    _worst_rows,
    by_code,
    case_lines,
)
from ._load import ResultsTable, load_table, table_from_rows
from ._model import (
    LOWEST_SHOWN,
    NEAR_DUPLICATE_RATIO,
    PASS_RULE_WARNING,
    SMALL_SAMPLE,
    CaseLine,
    Comparison,
    Group,
    PairedTest,
    Power,
    RepeatInfo,
    ScoreOptions,
    Summary,
)
from ._units import build_units

# The public face of the aggregate: every name defined here before the split still imports from here.
__all__ = [
    "LOWEST_SHOWN", "NEAR_DUPLICATE_RATIO", "PASS_RULE_WARNING", "SMALL_SAMPLE", "CaseLine", "Comparison", "Group",
    "PairedTest", "Power", "RepeatInfo", "Rows", "ScoreOptions", "Summary", "all_cases", "as_table", "by_code",
    "case_lines", "format_p", "near_duplicate_categories", "printable", "score_distribution", "self_grading_note",
    "summarize",
]

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
                out.append(f"categories '{names[i]}' and '{names[j]}' look similar (similarity {r:.2f}); "
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


@runtime_checkable
class TableSource(Protocol):
    """Rows that know how they read as a table (a stored run: named after it, with its manifest)."""

    def results_table(self) -> ResultsTable: ...


Rows = ResultsTable | TableSource | Sequence[ResultRow] | str | Path
"""What :func:`summarize` aggregates: a results file, rows in memory, a stored run, or a table already loaded."""


def as_table(source: Rows) -> ResultsTable:
    """A results file, rows in memory, a stored run or a table, as a table (the one reader's rules for each)."""
    if isinstance(source, ResultsTable):
        return source
    if isinstance(source, str | Path):
        return load_table(source)
    if isinstance(source, TableSource):
        return source.results_table()
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
        warnings.append(f"small sample: {count(overall.cases, 'scored case')} (under {SMALL_SAMPLE}); intervals are wide "
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


def score_distribution(table: Rows, opts: ScoreOptions | None = None, *, bins: int = 10
                       ) -> tuple[float | None, list[int]]:
    """(median, histogram) of the cases' scores that ``summarize(table, opts).overall.mean`` averages: one score
    per scored case of the correctness track (the mean of its scored repeats), ``bins`` equal bins over 0-1 (a
    score of 1 in the last). The median is None when no case is scored."""
    table = as_table(table)
    opts = opts or ScoreOptions()
    cor_rows, _ = _split(table, opts)
    units = build_units(table, cor_rows, opts.threshold, opts.pass_rule)
    means = units.mean[units.scored] if len(units) else np.zeros(0)
    idx = np.clip((means * bins).astype(np.int64), 0, bins - 1)
    hist = np.bincount(idx, minlength=bins).tolist()
    return (float(np.median(means)) if len(means) else None), [int(n) for n in hist]


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
