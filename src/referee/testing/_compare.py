"""Comparing two results files the way a user would: same rows, whatever the order and the timings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TIMING_KEYS = frozenset({"latency_ms", "duration_s", "wall_s"})
"""Fields that measure time (a row's latency, the sandbox's run time; also any ``*_latency_ms``, such as a
target's ``judge_latency_ms``): they differ between any two runs."""


def _is_timing(key: str) -> bool:
    return key in TIMING_KEYS or key.endswith("_latency_ms")


def _drop_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_timings(v) for k, v in value.items() if not _is_timing(k)}
    if isinstance(value, list):
        return [_drop_timings(v) for v in value]
    return value


def rows_without_timings(path: str | Path) -> list[str]:
    """The rows of a results file as canonical JSON lines without timings, sorted (rows are written in
    completion order, which concurrency makes vary). Two runs that computed the same give equal lists."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return sorted(json.dumps(_drop_timings(json.loads(line)), sort_keys=True, ensure_ascii=False)
                  for line in lines if line.strip())
