"""`referee score` figures a seed user would misread (power over 100%, cost/latency means)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.scores import score, summary, write_rows


def test_power_line_never_prints_a_drop_over_100_percent(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    p = write_rows(tmp_path / "r.jsonl", [{"id": "a", "score": 0.9}, {"id": "b", "score": 0.1}])
    code, out, _ = score([p, "--json-out", str(tmp_path / "s.json")], capsys)
    assert code == 0
    line = next(x for x in out.splitlines() if "power:" in x)
    assert "no drop in pass rate is detectable" in line
    assert "140.1%" not in line and "smallest detected" not in line
    assert summary(tmp_path / "s.json")["power"]["detectable"] is False
    # With enough cases the usual sentence stays.
    rows = [{"id": f"c{i}", "score": 0.9 if i % 4 else 0.1} for i in range(200)]
    code, out, _ = score([write_rows(tmp_path / "big.jsonl", rows)], capsys)
    assert "is the smallest detected 80% of the time" in out


ROWS = [
    {"id": "a", "score": 0.9, "cost_usd": 0.01, "latency_ms": 100.0},
    {"id": "b", "score": 0.8, "cost_usd": 0.01, "latency_ms": 100.0},
    # A judge call that failed after retries: its 298 ms of retries is not the system's latency.
    {"id": "c", "status": "error", "error": "timeout", "cost_usd": 0.04, "latency_ms": 298.0},
]


def test_cost_and_latency_means_are_over_scored_rows_by_default(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    p = write_rows(tmp_path / "r.jsonl", ROWS)
    code, out, _ = score([p, "--json-out", str(tmp_path / "s.json"), "--fail-if-mean-latency-above", "150",
                          "--markdown", str(tmp_path / "s.md")], capsys)
    assert code == 0  # 100 ms over the scored rows; the error row would make it 166 ms
    s = summary(tmp_path / "s.json")
    assert s["overall"]["mean_latency_ms"] == pytest.approx(100.0)
    assert s["overall"]["mean_cost"] == pytest.approx(0.01)
    assert s["cost_rows"] == "scored"
    assert "means over scored rows only" in out and "--cost-latency-rows all" in out
    assert "over scored rows only" in (tmp_path / "s.md").read_text()


def test_cost_latency_rows_all_counts_every_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = write_rows(tmp_path / "r.jsonl", ROWS)
    code, out, _ = score([p, "--json-out", str(tmp_path / "s.json"), "--fail-if-mean-latency-above", "150",
                          "--cost-latency-rows", "all"], capsys)
    assert code == 1
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["overall"]["mean_latency_ms"] == pytest.approx(166.0)
    assert s["cost_rows"] == "all"
