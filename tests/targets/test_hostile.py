"""Targets under attack or misbehaving: secrets stay out of results, pacing holds, one writer per outputs file."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from referee.cli import cli
from referee.errors import UserError
from referee.targets import generate_outputs
from referee.targets._run import OutputStore

CASES = [{"id": f"c{i}", "input": f"q{i}"} for i in range(8)]


def test_a_service_echoing_its_credentials_never_puts_them_in_results(tmp_path: Path, service: Any,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    srv = service(lambda body: (401, {"error": "bad credentials: Bearer tok3n-Very-Secret-42"}))
    monkeypatch.setenv("APP_TOKEN", "tok3n-Very-Secret-42")
    (tmp_path / "cases.jsonl").write_text(json.dumps(CASES[0]) + "\n", encoding="utf-8")
    (tmp_path / "suite.yaml").write_text(f"""\
cases: cases.jsonl
targets:
  - id: app
    http: {{url: "{srv.url}/chat", headers: {{Authorization: "Bearer ${{APP_TOKEN}}"}}, body: {{m: "{{input}}"}},
            max_retries: 0}}
evaluators: [is_json]
""", encoding="utf-8")
    assert cli(["run", str(tmp_path / "suite.yaml"), "--out", str(tmp_path / "out")]) == 1
    assert srv.requests[0]["headers"]["Authorization"] == "Bearer tok3n-Very-Secret-42"
    for f in (tmp_path / "out").iterdir():
        assert "tok3n-Very-Secret-42" not in f.read_text(), f.name
    assert "HTTP 401" in (tmp_path / "out" / "app.jsonl").read_text()


def test_a_command_printing_a_key_on_stderr_is_redacted(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text("import sys\nsys.stderr.write('auth failed for sk-live-ABCDEFGHIJKLMNOP12345678')\n"
                                       "sys.exit(1)\n", encoding="utf-8")
    [(_, gen)] = generate_outputs({"id": "cli", "exec": "python agent.py"}, CASES[:1], base_dir=tmp_path)
    assert gen.error is not None and "exited 1" in gen.error and "ABCDEFGHIJKLMNOP" not in gen.error


def test_rate_limit_spaces_the_starts_and_concurrency_caps_the_flight(tmp_path: Path, user_module: Any) -> None:
    mod = user_module(
        "import asyncio, time\nSTARTS = []\nFLIGHT = [0, 0]\n"
        "async def paced(x):\n    STARTS.append(time.monotonic())\n    return x\n"
        "async def slow(x):\n    FLIGHT[0] += 1\n    FLIGHT[1] = max(FLIGHT)\n    await asyncio.sleep(0.02)\n"
        "    FLIGHT[0] -= 1\n    return x\n")
    paced = generate_outputs({"id": "p", "python": f"{mod}:paced", "rate_limit": 20}, CASES, base_dir=tmp_path,
                             concurrency=8)
    # Waiting for a slot is not the output's latency (the last case waited ~350 ms for its turn).
    assert max(g.latency_ms or 0 for _, g in paced) < 300
    import importlib

    m = importlib.import_module(mod)
    # 20 per second: the 8 starts span at least 7 x 50 ms (scheduling jitter aside; unpaced they take ~0 ms)
    assert len(m.STARTS) == 8 and m.STARTS[-1] - m.STARTS[0] >= 0.3
    generate_outputs({"id": "s", "python": f"{mod}:slow", "concurrency": 2}, CASES, base_dir=tmp_path,
                     concurrency=8)
    assert m.FLIGHT[1] == 2


def test_one_writer_per_outputs_file(tmp_path: Path) -> None:
    path = tmp_path / "v1.outputs.jsonl"
    first = OutputStore(path, "cfg")
    try:
        with pytest.raises(UserError, match="in use by another referee run"):
            OutputStore(path, "cfg")
    finally:
        first.close()
    OutputStore(path, "cfg").close()  # free again once the first run closed it


def test_a_torn_last_line_and_foreign_lines_are_handled(tmp_path: Path) -> None:
    path = tmp_path / "t.outputs.jsonl"
    good = {"id": "a", "output": "x", "_generation": {"config": "cfg", "case_sha256": "h"}}
    other = {"id": "b", "output": "y", "_generation": {"config": "other", "case_sha256": "h"}}
    path.write_text(json.dumps(good) + "\n" + json.dumps(other) + "\n" + '{"id": "c", "outp', encoding="utf-8")
    store = OutputStore(path, "cfg")
    store.close()
    assert set(store.reusable) == {"a"} and store.note is not None
    assert [json.loads(line)["id"] for line in path.read_text().splitlines()] == ["a"]
    prev = tmp_path / "t.outputs.prev.jsonl"
    assert prev.exists() and '"other"' in prev.read_text()  # another configuration's outputs are kept aside


def test_a_slow_target_cannot_outlive_its_timeout(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text("import time\ntime.sleep(30)\n", encoding="utf-8")
    t0 = time.monotonic()
    [(_, gen)] = generate_outputs({"id": "cli", "exec": "python agent.py", "timeout": 0.5}, CASES[:1],
                                  base_dir=tmp_path)
    assert gen.error == "the command timed out after 0.5s" and time.monotonic() - t0 < 20


def test_case_text_in_an_http_url_cannot_change_the_path_or_query(service: Any) -> None:
    srv = service(lambda body: (200, {"text": "ok"}))
    spec = {"id": "app", "http": {"url": srv.url + "/items/{input}", "method": "GET", "output": "text"}}
    [(case, gen)] = generate_outputs(spec, [{"id": "h", "input": "../admin?delete=1#x"}])
    assert gen.error is None and case.output == "ok"
    path = srv.requests[0]["path"]  # (the client may write %3D as "=", which is the same in a path)
    assert path.startswith("/items/..%2Fadmin%3Fdelete") and path.endswith("%23x") and "?" not in path


def test_a_blocking_python_target_gets_the_concurrency_asked_for(tmp_path: Path, user_module: Any) -> None:
    mod = user_module(
        "import threading, time\nLOCK = threading.Lock()\nFLIGHT = [0, 0]\n"
        "def agent(x):\n    with LOCK:\n        FLIGHT[0] += 1\n        FLIGHT[1] = max(FLIGHT)\n"
        "    time.sleep(1.0)\n    with LOCK:\n        FLIGHT[0] -= 1\n    return x\n")
    cases = [{"id": f"b{i}", "input": f"q{i}"} for i in range(40)]
    generate_outputs({"id": "blocking", "python": f"{mod}:agent", "concurrency": 40}, cases, base_dir=tmp_path,
                     concurrency=40)
    import importlib

    # asyncio's default thread pool (cores + 4) would cap this at 6 on a 2-core machine
    assert importlib.import_module(mod).FLIGHT[1] >= 38


def _http_suite(tmp_path: Path, url: str, n: int = 1) -> Path:
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES[:n]), encoding="utf-8")
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"""\
cases: cases.jsonl
targets:
  - id: app
    http: {{url: "{url}/chat", headers: {{X-Api-Key: "${{APP_TOKEN}}"}}, body: {{m: "{{input}}"}}, max_retries: 0}}
evaluators: [is_json]
""", encoding="utf-8")
    return suite


@pytest.mark.parametrize("status", [307, 302])
def test_a_targets_secret_header_never_follows_a_redirect_to_another_origin(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: int) -> None:
    from tests.support.http import raw_server, record_only, redirect_to

    monkeypatch.setenv("APP_TOKEN", "tok3n-Very-Secret-42")
    with raw_server(record_only) as login, raw_server(redirect_to(lambda: login.url, status)) as gateway:
        code = cli(["run", str(_http_suite(tmp_path, gateway.url)), "--out", str(tmp_path / "out")])
    assert gateway.requests[0]["headers"]["x-api-key"] == "tok3n-Very-Secret-42"
    assert login.requests == []
    assert code == 1
    (row,) = [json.loads(line) for line in (tmp_path / "out" / "app.jsonl").read_text().splitlines()]
    assert row["status"] == "error"
    assert f"HTTP {status} redirect to another origin (http://127.0.0.1:{login.port}), not followed" in row["error"]


def test_a_redirect_within_the_targets_origin_is_followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from aiohttp import web

    from tests.support.http import RawServer, raw_server

    async def handle(srv: RawServer, request: web.Request) -> web.StreamResponse:
        if request.path == "/chat":
            return web.Response(status=307, headers={"Location": "/v2/chat"})
        return web.json_response({"answer": "ok"})

    monkeypatch.setenv("APP_TOKEN", "tok3n-Very-Secret-42")
    with raw_server(handle) as srv:
        assert cli(["run", str(_http_suite(tmp_path, srv.url)), "--out", str(tmp_path / "out")]) == 0
    assert [(r["method"], r["path"], r["headers"]["x-api-key"]) for r in srv.requests] == [
        ("POST", "/chat", "tok3n-Very-Secret-42"), ("POST", "/v2/chat", "tok3n-Very-Secret-42")]


def test_a_targets_reply_over_the_bound_is_an_error_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.support.http import endless_body, raw_server

    monkeypatch.setenv("APP_TOKEN", "t")
    monkeypatch.setenv("REFEREE_MAX_REPLY_BYTES", "200000")
    with raw_server(endless_body(chunk=16 * 1024)) as srv:
        assert cli(["run", str(_http_suite(tmp_path, srv.url, n=2)), "--out", str(tmp_path / "out")]) == 1
    rows = [json.loads(line) for line in (tmp_path / "out" / "app.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all("reply larger than 200000 bytes" in r["error"] for r in rows)


def test_an_endless_target_reply_under_a_memory_cap_is_an_error_row(tmp_path: Path) -> None:
    import os
    import resource
    import subprocess
    import sys

    from tests.support.http import endless_body, raw_server

    def one_gib() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "APP_TOKEN": "t",
           "REFEREE_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("REFEREE_MAX_REPLY_BYTES", None)
    with raw_server(endless_body()) as srv:  # the default bound (32 MiB)
        done = subprocess.run([sys.executable, "-m", "referee", "run", str(_http_suite(tmp_path, srv.url, n=2)),
                               "--out", str(tmp_path / "out")], env=env, capture_output=True, text=True,
                              timeout=180, preexec_fn=one_gib, start_new_session=True)
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr, done.stderr[-2000:]
    assert done.returncode == 1, done.stderr[-2000:]
    rows = [json.loads(line) for line in (tmp_path / "out" / "app.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(f"reply larger than {32 * 1024 * 1024} bytes" in r["error"] for r in rows)


def test_a_service_echoing_the_basic_header_built_from_its_url_never_puts_it_in_results(
        tmp_path: Path, service: Any) -> None:
    """``http://user:password@host``: the client sends ``Authorization: Basic base64(user:password)``; a service
    that echoes it (or the password, whose ``@`` must not cut the mask short) has it masked."""
    import base64

    password = "p@ss-Very-Secret-77"
    basic = base64.b64encode(f"me:{password}".encode()).decode()

    def echo(_body: Any) -> tuple[int, Any]:
        return 401, {"error": f"refused {srv.requests[-1]['headers'].get('Authorization')} ({password})"}

    srv = service(echo)
    host = srv.url.split("://", 1)[1]
    (tmp_path / "cases.jsonl").write_text(json.dumps(CASES[0]) + "\n", encoding="utf-8")
    (tmp_path / "suite.yaml").write_text(f"""\
cases: cases.jsonl
targets:
  - id: app
    http: {{url: "http://me:{password.replace('@', '%40')}@{host}/chat", body: {{m: "{{input}}"}}, max_retries: 0}}
  - id: cli
    exec: ["python", "-c", "print('hi')", "http://me:{password}@example.invalid/x?api_key=K3y-Very-Secret-9"]
evaluators: [is_json]
""", encoding="utf-8")
    assert cli(["run", str(tmp_path / "suite.yaml"), "--out", str(tmp_path / "out")]) == 1
    assert srv.requests[0]["headers"]["Authorization"] == f"Basic {basic}"
    assert "HTTP 401" in (tmp_path / "out" / "app.jsonl").read_text()
    assert "example.invalid" in (tmp_path / "out" / "cli.jsonl").read_text()  # the command is recorded, masked
    for f in (tmp_path / "out").iterdir():
        text = f.read_text()
        for secret in (basic, password, "Very-Secret"):
            assert secret not in text, (f.name, secret)
