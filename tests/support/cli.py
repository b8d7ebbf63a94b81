"""Running the CLI in-process in tests: one helper for every test folder."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from referee.cli import cli


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``referee <args>`` in this process: (exit code, stdout, stderr)."""
    code = cli(args)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def close_pipes(proc: subprocess.Popen[Any]) -> None:
    """Close a finished child's pipes (what ``with Popen(...)`` does): an open pipe is a ResourceWarning, and
    warnings are errors in this suite."""
    for f in (proc.stdin, proc.stdout, proc.stderr):
        if f is not None:
            f.close()
