"""The JSON summary of ``referee score`` (``--json-out``): every number the terminal shows, machine-readable."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from ..aggregate._summary import Group, Summary
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


def summary_dict(s: Summary, gates: list[GateResult], exit_code: int) -> dict[str, Any]:
    """Plain data (no NaN: undefined values are null). Top-level ``pass_rate``/``mean``/``n`` keep the
    seed's names; the rest is referee's."""
    comp = s.comparison
    # Every regression is written once, as the seed's top-level list below; asdict would deep-copy it first.
    body = dataclasses.asdict(s if comp is None else dataclasses.replace(
        s, comparison=dataclasses.replace(comp, regression_scores=[])))
    if comp is not None:
        del body["comparison"]["regression_scores"]
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
        **body,
    }
    return _clean(data)  # type: ignore[no-any-return]


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
    data["regressions"] = [] if s.comparison is None else [
        {"id": i, "baseline_score": b, "current_score": c} for i, b, c in s.comparison.regression_scores]
    return data


def write_json(path: str, s: Summary, gates: list[GateResult], exit_code: int) -> None:
    """Write ``referee score``'s summary and gate verdicts as JSON (``--json-out``)."""
    data = summary_dict(s, gates, exit_code)
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
