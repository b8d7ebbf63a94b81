"""The JSON summary of ``referee score`` (``--json-out``): every number the terminal shows, machine-readable."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from ..aggregate._summary import Group, PairedTest, Summary
from ..gates._engine import GateResult

JSON_SUMMARY_VERSION = 1


def _clean(v: Any) -> Any:
    if isinstance(v, float):
        return None if math.isnan(v) or math.isinf(v) else float(v)  # numpy scalars become plain floats
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_clean(x) for x in v]
    return v


def summary_dict(s: Summary, gates: list[GateResult], exit_code: int, *, ci: bool = False) -> dict[str, Any]:
    """Plain data (no NaN: undefined values are null). Top-level ``pass_rate``/``mean``/``n`` keep the
    seed's names; the rest is referee's. ``ci`` (the seed's ``--ci``) adds the seed's ``confidence``,
    ``per_category_confidence`` and ``multiple_comparisons_correction``."""
    comp = s.comparison
    # Every regression is written once, as the seed's top-level list below; asdict would deep-copy it first.
    body = dataclasses.asdict(s if comp is None else dataclasses.replace(
        s, comparison=dataclasses.replace(comp, regression_scores=[], magnitude_drop_scores=[])))
    if comp is not None:
        del body["comparison"]["regression_scores"]
        del body["comparison"]["magnitude_drop_scores"]
    o = s.overall
    data = {
        "summary_version": JSON_SUMMARY_VERSION,
        "results": s.path,
        "threshold": s.threshold,
        "pass_rule": s.pass_rule,
        "n": o.cases,
        "pass_rate": o.pass_rate.estimate,
        "mean": o.mean.estimate,
        "exit_code": exit_code,
        "verdict": s.comparison.verdict if s.comparison else None,
        "gates": [dataclasses.asdict(g) for g in gates],
        **_seed_keys(s),
        **(_seed_confidence(s) if ci else {}),
        **body,
    }
    return _clean(data)  # type: ignore[no-any-return]


# The seed calls an interval's width unreliable under this many cases (its significance verdict still holds).
_CI_RELIABLE_N = 20


def _r4(v: float | None) -> float | None:
    return None if v is None else round(float(v), 4)  # the seed rounds every figure of these keys to 4 places


def _seed_confidence(s: Summary) -> dict[str, Any]:
    """The seed's ``--ci`` keys in its shape, from referee's figures: ``confidence`` (the run-wide intervals
    and, against a baseline, the paired differences), ``per_category_confidence`` (the paired differences per
    category, or why they were skipped) and ``multiple_comparisons_correction``."""

    def interval(g: Group, which: str) -> dict[str, Any]:
        iv = g.pass_rate if which == "pass" else g.mean
        return {"point": _r4(iv.estimate), "ci_lo": _r4(iv.lo), "ci_hi": _r4(iv.hi), "n": g.cases,
                "n_boot": s.n_boot, "ci_width_reliable": g.cases >= _CI_RELIABLE_N}

    def paired(t: PairedTest) -> dict[str, Any]:
        excludes_zero = t.lo is not None and t.hi is not None and not t.lo <= 0 <= t.hi
        return {"point_a": _r4(t.point_a), "point_b": _r4(t.point_b), "diff": _r4(t.diff), "ci_lo": _r4(t.lo),
                "ci_hi": _r4(t.hi), "p_value": _r4(t.p_value), "significant_at_0.05": excludes_zero,
                "n": t.n, "n_boot": s.n_boot, "ci_width_reliable": t.n >= _CI_RELIABLE_N,
                "significant_after_correction": t.significant}

    key = {"pass rate": "paired_pass_rate_diff", "mean score": "paired_mean_score_diff"}
    confidence: dict[str, Any] = {"pass_rate_ci": interval(s.overall, "pass"),
                                  "mean_score_ci": interval(s.overall, "mean")}
    per_category: dict[str, Any] = {}
    comp = s.comparison
    n_tests = 0
    if comp is not None:
        n_tests = len(comp.tests)
        for t in comp.tests:
            if t.scope == "overall":
                confidence[key[t.metric]] = paired(t)
        for name, (n, why) in comp.category_tests.items():
            entry: dict[str, Any] = {"n": n}
            if why is not None:
                entry["skipped_reason"] = why
            else:
                entry.update({key[t.metric]: paired(t) for t in comp.tests if t.scope == name})
            per_category[name] = entry
    return {"confidence": confidence, "per_category_confidence": per_category,
            "multiple_comparisons_correction": {"method": "benjamini_hochberg", "family_alpha": 0.05,
                                                "n_tests": n_tests}}


def _seed_keys(s: Summary) -> dict[str, Any]:
    """The keys of the seed aggregator's ``--json-out``, so scripts that read it keep working. ``total`` and
    ``count`` are scored cases (unscored rows are in neither); with repeats ``pass_count`` is
    ``pass_rate x total``, rounded."""

    def _block(g: Group) -> dict[str, Any]:
        pr = g.pass_rate.estimate
        out: dict[str, Any] = {"count": g.cases, "mean_score": g.mean.estimate, "pass_rate": pr}
        if g.mean_cost is not None:
            out["mean_cost_usd"] = g.mean_cost
        if g.mean_latency_ms is not None:
            out["mean_latency_ms"] = g.mean_latency_ms
        return out

    o = _block(s.overall)
    pr = s.overall.pass_rate.estimate
    data: dict[str, Any] = {"total": o.pop("count"), "pass_count": 0 if pr is None else round(pr * s.overall.cases)}
    data.update(o)
    data["by_category"] = {g.name: _block(g) for g in s.categories}
    comp = s.comparison
    data["regressions"] = [] if comp is None else [
        {"id": i, "baseline_score": b, "current_score": c, "kind": kind}
        for kind, scores in (("threshold_crossing", comp.regression_scores),
                             ("magnitude_drop", comp.magnitude_drop_scores))
        for i, b, c in scores]
    return data


def write_json(path: str, s: Summary, gates: list[GateResult], exit_code: int, *, ci: bool = False,
               extra: dict[str, Any] | None = None) -> None:
    """Write ``referee score``'s summary and gate verdicts as JSON (``--json-out``; ``ci``: with the seed's
    ``--ci`` keys; ``extra``: more top-level keys, such as a judge panel's figures under ``panels``)."""
    data = summary_dict(s, gates, exit_code, ci=ci)
    if extra:
        data.update(extra)
    try:  # json's indenting encoder is pure Python: a million-row run's regression list takes a second
        import orjson
    except ImportError:  # pragma: no cover - orjson is a dependency; json is the fallback
        with open(path, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, allow_nan=False)
            f.write("\n")
        return
    with open(path, "wb") as fb:
        fb.write(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE
                                 | orjson.OPT_SERIALIZE_NUMPY))
