"""The command group (cli/__init__.py): a misspelt command gets the closest commands, as a misspelt flag does."""

from __future__ import annotations

import pytest

from referee.cli import cli


@pytest.mark.parametrize(("typed", "suggested"), [("rn", "'run'"), ("scroe", "'score'"), ("calibrte", "'calibrate'")])
def test_a_misspelt_command_gets_a_suggestion(typed: str, suggested: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli([typed]) == 2
    err = capsys.readouterr().err
    assert f"No such command '{typed}'" in err and "Did you mean" in err and suggested in err


def test_a_name_like_no_command_gets_none(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["zzzqqq"]) == 2
    err = capsys.readouterr().err
    assert "No such command 'zzzqqq'" in err and "Did you mean" not in err
