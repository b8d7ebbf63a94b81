"""Running the CLI in-process in tests: one helper for every test folder."""

from __future__ import annotations

import pytest

from referee.cli import cli


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``referee <args>`` in this process: (exit code, stdout, stderr)."""
    code = cli(args)
    cap = capsys.readouterr()
    return code, cap.out, cap.err
