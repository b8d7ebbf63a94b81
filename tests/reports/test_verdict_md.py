"""The 5-dimension verdict header's "Evaluator" and "Output Evaluated" are settable."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.cli import cli
from referee.testing import FakeLLMServer
from tests.support.rubrics import OUTPUT, rubric_reply


def test_evaluator_and_output_evaluated_flags(fake_server: FakeLLMServer, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    answer = tmp_path / "answer.md"
    answer.write_text(OUTPUT)
    fake_server.responder = lambda req: rubric_reply()
    base = ["evaluate", str(answer), "--task", "Refund my duplicate charge", "--provider", "openai",
            "--base-url", fake_server.openai_base_url, "--model", "judge-1"]
    assert cli([*base, "--evaluator", "qa-agent / TASK-42",
                "--output-evaluated", "Refund reply drafted by support-bot v3"]) == 0
    out = capsys.readouterr().out
    assert "**Output Evaluated**: Refund reply drafted by support-bot v3\n" in out
    assert "**Evaluator**: qa-agent / TASK-42\n" in out
    # Defaults stay: the file name and referee with the rubric and judge.
    assert cli(base) == 0
    out = capsys.readouterr().out
    assert "**Output Evaluated**: answer.md\n" in out and "**Evaluator**: referee rubric agent-evaluation" in out
