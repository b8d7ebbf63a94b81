"""The README's first screen stays true: what referee is, the two set-up commands, and the three things to try
next, each of which works as written."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from referee.cli import cli

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
FIRST = README.split("\n## ", 2)
TOP = "\n## ".join(FIRST[:2])  # the title, the summary and the set-up section


def test_first_screen_says_what_and_how_and_has_no_history() -> None:
    assert "referee tells you whether your LLM prompts and agents are any good" in TOP
    assert "bash scripts/example" in TOP and "bash scripts/test" in TOP
    assert (ROOT / "scripts" / "example").is_file() and (ROOT / "scripts" / "test").is_file()
    tries = re.findall(r"^\d\. \*\*(.+?)\*\*", TOP, flags=re.M)
    assert len(tries) == 3, tries
    for word in ("seed", "issue", "step 10", "part 4"):
        assert not re.search(rf"\b{word}\b", TOP, flags=re.I), word


def test_try_one_init_and_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    assert "`referee init evals && referee run evals/suite.yaml`" in TOP
    monkeypatch.chdir(tmp_path)
    assert cli(["init", "evals"]) == 0
    assert cli(["run", "evals/suite.yaml"]) == 0
    assert "exit 0: passed" in capsys.readouterr().out


def test_try_two_names_what_the_example_writes() -> None:
    assert "`referee view referee-example/targets_out --open`" in TOP
    steps = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "src" / "referee" / "example").glob("step_*.py"))
    assert '"targets_out"' in steps and '"judged_after.jsonl"' in steps
    assert "referee-example" in (ROOT / "src" / "referee" / "cli" / "cmd_example.py").read_text(encoding="utf-8")


def test_try_three_the_python_line_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    m = re.search(r"`(referee\.evaluate\(.+?\))`", TOP, flags=re.S)
    assert m is not None
    import referee

    monkeypatch.chdir(tmp_path)
    result = eval(" ".join(m.group(1).split()), {"referee": referee})  # noqa: S307 - the README's own line
    assert result.passed and "<table" in result._repr_html_()
    assert os.listdir(tmp_path) == []  # nothing written without out=
