"""The example's batch step (docs/scale.md's first run): a batch job at half price against the local stand-in
server, the same calls live at full price, a rerun from the cache, a dry run priced from genai-prices; the server
it starts is stopped."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from referee.cli import cli
from referee.example import ExampleContext, prepare
from referee.example import step_80_batch as step
from referee.results import read_results


def _costs(path: Path) -> list[float]:
    return [json.loads(x)["cost_usd"] for x in path.read_text().splitlines() if x.strip()]


def test_batch_step_with_the_stand_in(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REFEREE_BATCH_POLL_S", raising=False)
    monkeypatch.setenv("REFEREE_CACHE_DIR", str(tmp_path / "cache"))
    prepare(tmp_path)
    ctx = ExampleContext(dir=tmp_path, judge=True, judge_args=["--provider", "standin"], run_cli=cli, standin=True)
    outcome = step.run(ctx)
    out = capsys.readouterr()
    text = out.out + out.err
    assert "REFEREE_BATCH_POLL_S" not in os.environ  # the step's setting does not outlive it
    assert "submitted (openai, 12 requests)" in text and "completed, 12/12 done" in text
    batch, live = tmp_path / "batch_judged.jsonl", tmp_path / "batch_live.jsonl"
    rows = read_results(batch).rows
    assert len(rows) == 12 and all(r.status == "scored" and "stand-in judge" in (r.rationale or "") for r in rows)
    # Half the price of the same calls made live.
    assert sum(_costs(batch)) == pytest.approx(sum(_costs(live)) / 2)
    assert outcome is not None and f"${sum(_costs(batch)):.6f} in batch" in outcome
    # Nothing paid twice: the rerun made no call.
    assert "(0 judge calls, 12 from cache" in text
    assert "prices: genai-prices" in text and "(batch rate)" in text and "no call was made" in text


def test_the_server_is_stopped_even_when_a_command_fails() -> None:
    import socket

    with pytest.raises(RuntimeError, match="a step failed"), step.standin_server() as url:
        host, port = url.split("//", 1)[1].rsplit(":", 1)
        socket.create_connection((host, int(port)), timeout=5).close()  # it was serving
        raise RuntimeError("a step failed")
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((host, int(port)), timeout=5)


def test_batch_step_keeps_a_poll_setting_the_user_gave(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFEREE_BATCH_POLL_S", "7")
    with step._poll_quickly():
        assert os.environ["REFEREE_BATCH_POLL_S"] == "7"
    assert os.environ["REFEREE_BATCH_POLL_S"] == "7"
