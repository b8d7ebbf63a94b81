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
