"""Runs and label files for the alignment tests: a judge whose score follows the label through a monotone but
miscalibrated curve (what a score map can fix), or ignores it (what nothing can fix)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from referee.results import JudgeInfo, ResultRow


def write_run(path: Path, scores: dict[str, float], *, model: str = "judge-1", template_hash: str = "tpl-1",
              metadata: dict[str, dict[str, Any]] | None = None) -> Path:
    rows = [ResultRow(id=cid, status="scored", score=s, evaluator="rubric",
                      judge=JudgeInfo(provider="openai", model=model, template_hash=template_hash),
                      metadata=(metadata or {}).get(cid, {}))
            for cid, s in scores.items()]
    path.write_text("".join(r.model_dump_json(exclude_none=True) + "\n" for r in rows), encoding="utf-8")
    return path


def write_labels(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def squashed(n: int, seed: int, *, levels: int = 5, noise: float = 0.015) -> tuple[dict[str, float], dict[str, float]]:
    """``n`` cases labelled on ``levels`` levels (0-1) and a judge that ranks them right but squeezes every score
    into 0.55-0.75: monotone in the label, far from it in value."""
    rng = np.random.default_rng(seed)
    lab = rng.integers(0, levels, size=n) / (levels - 1)
    judge = np.clip(0.55 + 0.2 * lab + rng.normal(0, noise, size=n), 0, 1)
    ids = [f"case-{i:03d}" for i in range(n)]
    return dict(zip(ids, judge.tolist(), strict=True)), dict(zip(ids, lab.tolist(), strict=True))


def noise(n: int, seed: int, *, binary: bool) -> tuple[dict[str, float], dict[str, float]]:
    """A judge and labels that know nothing of each other."""
    rng = np.random.default_rng(seed)
    ids = [f"case-{i:03d}" for i in range(n)]
    lab = rng.integers(0, 2, size=n).astype(float) if binary else rng.integers(0, 5, size=n) / 4
    return dict(zip(ids, rng.random(n).tolist(), strict=True)), dict(zip(ids, lab.tolist(), strict=True))
