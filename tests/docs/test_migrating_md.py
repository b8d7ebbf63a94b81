"""docs/migrating-from-agent-eval.md's cost figure is the benchmark's: referee's default request costs more per
case than the 20% a cost gate tolerates against a seed-judged baseline, and --request-format seed costs the same."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _bench() -> object:
    spec = importlib.util.spec_from_file_location("bench_tokens", ROOT / "bench" / "bench_tokens.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_tokens"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_the_page_states_the_measured_cost_and_the_way_out(capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("REFEREE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-local-only")  # the local server's; restored after
    bench = _bench()
    bench.billed(bench.TEMPLATE, bench.CASE)  # type: ignore[attr-defined]
    out = capsys.readouterr().out
    ratio = {name.strip(): float(x) for name, x in re.findall(r"^  (.+?)\s+\d+\s+[\d.]+\s+[\d.]+\s+([\d.]+)$", out,
                                                               re.M)}
    assert ratio["seed run_judge.py"] == 1.0 and ratio["referee --request-format seed"] == 1.0
    assert ratio["referee (default)"] > 1.2  # past --fail-on-cost-regression's default tolerance
    page = (ROOT / "docs" / "migrating-from-agent-eval.md").read_text(encoding="utf-8")
    assert "about 40% more input tokens" not in page
    stated = [float(x) for x in re.findall(r"([\d.]+)x the cost per case", page)]
    assert stated and all(x > 1.2 for x in stated)
    assert "--fail-on-cost-regression" in page and "--request-format seed" in page
