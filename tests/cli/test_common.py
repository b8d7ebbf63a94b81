"""The CLI's shared judge options: a missing key names the key to set and the stand-in to try without one."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.cli import cli

SUITE = """cases: [{id: a, input: "2+2?", output: "4", reference: "4"}]
evaluators: [{llm_judge: {rubric: "- correct"}}]
"""


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "REFEREE_PROVIDER",
                "REFEREE_BASE_URL", "REFEREE_MODEL"):
        monkeypatch.delenv(var, raising=False)


def test_a_missing_key_suggests_the_stand_in_and_the_stand_in_then_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], no_keys: None) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE, encoding="utf-8")
    assert cli(["run", str(suite), "--out", str(tmp_path / "out.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "ANTHROPIC_API_KEY" in err and "--provider standin" in err and "--no-judge" in err
    assert 'judge="standin"' not in err  # the command line's spelling, not Python's
    assert not (tmp_path / "out.jsonl").exists()  # nothing paid for, nothing written
    # The suggestion works as written.
    assert cli(["run", str(suite), "--out", str(tmp_path / "out.jsonl"), "--provider", "standin"]) == 0


def test_a_missing_key_in_judge_names_the_stand_in(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   no_keys: None) -> None:
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "output": "4"}\n', encoding="utf-8")
    (tmp_path / "t.md").write_text("Judge <output>{output}</output>. Reply with JSON only.", encoding="utf-8")
    code = cli(["judge", str(tmp_path / "cases.jsonl"), "-t", str(tmp_path / "t.md"), "-o", str(tmp_path / "o.jsonl")])
    assert code == 2 and "--provider standin" in capsys.readouterr().err


def test_a_built_in_provider_is_taken_without_reading_installed_plugins(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading every installed package's entry points costs start-up time; a built-in name needs none of it.
    A name that is not built in still reads them, and is refused with the names there are."""
    from referee import providers

    scans: list[int] = []

    def counted() -> dict[str, object]:
        scans.append(1)
        return {}

    monkeypatch.setattr(providers, "_entry_points", counted)
    monkeypatch.setattr(providers, "_EP_NAMES", None)
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "output": "4", "reference": "4"}\n', encoding="utf-8")
    (tmp_path / "t.md").write_text("Judge <output>{output}</output>. Reply with JSON only.", encoding="utf-8")
    base = ["judge", str(tmp_path / "cases.jsonl"), "-t", str(tmp_path / "t.md"), "--no-cache"]
    assert cli([*base, "-o", str(tmp_path / "a.jsonl"), "--provider", "standin"]) == 0
    assert scans == []
    assert cli([*base, "-o", str(tmp_path / "b.jsonl"), "--provider", "Standin"]) == 2
    err = capsys.readouterr().err
    assert scans and "'Standin' is not one of" in err and "'standin'" in err
    assert not (tmp_path / "b.jsonl").exists()
