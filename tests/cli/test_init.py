"""``referee init``: a starting suite that runs at once with no key (the stand-in judge) and exits as its gates
say."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.cli import cli
from referee.results import read_results


def test_init_then_run_with_no_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "evals"
    assert cli(["init", str(folder)]) == 0
    out = capsys.readouterr().out
    assert {p.name for p in folder.iterdir()} == {"cases.jsonl", "judge_prompt.md", "suite.yaml"}
    assert f"referee run {folder.as_posix()}/suite.yaml" in out
    assert "STAND-IN" in out and "ANTHROPIC_API_KEY" in out and "provider: openai" in out  # how to switch
    assert cli(["validate", str(folder / "suite.yaml")]) == 0
    capsys.readouterr()

    code = cli(["run", str(folder / "suite.yaml"), "--out", str(tmp_path / "r.jsonl")])
    text = capsys.readouterr().out
    rows = {r.id: r for r in read_results(tmp_path / "r.jsonl").rows}
    assert all(r.status == "scored" for r in rows.values()) and len(rows) == 6
    passed = sum(bool(r.passed) for r in rows.values())
    # The gate is fail_under 0.6: the run exits as the pass rate says.
    assert code == (0 if passed / len(rows) >= 0.6 else 1)
    assert code == 0 and "pass --fail-under" in text
    # The judge graded: the "I don't know" and the wrong year fail, labelled as the stand-in's verdicts.
    judge = {cid: r.check("judge") for cid, r in rows.items()}
    assert all(j is not None and "stand-in judge" in (j.reason or "") for j in judge.values())
    assert not rows["everest"].passed and not rows["moon-landing"].passed
    assert rows["capital-fr"].passed


def test_a_stricter_gate_fails_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "evals"
    assert cli(["init", str(folder)]) == 0
    suite = folder / "suite.yaml"
    suite.write_text(suite.read_text(encoding="utf-8").replace("fail_under: 0.6", "fail_under: 0.9"),
                     encoding="utf-8")
    capsys.readouterr()
    assert cli(["run", str(suite), "--out", str(tmp_path / "r.jsonl")]) == 1
    assert "FAIL --fail-under" in capsys.readouterr().out


def test_init_does_not_overwrite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "evals"
    assert cli(["init", str(folder)]) == 0
    (folder / "suite.yaml").write_text("name: mine\n", encoding="utf-8")
    assert cli(["init", str(folder)]) == 2
    assert "already exist" in capsys.readouterr().err
    assert (folder / "suite.yaml").read_text(encoding="utf-8") == "name: mine\n"
    assert cli(["init", str(folder), "--force"]) == 0
    assert "provider: standin" in (folder / "suite.yaml").read_text(encoding="utf-8")


def test_init_run_then_view_the_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The path a promptfoo user takes: init, view the folder (told to run first), run (told how to look), view
    the folder (its results, not its cases)."""
    from referee.view._inputs import expand_inputs

    monkeypatch.chdir(tmp_path)
    assert cli(["init", "evals"]) == 0
    assert "referee view evals/ --open" in capsys.readouterr().out
    assert cli(["view", "evals/", "--port", "0"]) == 2
    assert "run the suite first (referee run evals/suite.yaml)" in capsys.readouterr().err
    assert cli(["run", "evals/suite.yaml"]) == 0
    err = capsys.readouterr().err
    assert "look at it: referee view evals/suite_results.jsonl --open" in err
    assert "referee report evals/suite_results.jsonl --html evals/suite_results.html" in err
    files, notes = expand_inputs(["evals/"])
    assert [f.name for f in files] == ["suite_results.jsonl"] and notes == []
    # The suggested report command works as printed.
    assert cli(["report", "evals/suite_results.jsonl", "--html", "evals/suite_results.html"]) == 0
    assert (tmp_path / "evals" / "suite_results.html").stat().st_size > 0
