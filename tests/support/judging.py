"""Helpers for the foundation tests: write inputs, run ``referee judge`` in-process against the fake server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from referee.testing import FakeLLMServer
from tests.support.cli import run_cli as run  # noqa: F401 - the foundation tests' name for it

TEMPLATE = """Grade the answer.
<input>{input}</input>
<output>{output}</output>
Reply with JSON: {"quality": {"score": 0.0-1.0, "rationale": "..."}, "overall_score": 0.0-1.0}
"""

KEY = "sk-test-0123456789abcdefSECRET"


def verdict(score: float = 0.8, rationale: str = "fine", **extra: Any) -> str:
    return json.dumps({"quality": {"score": score, "rationale": rationale}, "overall_score": score, **extra})


def write_cases(path: Path, cases: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    return path


def make_cases(n: int, prefix: str = "c") -> list[dict[str, Any]]:
    return [{"id": f"{prefix}{i}", "input": f"question {i}", "output": f"answer {i}"} for i in range(n)]


def read_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def judge_args(tmp: Path, srv: FakeLLMServer, *extra: str, cases: list[dict[str, Any]] | None = None,
               out: str = "results.jsonl", provider: str = "openai") -> list[str]:
    cases_path = tmp / "cases.jsonl"
    if cases is not None or not cases_path.exists():
        write_cases(cases_path, cases if cases is not None else make_cases(3))
    tmpl = tmp / "judge.md"
    if not tmpl.exists():
        tmpl.write_text(TEMPLATE, encoding="utf-8")
    base = srv.openai_base_url if provider == "openai" else srv.url
    return ["judge", str(cases_path), "--template", str(tmpl), "--out", str(tmp / out),
            "--provider", provider, "--base-url", base, "--model", "judge-model", *extra]
