"""The grid (cases x runs, each output inline with its verdict) and the charts of a run, for the viewer's API.

A case id is a row of the grid; each run is a column showing that run's own output for the case (from its own
cases: a target's outputs, the cases file bound to it, the file its manifest names), so two runs sharing ids
each show theirs. Repeats and turns show the case's first row.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..aggregate._load import SCORED
from ._store import STATUS_NAMES, Run, _loads, _text, clean, passes

OUTPUT_EXCERPT = 600
"""Characters of each output in a grid cell (the case page has it in full)."""
SHOW = ("all", "failing", "differ")


def first_rows(run: Run) -> dict[str, int]:
    """Case id -> its first row in ``run``."""
    return run.first_rows()


def _verdicts(run: Run, threshold: float, rule: str) -> np.ndarray[Any, Any]:
    key = ("grid-passes", run.generation, threshold, rule)
    hit = run.cached_summary(key)
    if hit is not None:
        return hit["ok"]  # type: ignore[no-any-return]
    t = run.table
    ok = passes(t, np.arange(len(t), dtype=np.int64), threshold, rule)
    run.store_summary(key, {"ok": ok})
    return ok


def grid(runs: list[Run], *, threshold: float, rule: str, q: str | None, show: str, offset: int,
         limit: int) -> dict[str, Any]:
    """One page of the grid: ``show`` all cases, those ``failing`` in any run (unscored counts), or those where
    the runs ``differ``; ``q`` matches ids, inputs and outputs (every word, case-insensitive)."""
    if show not in SHOW:
        raise ValueError(f"show must be one of {', '.join(SHOW)}")
    # Outputs are shown once each run's cases are read (a large cases file is read in the background): until
    # then the page has ids and verdicts, and says the outputs are coming.
    loaded = [r.cases() if q else r.cases_now() for r in runs]
    pending = any(cm is None for cm in loaded)
    case_maps = [cm or {} for cm in loaded]
    t0 = runs[0].table
    if len(runs) == 1 and show == "all" and not q and bool((t0.repeat < 0).all() and (t0.turn < 0).all()):
        # One row per case (the loader dropped repeated ids): the page is a slice, whatever the file's size.
        page_rows = np.arange(offset, min(offset + limit, len(t0)), dtype=np.int64)
        page = [t0.ids[i] for i in page_rows.tolist()]
        ok_page = np.full(len(t0), -1, dtype=np.int8)
        ok_page[page_rows] = passes(t0, page_rows, threshold, rule)
        return _page(runs, [dict(zip(page, page_rows.tolist(), strict=True))], [ok_page], loaded, case_maps,
                     page, len(t0), offset, limit, show, pending)
    firsts = [first_rows(r) for r in runs]
    oks = [_verdicts(r, threshold, rule) for r in runs]
    ids: list[str] = list(firsts[0])
    if len(runs) > 1:
        known = set(ids)
        for f in firsts[1:]:
            ids += [k for k in f if k not in known]
            known.update(f)
    if show != "all":
        def verdicts_of(cid: str) -> list[int | None]:
            return [int(ok[f[cid]]) if cid in f else None for f, ok in zip(firsts, oks, strict=True)]

        if show == "failing":
            ids = [c for c in ids if any(v is not None and v != 1 for v in verdicts_of(c))]
        else:
            ids = [c for c in ids if len({v for v in verdicts_of(c)}) > 1]
    if q:
        words = q.casefold().split()

        def text_of(cid: str) -> str:
            parts = [cid]
            for cm in case_maps:
                c = cm.get(cid)
                if c is not None:
                    parts += [_text(c.input)[:4000], _text(c.output)[:4000]]
            return " ".join(parts).casefold()

        ids = [c for c in ids if all(w in text_of(c) for w in words)]
    return _page(runs, firsts, oks, loaded, case_maps, ids[offset:offset + limit], len(ids), offset, limit, show,
                 pending)


def _page(runs: list[Run], firsts: list[dict[str, int]], oks: list[Any], loaded: list[Any],
          case_maps: list[Mapping[str, Any]], page: list[str], total: int, offset: int, limit: int, show: str,
          pending: bool) -> dict[str, Any]:
    out_rows = []
    for cid in page:
        cells: list[dict[str, Any] | None] = []
        first_input: Any = None
        for r, f, ok, cm in zip(runs, firsts, oks, case_maps, strict=True):
            i = f.get(cid)
            if i is None:
                cells.append(None)
                continue
            t = r.table
            case = cm.get(cid)
            output = None if case is None else case.output
            if first_input is None and case is not None:
                first_input = case.input
            v = int(ok[i])
            text = _text(output)
            cells.append({"run": r.key, "row": i, "status": STATUS_NAMES[int(t.status[i])],
                          "score": float(t.score[i]), "passed": None if v < 0 else bool(v),
                          "output": text[:OUTPUT_EXCERPT], "cut": len(text) > OUTPUT_EXCERPT,
                          "has_output": output is not None, "loading": loaded[len(cells)] is None})
        out_rows.append({"id": cid, "input": _text(first_input)[:OUTPUT_EXCERPT], "cells": cells})
    page_data: dict[str, Any] = clean({"runs": [r.key for r in runs], "names": [r.label() for r in runs],
                                       "files": [r.path.name for r in runs],
                                       "total": total, "offset": offset, "limit": limit, "show": show,
                                       "outputs_pending": pending, "rows": out_rows})
    return page_data


def charts(run: Run, summary: Any, labels: dict[str, list[dict[str, Any]]], *, threshold: float,
           rule: str) -> list[dict[str, str]]:
    """The run's charts: score distribution, pass rate per category with its interval, cost and latency
    distributions, and the judge's pass/fail against human pass/fail labels."""
    from ..reports._charts import Rate, agreement, histogram, rate_bars

    t = run.table
    scored = t.status == SCORED
    out = [histogram(t.score[scored].tolist(), title="Score distribution (scored rows)", lo=0.0, hi=1.0,
                     chart_id="scores")]
    cats = [Rate(g.name, g.pass_rate.estimate, g.pass_rate.lo, g.pass_rate.hi, g.cases)
            for g in summary.categories]  # referee score's own per-category rates and intervals
    out.append(rate_bars(cats, title="Pass rate per category (95% interval)", chart_id="categories"))
    out.append(histogram(t.cost.tolist(), title="Cost per row", unit="$", chart_id="cost", colour="#8e6c8a"))
    out.append(histogram(t.latency.tolist(), title="Latency per row", unit=" ms", chart_id="latency",
                         colour="#b7791f"))
    out.append(agreement(pass_fail_pairs(run, labels, threshold=threshold, rule=rule),
                         title="Judge vs human labels (pass/fail)", chart_id="agreement"))
    return [{"id": c.id, "title": c.title, "svg": c.svg} for c in out]


def pass_fail_pairs(run: Run, labels: dict[str, list[dict[str, Any]]], *, threshold: float,
                    rule: str) -> list[tuple[bool, bool]]:
    """(judge passed, human passed) per labelled case with a pass/fail label and a scored row: the judge's side
    is its verdict under the run's pass rule, so a pass/fail label is compared with a pass/fail."""
    firsts = first_rows(run)
    ok = _verdicts(run, threshold, rule)
    out = []
    for cid, labs in labels.items():
        i = firsts.get(cid)
        human = next((lab.get("passed") for lab in reversed(labs) if isinstance(lab.get("passed"), bool)), None)
        if i is None or human is None or ok[i] < 0:
            continue
        out.append((bool(ok[i] == 1), bool(human)))
    return out


def coverage(run: Run) -> dict[str, Any]:
    """The coverage panel of a run on generated cases (``GET /api/runs/<run>/coverage``): cases per document, per
    kind and per persona from the provenance ``referee synth`` wrote (:func:`referee.synth.coverage_of`, the
    terminal table's own figures), read from each case's first row, else from the run's cases; ``cases`` 0 when
    none was generated. Drawn by ``reports._synth`` (escaped SVG) and cached per load of the file."""
    key = ("coverage", run.generation)
    hit = run.cached_summary(key)
    if hit is not None:
        return hit
    from ..reports._synth import coverage_charts
    from ..synth import coverage_of

    firsts = first_rows(run)
    wanted = set(firsts.values())
    cov = coverage_of(_row_dicts(run, wanted))
    if not cov["cases"]:  # rows that do not carry their case's metadata: the run's cases (waits for them)
        cases = run.cases()
        cov = coverage_of(c for cid in firsts if (c := cases.get(cid)) is not None)
    out = {"run": run.key, "cases": cov["cases"], "figures": cov,
           "charts": [{"id": c.id, "title": c.title, "svg": c.svg} for c in coverage_charts(cov)]
           if cov["cases"] else []}
    out = dict(clean(out))
    run.store_summary(key, out)
    return out


def _row_dicts(run: Run, wanted: set[int]) -> Any:
    """The decoded rows numbered in ``wanted``, in one sequential read of the file (a malformed line is skipped)."""
    for i, raw in enumerate(run.raw_lines()):
        if i in wanted:
            try:
                d = _loads(raw)
            except ValueError:
                continue
            if isinstance(d, dict):
                yield d
