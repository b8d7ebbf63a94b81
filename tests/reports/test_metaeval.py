"""The tables of ``referee metaeval`` and ``referee rank`` at 80 columns: folded, every column kept, every
figure whole, on the shared data's real judges."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.cli import cli

JB = "judgebench/outputs/gpt-4o-2024-05-13__arena_hard__o1-mini-2024-09-12.jsonl"


@pytest.mark.parametrize(("args", "headers", "figure"), [
    (["llmbar", "{data}/llmbar"], ["acc mean", "kappa", "agreement", "consistent", "prefers"], "["),
    (["judgebench", "{data}/" + JB], ["knowledge", "reasoning", "math", "coding", "overall"], "("),
    (["hanna", "{data}/hanna/hanna_metric_scores_llm.csv", "--judge", "Beluga-13B"],
     ["judge", "RE", "CH", "EM", "SU", "EG", "CX"], "-0.209"),
])
def test_every_table_fits_80_columns_with_every_column(shared_data: Path, capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch, args: list[str],
                                                       headers: list[str], figure: str) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert cli(["metaeval", *(a.replace("{data}", str(shared_data)) for a in args)]) == 0
    lines = capsys.readouterr().out.splitlines()
    table = [line for line in lines if line[:1] in "┏┃┡│└"]
    assert table and max(len(line) for line in table) <= 80
    text = "\n".join(lines)
    for h in headers:  # a folded table repeats the name column and keeps every other one
        assert h in text, h
    assert figure in text
