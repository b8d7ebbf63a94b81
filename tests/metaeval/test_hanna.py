"""HANNA: the README's Kendall tau reference values, recomputed from the score table."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.cli import cli
from referee.metaeval._hanna import (
    CRITERIA,
    human_ceiling,
    needed_columns,
    read_hanna,
    story_level,
    system_level,
)

CODES = list(CRITERIA)


def _est(x: float | None) -> float:
    assert x is not None
    return x

STORY = {
    ("Beluga-13B", 1): [0.206, 0.256, 0.274, 0.166, 0.257, 0.318],
    ("Mistral-7B", 1): [0.216, 0.222, 0.204, 0.125, 0.209, 0.232],
    ("Llama-13B", 1): [0.161, 0.180, 0.148, 0.121, 0.112, 0.256],
    ("ChatGPT", 1): [0.152, 0.217, 0.201, 0.048, 0.189, 0.269],
    ("ChatGPT", 3): [0.115, 0.141, -0.011, 0.069, 0.062, 0.120],
}
SYSTEM = {
    "Beluga-13B": [0.494, 0.778, 0.733, 0.733, 0.733, 0.719],
    "ChatGPT": [0.067, 0.733, 0.556, 0.067, 0.644, 0.719],
}
CEILING = [0.057, -0.209, 0.056, -0.082, 0.089, 0.192]


@pytest.fixture(scope="module")
def table(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    from tests.conftest import SHARED_DATA

    path = SHARED_DATA / "hanna" / "hanna_metric_scores_llm.csv"
    if not path.exists():
        pytest.skip(f"shared evaluation data not found at {path}")
    return read_hanna(path, columns=needed_columns())


def test_story_level_reference_values(table) -> None:  # type: ignore[no-untyped-def]
    assert len(table.systems) == 960  # the 96 human-written stories are excluded
    for (judge, prompt), expected in STORY.items():
        got = [round(_est(story_level(table, judge, prompt, c).estimate), 3) for c in CODES]
        assert got == expected, (judge, prompt)


def test_human_leave_one_out_ceiling(table) -> None:  # type: ignore[no-untyped-def]
    assert [round(human_ceiling(table, c), 3) for c in CODES] == CEILING


def test_system_level_reference_values(table) -> None:  # type: ignore[no-untyped-def]
    for judge, expected in SYSTEM.items():
        assert [round(system_level(table, judge, 1, c), 3) for c in CODES] == expected


def test_hanna_cli(shared_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    csv_path = shared_data / "hanna" / "hanna_metric_scores_llm.csv"
    assert cli(["metaeval", "hanna", str(csv_path), "--judge", "Beluga-13B"]) == 0
    out = capsys.readouterr().out
    assert "0.318" in out and "-0.209" in out


@pytest.mark.parametrize("cell", ['"{""a"": 1}"', '"[1, ""x""]"', "not json"])
def test_a_cell_that_is_not_a_list_of_numbers_names_line_and_column(tmp_path: Path, cell: str) -> None:
    from referee.errors import InputError

    path = tmp_path / "hanna.csv"
    path.write_text(f'Model,Coherence\nGPT-2,"[1, 2]"\n\nBART,{cell}\n', encoding="utf-8")
    with pytest.raises(InputError) as exc:
        read_hanna(path)
    assert exc.value.line == 4 and exc.value.field == "Coherence"
