"""The JSON summary of ``referee score`` (``--json-out``): every number the terminal shows, machine-readable."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from ..aggregate.summary import Summary
from ..gates import GateResult

JSON_SUMMARY_VERSION = 1


def _clean(v: Any) -> Any:
    if isinstance(v, float):
        return None if math.isnan(v) or math.isinf(v) else v
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_clean(x) for x in v]
    return v


def summary_dict(s: Summary, gates: list[GateResult], exit_code: int) -> dict[str, Any]:
    """Plain data (no NaN: undefined values are null). Top-level ``pass_rate``/``mean``/``n`` keep the
    seed's names; the rest is referee's."""
    body = dataclasses.asdict(s)
    o = s.overall
    data = {
        "summary_version": JSON_SUMMARY_VERSION,
        "results": s.path,
        "threshold": s.threshold,
        "n": o.cases,
        "pass_rate": o.pass_rate.estimate,
        "mean": o.mean.estimate,
        "exit_code": exit_code,
        "verdict": s.comparison.verdict if s.comparison else None,
        "gates": [dataclasses.asdict(g) for g in gates],
        **body,
    }
    return _clean(data)  # type: ignore[no-any-return]


def write_json(path: str, s: Summary, gates: list[GateResult], exit_code: int) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(summary_dict(s, gates, exit_code), f, indent=2, allow_nan=False)
        f.write("\n")
