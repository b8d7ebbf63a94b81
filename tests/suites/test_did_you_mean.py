"""Validation suggests the name meant: unknown evaluator names, unknown keys at any level, a misspelt entry key."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.cli import cli


def test_typos_get_did_you_mean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "output": "x"}\n', encoding="utf-8")
    p = tmp_path / "suite.yaml"
    p.write_text("cases: cases.jsonl\nevaluators:\n  - contians: [x]\n  - regex: a\n    wieght: 2\n"
                 "gatess:\n  fail_under: 0.5\nscoring:\n  treshold: 0.5\n", encoding="utf-8")
    assert cli(["validate", str(p)]) == 2
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.startswith(str(p))]
    assert any(":3 evaluators[0].contians: unknown evaluator 'contians' (did you mean 'contains'?)" in x
               for x in lines), err
    assert any(":4 evaluators[1]" in x and "'wieght' (did you mean 'weight'?)" in x for x in lines), err
    assert any(":6 gatess: unknown key 'gatess' (did you mean 'gates'?)" in x for x in lines), err
    assert any(":9 scoring.treshold: unknown key 'treshold' (did you mean 'threshold'?)" in x for x in lines), err
    # a name far from every known one gets no guess
    p.write_text("cases: cases.jsonl\nevaluators:\n  - zzzzqqq\n", encoding="utf-8")
    assert cli(["validate", str(p)]) == 2
    assert "did you mean" not in capsys.readouterr().err


def test_a_misspelt_option_gets_did_you_mean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "output": "x"}\n', encoding="utf-8")
    p = tmp_path / "suite.yaml"
    p.write_text("cases: cases.jsonl\nevaluators:\n  - contains: {vlaue: [x]}\n", encoding="utf-8")
    assert cli(["validate", str(p)]) == 2
    assert "evaluators[0].contains.vlaue: unknown option (did you mean 'value'?)" in capsys.readouterr().err
