"""`prompts:` x `models:` problems are reported where they are written (line and path of the entry), once per
root cause however many pairs share it, with a "did you mean" for an unknown key."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.cli import cli

SUITE = """\
cases: cases.jsonl
prompts:
  - v1.md
  - missing.md
  - {id: short, prompt: v1.md, sytem: "Be brief."}
models: ["openai:gpt-4o-mini", {provider: anthropic, model: claude-haiku-4-5, id: haiku}, "openai:gpt-4o"]
evaluators:
  - llm_judge: '- accuracy: right'
"""


def _write(tmp: Path, suite: str = SUITE, cases: int = 4) -> Path:
    (tmp / "v1.md").write_text("Answer: {input}\n", encoding="utf-8")
    (tmp / "cases.jsonl").write_text("".join(f'{{"id": "c{i}", "input": "q", "reference": "r"}}\n'
                                             for i in range(cases)), encoding="utf-8")
    p = tmp / "suite.yaml"
    p.write_text(suite, encoding="utf-8")
    return p


def test_matrix_problems_name_their_entry_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = _write(tmp_path)
    assert cli(["validate", str(p)]) == 2
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.startswith(str(p) + ":") and not x.endswith("problem(s)")]
    assert lines == [
        f"{p}:4 prompts[1].prompt: prompt file not found: {tmp_path / 'missing.md'}",
        f"{p}:5 prompts[2].sytem: unknown key (did you mean 'system'?)",
    ], err
    assert "targets[" not in err and f"{p}: 2 problem(s)" in err


def test_validate_counts_the_judge_calls_the_dry_run_counts(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    p = _write(tmp_path, SUITE.replace("  - missing.md\n", "").replace(", sytem: \"Be brief.\"", ""))
    assert cli(["validate", str(p)]) == 0
    ok = capsys.readouterr().out
    assert cli(["run", str(p), "--dry-run", "--provider", "openai", "--model", "gpt-4o-mini"]) == 0
    dry = capsys.readouterr().out
    # 4 cases x 6 targets (2 prompts x 3 models) x 1 judge
    assert "24 judge call(s) per run" in ok and "= 24 judge call(s)" in dry


def test_a_misspelt_models_key_is_one_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = _write(tmp_path, SUITE.replace("  - missing.md\n", "").replace(", sytem: \"Be brief.\"", "")
               .replace("models:", "modles:"))
    assert cli(["validate", str(p)]) == 2
    err = capsys.readouterr().err
    assert "unknown key 'modles' (did you mean 'models'?)" in err and "needs 'models:' too" not in err
    assert f"{p}: 1 problem(s)" in err
