"""A user error raised from the Python API is one exception, without a chained traceback, and names the Python
parameter (``base_url=``); the same error from the command line names the flag (``--base-url``)."""

from __future__ import annotations

import traceback
from pathlib import Path

import pytest

import referee
from referee.cli import cli
from referee.errors import ProviderAuthError, UserError, cli_wording
from referee.providers import get_provider

CASES = [{"id": "a", "input": "2+2?", "output": "4", "reference": "4"}]


@pytest.fixture
def no_openai_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.mark.usefixtures("no_openai_key")
def test_a_missing_key_from_python_is_one_exception_naming_base_url() -> None:
    with pytest.raises(UserError) as ei:
        referee.evaluate(CASES, evaluators=["llm_judge"], judge="openai:gpt-4o-mini")
    exc = ei.value
    msg = str(exc)
    assert "OPENAI_API_KEY" in msg and "base_url=" in msg and "--base-url" not in msg
    assert exc.__cause__ is None and (exc.__context__ is None or exc.__suppress_context__)
    shown = "".join(traceback.format_exception(exc))
    assert shown.count("Traceback") == 1
    assert "During handling" not in shown and "direct cause" not in shown


@pytest.mark.usefixtures("no_openai_key")
def test_an_evaluator_name_error_from_python_is_not_chained_to_the_event_loop() -> None:
    with pytest.raises(UserError) as ei:
        referee.evaluate(CASES, evaluators=["no_such_check"])
    assert "no_such_check" in str(ei.value)
    assert "During handling" not in "".join(traceback.format_exception(ei.value))


@pytest.mark.usefixtures("no_openai_key")
def test_the_same_error_names_flags_under_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ProviderAuthError, match="--base-url"), cli_wording():
        get_provider("openai", "gpt-4o-mini")
    with pytest.raises(ProviderAuthError, match=r"use base_url= for"):
        get_provider("openai", "gpt-4o-mini")  # the marker is gone once the block ends
    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"id": "a", "input": "q", "output": "a", "reference": "a"}\n', encoding="utf-8")
    template = tmp_path / "t.txt"
    template.write_text("Grade {output} against {reference}\n", encoding="utf-8")
    code = cli(["judge", str(cases), "-t", str(template), "--provider", "openai", "--out",
                str(tmp_path / "out.jsonl")])
    err = capsys.readouterr().err
    assert code == 2 and "--base-url" in err and "base_url=" not in err
