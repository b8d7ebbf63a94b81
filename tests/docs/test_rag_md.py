"""docs/rag.md's own cases and suite, run as the page says with the stand-in judge and no key: the grounded
answer passes and the answer that invents a feature fails (faithfulness is critical), never by a weighted mean."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from referee.cli import cli
from referee.results import read_results

DOC = Path(__file__).resolve().parents[2] / "docs" / "rag.md"


def test_the_pages_suite_fails_the_invented_claim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    text = DOC.read_text(encoding="utf-8")
    cases = re.search(r"```jsonl[^\n]*\n(.*?)```", text, re.S)
    suite = re.search(r"```yaml[^\n]*\n(cases: rag.jsonl\n.*?)```", text, re.S)
    assert cases and suite
    (tmp_path / "rag.jsonl").write_text(cases.group(1), encoding="utf-8")
    (tmp_path / "rag_suite.yaml").write_text(suite.group(1), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REFEREE_CACHE_DIR", str(tmp_path / "cache"))
    assert cli(["run", "rag_suite.yaml", "--out", "rag_results.jsonl", "--provider", "standin"]) == 0
    rows = {r.id: r for r in read_results(tmp_path / "rag_results.jsonl").rows}
    bad = rows["sso"]
    assert bad.check("faithfulness").score == 0.0
    assert bad.passed is False and "critical_failed" in bad.flags
    assert rows["refund"].passed is True
    out = capsys.readouterr().out
    assert "sso score 0.000" in out  # named among the failures behind the numbers
