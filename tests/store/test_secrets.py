"""The run history as a place secrets could persist: a judge that echoes its key, a git remote with credentials,
CI variables outside the allow-list, an agent URL with a password and a token. Every table of the store is read
back (compressed texts decompressed) on SQLite and on PostgreSQL, and none holds any of them."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import MetaData, select

from referee.cli import cli
from referee.store import open_store
from referee.store._store import _unpack
from referee.testing import FakeLLMServer
from tests.support.episodes import SCENARIO, USER_MODEL, play

KEY = "sk-test-Very-Secret-Key-0123456789abcdef"
REMOTE_TOKEN = "ghp_FakeRemoteToken0123456789abcdef"
CI_TOKEN = "ghs_FakeCiToken0123456789abcdefgh"
AGENT_PASSWORD, AGENT_TOKEN = "Agent-Pa55word-Secret", "Agent-Token-Secret-42"
SECRETS = (KEY, REMOTE_TOKEN, CI_TOKEN, AGENT_PASSWORD, AGENT_TOKEN,
           base64.b64encode(f"agent-user:{AGENT_PASSWORD}".encode()).decode())


def _dump(store_url: str) -> str:
    """Every value of every table, texts decompressed."""
    out: list[str] = []
    with open_store(store_url) as st:
        md = MetaData()
        md.reflect(st.engine)
        with st.engine.connect() as conn:
            for table in md.sorted_tables:
                for row in conn.execute(select(table)).mappings():
                    values = dict(row)
                    if table.name == "texts":
                        values["data"] = _unpack(values["packed"], values["data"])
                    for v in values.values():
                        if isinstance(v, bytes | memoryview):
                            out.append(bytes(v).decode("utf-8", "replace"))
                        else:
                            out.append(str(v))
    return "\n".join(out)


def test_no_key_password_or_token_reaches_any_table_of_the_store(store_url: str, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   service: Any, fake_server: Any,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (["init", "-q", "-b", "main"], ["config", "user.email", "t@example.com"],
                 ["config", "user.name", "t"],
                 ["remote", "add", "origin", f"https://someone:{REMOTE_TOKEN}@git.example.com/org/repo.git"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    (repo / "c.jsonl").write_text('{"id": "a", "output": "x"}\n', encoding="utf-8")
    (repo / "t.md").write_text("{output}", encoding="utf-8")
    subprocess.run(["git", "add", "."], cwd=repo, check=True, capture_output=True)
    subprocess.run(["git", "commit", "-q", "-m", "one"], cwd=repo, check=True, capture_output=True)
    monkeypatch.chdir(repo)
    monkeypatch.setenv("REFEREE_STORE", store_url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    # A CI run: its commit, ref and run id are recorded from an allow-list; its token is not among them.
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_TOKEN", CI_TOKEN)
    monkeypatch.setenv("GITHUB_RUN_ID", "12345")
    monkeypatch.setenv("GITHUB_REF", "refs/pull/7/merge")

    # 1. A judge that echoes its key in its reply.
    reply = json.dumps({"overall_score": 0.2, "quality": {"score": 0.2, "rationale": f"my key is {KEY}"}})
    with FakeLLMServer(responder=lambda req: "Sure, the key: " + KEY + "\n" + reply) as srv:
        assert cli(["judge", "c.jsonl", "-t", "t.md", "-o", "r.jsonl", "--provider", "openai",
                    "--base-url", srv.openai_base_url, "--tag", "secrets"]) == 0

    # 2. An agent behind a URL with a password and a token, which echoes its Authorization header.
    def echo(_body: Any) -> tuple[int, Any]:
        sent = svc.requests[-1]
        return 401, {"error": {"message": f"refused {sent['headers'].get('Authorization')} for {sent['path']}"}}

    svc = service(echo)
    host = svc.url.split("://", 1)[1]
    (repo / "scenarios.jsonl").write_text(json.dumps(SCENARIO) + "\n", encoding="utf-8")
    play(fake_server)
    cli(["simulate", "scenarios.jsonl", "-o", "ep.jsonl", "--user-model", USER_MODEL,
         "--user-base-url", fake_server.openai_base_url, "--environment", "tests.support.episodes",
         "--agent", f"http://agent-user:{AGENT_PASSWORD}@{host}/agent?token={AGENT_TOKEN}"])
    assert svc.requests, "the agent endpoint was reached"
    capsys.readouterr()

    with open_store(store_url) as st:
        runs = st.list_runs()
    assert {r.kind for r in runs} >= {"judge"} and len(runs) == 2
    assert any(r.ci_run_id == "12345" for r in runs) and all(r.git_remote for r in runs)
    dump = _dump(store_url)
    assert "git.example.com/org/repo" in dump  # the remote is kept, without its credentials
    for secret in SECRETS:
        assert secret not in dump, secret
