"""Writing small results files for the score tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run_cli


def write_rows(path: Path, rows: list[dict[str, Any]], extra_lines: list[str] | None = None) -> str:
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
        for line in extra_lines or []:
            f.write(line + "\n")
    return str(path)


def seed_rows(scores: list[float], categories: list[str] | None = None, **extra: Any) -> list[dict[str, Any]]:
    """Rows as the seed's judge runner writes them: id, score, category, rationale (no schema_version)."""
    cats = categories or ["general"]
    return [{"id": f"case-{i:03d}", "score": s, "category": cats[i % len(cats)], "rationale": f"why {i}", **extra}
            for i, s in enumerate(scores)]


def score(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``referee score <args>``: (exit code, stdout, stderr)."""
    return run_cli(["score", *args], capsys)


def summary(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data
