"""``referee simulate``: scenarios played with a simulated user from the command line, pass^k printed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from referee.results import read_results
from referee.results._files import manifest_path
from referee.testing import FakeLLMServer
from tests.support.cli import run_cli
from tests.support.episodes import AGENT_MODEL, SCENARIO, USER_MODEL, count, play


def _argv(server: FakeLLMServer, cases: Path, out: Path, *extra: str) -> list[str]:
    return ["simulate", str(cases), "-o", str(out), "--agent-model", AGENT_MODEL,
            "--agent-base-url", server.openai_base_url, "--user-model", USER_MODEL,
            "--user-base-url", server.openai_base_url, "--environment", "tests.support.episodes", *extra]


def test_simulate_plays_every_try_and_prints_pass_hat_k(fake_server: FakeLLMServer, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(SCENARIO) + "\n", encoding="utf-8")
    out = tmp_path / "r.jsonl"
    play(fake_server)
    code, stdout, _ = run_cli(_argv(fake_server, cases, out, "--repeat", "2"), capsys)
    assert code == 0, stdout
    assert "refund-a1: pass(user_stop) pass(user_stop)" in stdout
    assert "pass^2 100.0%" in stdout and "ends: user_stop 2" in stdout
    rows = read_results(out).rows
    # rows are written as the tries finish, in either order
    assert sorted((r.id, r.repeat, r.score) for r in rows) == [("refund-a1", 0, 1.0), ("refund-a1", 1, 1.0)]
    paid = count(fake_server, AGENT_MODEL) + count(fake_server, USER_MODEL)
    assert paid == 10
    # A rerun into a new file replays every turn from the cache: no request reaches the server.
    fake_server.requests.clear()
    code, stdout, _ = run_cli(_argv(fake_server, cases, tmp_path / "again.jsonl", "--repeat", "2"), capsys)
    assert code == 0 and fake_server.requests == []


def test_simulate_with_nothing_graded_exits_one_and_bad_input_exits_two(fake_server: FakeLLMServer, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({**SCENARIO, "environment": {"class": "tests.support.episodes:Unhashable"}}) + "\n")
    play(fake_server)
    code, _, err = run_cli(_argv(fake_server, cases, tmp_path / "r.jsonl"), capsys)
    assert code == 1 and "nothing graded" in err
    cases.write_text(json.dumps({**SCENARIO, "user": {"instructions": "x", "max_turns": 0}}) + "\n")
    code, _, err = run_cli(_argv(fake_server, cases, tmp_path / "r2.jsonl"), capsys)
    assert code == 2 and "user.max_turns" in err and f"{cases}:1" in err
    code, _, err = run_cli(["simulate", "-o", str(tmp_path / "r3.jsonl")], capsys)
    assert code == 2 and "CASES or --tau2" in err


def test_an_agent_url_with_credentials_reaches_no_file(fake_server: FakeLLMServer, service: Any, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """``--agent http://user:password@host/agent?token=...``: the manifest's agent identity, the rows and the
    error of an endpoint that echoes its request (the Basic header built from user:password, the query) hold
    none of them."""
    import base64

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("REFEREE_STORE", f"sqlite:///{tmp_path / 'history.sqlite'}")  # the run history too
    password, token = "Pa55-w0rd-Very-Secret", "T0ken-Very-Secret-42"
    basic = base64.b64encode(f"agent-user:{password}".encode()).decode()

    def echo(_body: Any) -> tuple[int, Any]:
        sent = svc.requests[-1]
        return 401, {"error": {"message": f"refused {sent['headers'].get('Authorization')} for {sent['path']}"}}

    svc = service(echo)
    host = svc.url.split("://", 1)[1]
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(SCENARIO) + "\n", encoding="utf-8")
    out = tmp_path / "r.jsonl"
    play(fake_server)
    code, stdout, err = run_cli(["simulate", str(cases), "-o", str(out), "--user-model", USER_MODEL,
                                 "--user-base-url", fake_server.openai_base_url,
                                 "--agent", f"http://agent-user:{password}@{host}/agent?token={token}"], capsys)
    # The endpoint was reached with the credentials, and refused (so its echo is in the row's error).
    assert svc.requests and svc.requests[0]["headers"]["Authorization"] == f"Basic {basic}"
    assert code == 0, err
    [row] = read_results(out).rows
    assert row.details["episode"]["termination"] == "agent_error" and "HTTP 401" in row.details["episode"]["error"]
    manifest = json.loads(manifest_path(out).read_text(encoding="utf-8"))
    assert manifest["extra"]["agent"]["kind"] == "http" and host in manifest["extra"]["agent"]["url"]
    assert (tmp_path / "history.sqlite").stat().st_size > 0
    for f in tmp_path.iterdir():
        if f.is_file():
            data = f.read_bytes()
            for secret in (password, token, basic):
                assert secret.encode() not in data, (f.name, secret)
    for secret in (password, token, basic):
        assert secret not in stdout + err
