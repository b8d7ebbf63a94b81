"""The documented number knobs in the environment: a value that is not a finite number in range stops the command
with an error naming the variable, before any call."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.errors import UserError
from referee.runner import RetryPolicy
from referee.runner._env import KNOBS, env_seconds
from referee.testing import FakeLLMServer
from tests.support.judging import KEY, judge_args, run, verdict

BAD = ["nan", "inf", "-inf", "-1", "abc", "1e400", "100000"]


@pytest.mark.parametrize("name", sorted(KNOBS))
@pytest.mark.parametrize("value", BAD)
def test_a_knob_refuses_what_is_not_a_finite_number_in_range(monkeypatch: pytest.MonkeyPatch, name: str,
                                                             value: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(UserError, match=name):
        env_seconds(name)


def test_poll_intervals_have_a_floor_and_good_values_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFEREE_BATCH_POLL_S", "0")
    with pytest.raises(UserError, match="REFEREE_BATCH_POLL_S=0: expected a finite number of seconds from 0.05"):
        env_seconds("REFEREE_BATCH_POLL_S")
    monkeypatch.setenv("REFEREE_BATCH_POLL_S", " 0.25 ")
    assert env_seconds("REFEREE_BATCH_POLL_S") == 0.25
    monkeypatch.setenv("REFEREE_BATCH_POLL_S", "")
    assert env_seconds("REFEREE_BATCH_POLL_S") == 5.0
    monkeypatch.setenv("REFEREE_RETRY_BASE_DELAY", "0.2")
    assert RetryPolicy().base_delay == 0.2


def test_the_batch_runner_refuses_a_nan_window(monkeypatch: pytest.MonkeyPatch) -> None:
    from referee.runner._batch import BatchRunner

    monkeypatch.setenv("REFEREE_BATCH_WINDOW_S", "nan")
    with pytest.raises(UserError, match="REFEREE_BATCH_WINDOW_S"):
        BatchRunner(adapter=None)  # type: ignore[arg-type]


@pytest.mark.parametrize(("name", "value"), [("REFEREE_RETRY_BASE_DELAY", "abc"), ("REFEREE_BATCH_POLL_S", "inf")])
def test_a_bad_knob_stops_a_run_before_any_call(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch, fake_server: FakeLLMServer,
                                                name: str, value: str) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv(name, value)
    fake_server.script(verdict())
    code, _, err = run(judge_args(tmp_path, fake_server), capsys)
    assert code == 2 and name in err, err
    assert len(fake_server.requests) == 0


def test_validate_names_a_bad_knob(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "output": "{}"}\n', encoding="utf-8")
    (tmp_path / "suite.yaml").write_text("cases: cases.jsonl\nevaluators: [is_json]\n", encoding="utf-8")
    assert run(["validate", str(tmp_path / "suite.yaml")], capsys)[0] == 0
    monkeypatch.setenv("REFEREE_BATCH_WINDOW_S", "nan")
    code, _, err = run(["validate", str(tmp_path / "suite.yaml")], capsys)
    assert code == 2 and "REFEREE_BATCH_WINDOW_S=nan" in err
