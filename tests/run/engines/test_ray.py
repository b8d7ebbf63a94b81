"""``--engine ray`` on one small local Ray cluster (2 CPUs) shared by this module's tests.

Ray starts in a few seconds, so these tests are few and each checks a lot: same rows as a local run, the
shared limiter across workers, resume and the cache across engines, fatal errors, bad addresses.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from referee.cli import cli
from referee.results._io import read_results
from referee.results._manifest import RunManifest
from referee.testing import Reply, rows_without_timings, schema_responder
from tests.run.engines.test_engines import judged_suite
from tests.support.servers import CountingServer

RATE_LIMIT = ("--rpm", "120")

ray = pytest.importorskip("ray", reason="the 'ray' extra is not installed (scripts/test installs it)")


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[None]:
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"  # never report to the internet
    if not ray.is_initialized():
        from referee.run.engines._ray_local import LOOPBACK, loopback_node

        with loopback_node():  # as referee starts its own: nothing of the tests' cluster listens beyond loopback
            # "local": a cluster of the tests' own, never one another program left on this machine.
            ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
                     logging_level=logging.ERROR, _node_ip_address=LOOPBACK)
    yield
    ray.shutdown()


PIDS_PLUGIN = '''\
import os
from referee.evaluators._base import CheckResult


def where(case, output):
    """Which process evaluated the case."""
    return CheckResult(score=1.0, passed=True, details={"pid": os.getpid()})
'''

CODE_SUITE = """\
name: code
cases: cases.jsonl
evaluators:
  - python: {tests: "assert double(2) == 4\\nassert double(-1) == -2"}
  - contains: "return"
  - llm_judge: {rubric: "- idiomatic: the code is idiomatic"}
"""


def code_cases(tmp: Path, n: int = 8) -> None:
    rows = []
    for i in range(n):
        body = "return x * 2" if i % 3 else "return x + 2"  # a third fail their tests
        if i == 5:
            body = "raise ValueError('nope')"
        rows.append({"id": f"c{i}", "input": f"write double(x), take {i}", "output": f"def double(x):\n    {body}\n",
                     "category": "even" if i % 2 == 0 else "odd"})
    (tmp / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def manifest_core(path: Path) -> dict[str, object]:
    manifest = RunManifest.read(path)
    assert manifest is not None
    m: dict[str, Any] = json.loads(manifest.model_dump_json())
    for key in ("created_at", "finished_at", "command", "run_id"):
        m.pop(key, None)
    m["totals"].pop("wall_s")
    return m


def run(suite: Path, out: Path, base_url: str, *extra: str) -> int:
    return cli(["run", str(suite), "--provider", "openai", "--model", "m", "--base-url", base_url,
                "--no-gates", "--out", str(out), *extra])


def test_ray_rows_manifest_and_cache_match_a_local_run(ray_cluster: None, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    code_cases(tmp_path)
    suite = tmp_path / "suite.yaml"
    suite.write_text(CODE_SUITE, encoding="utf-8")
    cache_a, cache_b = tmp_path / "cache-a", tmp_path / "cache-b"
    srv = CountingServer(responder=schema_responder)
    with srv:
        monkeypatch.setenv("REFEREE_CACHE_DIR", str(cache_a))
        assert run(suite, tmp_path / "ray.jsonl", srv.openai_base_url, "--engine", "ray") == 0
        assert len(srv.arrivals) == 8
        monkeypatch.setenv("REFEREE_CACHE_DIR", str(cache_b))
        assert run(suite, tmp_path / "local.jsonl", srv.openai_base_url) == 0
        assert len(srv.arrivals) == 16
        # The workers filled this machine's response cache: the same suite run again calls nothing.
        monkeypatch.setenv("REFEREE_CACHE_DIR", str(cache_a))
        assert run(suite, tmp_path / "again.jsonl", srv.openai_base_url) == 0
        assert len(srv.arrivals) == 16
        assert RunManifest.read(tmp_path / "again.jsonl").totals.cached_calls == 8  # type: ignore[union-attr]

        ray_rows = rows_without_timings(tmp_path / "ray.jsonl")
        assert ray_rows == rows_without_timings(tmp_path / "local.jsonl")
        passed = [json.loads(r)["criteria"][0].get("passed") for r in ray_rows]
        assert passed.count(True) == 4 and passed.count(False) == 4  # the sandbox really ran the tests
        c5 = next(json.loads(r) for r in ray_rows if json.loads(r)["id"] == "c5")
        assert "ValueError: nope" in c5["criteria"][0]["rationale"]
        assert manifest_core(tmp_path / "ray.jsonl") == manifest_core(tmp_path / "local.jsonl")

        # Resume across engines: a local run cut short is finished by Ray, which evaluates only what is missing.
        lines = (tmp_path / "local.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
        (tmp_path / "local.jsonl").write_text("".join(lines[:3]), encoding="utf-8")
        assert run(suite, tmp_path / "local.jsonl", srv.openai_base_url, "--engine", "ray", "--no-cache") == 0
        assert len(srv.arrivals) == 16 + 5
    assert rows_without_timings(tmp_path / "local.jsonl") == ray_rows
    assert (tmp_path / "local.jsonl").read_text(encoding="utf-8").startswith("".join(lines[:3]))


def test_one_limit_across_workers_and_cpu_work_on_workers(ray_cluster: None, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    suite = judged_suite(tmp_path, n=10)
    (tmp_path / "where_plugin.py").write_text(PIDS_PLUGIN, encoding="utf-8")
    suite.write_text(suite.read_text(encoding="utf-8") + '  - "where_plugin:where"\n', encoding="utf-8")
    # 10 cases x 2 judges; 4 cases in flight on 2 workers could make 8 calls at once: the limit is 2.
    srv = CountingServer(responder=schema_responder, latency=0.15)
    with srv:
        assert run(suite, tmp_path / "r.jsonl", srv.openai_base_url, "--engine", "ray", "--concurrency", "2",
                   "--no-cache") == 0
    assert len(srv.arrivals) == 20
    assert srv.max_in_flight == 2
    rows = read_results(tmp_path / "r.jsonl").rows
    pids = {r.details["checks"]["where_plugin:where"]["pid"] for r in rows}
    assert len(pids) == 2 and os.getpid() not in pids  # both workers evaluated cases; this process none

    # The rate limit holds across workers too: 120 calls a minute is one start every 0.5 s, so the 10th call
    # cannot reach the server before 4.5 s after the run began. A busy machine only delays arrivals (gaps
    # between arrivals can bunch), so this bound holds under load; without the limiter 10 calls at
    # concurrency 8 arrive within a fraction of that.
    srv = CountingServer(responder=schema_responder)
    with srv:
        began = time.monotonic()
        assert run(suite, tmp_path / "r2.jsonl", srv.openai_base_url, "--engine", "ray", "--concurrency", "8",
                   *RATE_LIMIT, "--no-cache", "--filter", "id:c[0-4]") == 0
    assert len(srv.arrivals) == 10
    assert srv.arrivals[-1] - began >= 9 * 0.5 - 0.01


def test_a_fatal_provider_error_on_a_worker_stops_the_run(ray_cluster: None, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-abcdef123456")
    suite = judged_suite(tmp_path, n=4)
    srv = CountingServer(responder=lambda req: Reply(status=401))
    with srv:
        code = run(suite, tmp_path / "r.jsonl", srv.openai_base_url, "--engine", "ray")
    err = capsys.readouterr().err
    assert code == 2
    assert "401" in err and "sk-secret-abcdef123456" not in err
    manifest = RunManifest.read(tmp_path / "r.jsonl")
    assert manifest is not None and manifest.status == "failed"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.timing
@pytest.mark.parametrize("address", ["127.0.0.1:{port}", "127.0.0.1:notaport"])
def test_unreachable_cluster_exits_2_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              address: str) -> None:
    suite = judged_suite(tmp_path)
    address = address.format(port=free_port())  # nothing listens there
    t0 = time.monotonic()
    assert cli(["run", str(suite), "--no-judge", "--engine", f"ray={address}"]) == 2
    # Functional, not a speed test: Ray's own connection retries would take minutes.
    assert time.monotonic() - t0 < 30
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and address in err
    assert not (tmp_path / "suite_results.jsonl").exists()


def test_missing_extra_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed
    suite = judged_suite(tmp_path)
    assert cli(["run", str(suite), "--no-judge", "--engine", "ray"]) == 2
    assert "pip install 'referee[ray]'" in capsys.readouterr().err


def test_python_api_engine_ray(ray_cluster: None, tmp_path: Path) -> None:
    import referee

    cases = [{"id": f"k{i}", "output": f"def sq(x):\n    return x * {'x' if i % 2 else '2'}\n"} for i in range(6)]
    evaluators = [{"python": {"tests": "assert sq(3) == 9"}}, lambda case, output: "return x" in output]
    local = referee.evaluate(cases, evaluators, out=tmp_path / "local.jsonl", progress=False)
    remote = referee.evaluate(cases, evaluators, out=tmp_path / "ray.jsonl", progress=False, engine="ray")
    assert [r.passed for r in remote.rows] == [False, True] * 3  # the sandbox ran each case's tests
    assert rows_without_timings(tmp_path / "ray.jsonl") == rows_without_timings(tmp_path / "local.jsonl")
    assert remote.manifest.totals.scored == local.manifest.totals.scored == 6


TARGET_SUITE = """\
cases: cases.jsonl
targets:
  - id: v1
    python: ray_agent:answer
evaluators:
  - python: {tests: "assert sq(3) == 9"}
  - contains: "return"
"""


def test_targets_generate_here_and_evaluate_on_ray(ray_cluster: None, tmp_path: Path) -> None:
    (tmp_path / "ray_agent.py").write_text(
        "def answer(text):\n    n = int(text.split()[-1])\n"
        "    return 'def sq(x):\\n    return x * ' + ('x' if n % 2 else '2')\n", encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text(
        "".join(json.dumps({"id": f"t{i}", "input": f"square {i}"}) + "\n" for i in range(6)), encoding="utf-8")
    suite = tmp_path / "suite.yaml"
    suite.write_text(TARGET_SUITE, encoding="utf-8")
    assert cli(["run", str(suite), "--no-gates", "--out", str(tmp_path / "local")]) == 0
    assert cli(["run", str(suite), "--no-gates", "--out", str(tmp_path / "ray"), "--engine", "ray"]) == 0
    rows = read_results(tmp_path / "ray" / "v1.jsonl").rows
    assert sorted((r.id, r.passed) for r in rows) == [(f"t{i}", i % 2 == 1) for i in range(6)]
    assert rows_without_timings(tmp_path / "ray" / "v1.jsonl") == rows_without_timings(tmp_path / "local" / "v1.jsonl")


def test_targets_run_side_by_side_in_one_ray_session(ray_cluster: None, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Two HTTP targets generate here at the same moment (the service holds every request until both are at
    their limits at once) and are judged on the workers through one permit actor: --concurrency bounds the
    judge calls of both targets together, and each target's manifest counts its own judge calls."""
    from tests.run.test_targets_parallel import LIMITS, N_CASES, Recorder

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    (tmp_path / "cases.jsonl").write_text(
        "".join(json.dumps({"id": f"c{i:02d}", "input": f"question {i}"}) + "\n" for i in range(N_CASES)),
        encoding="utf-8")
    rec = Recorder(hold_s=10)  # a run that takes the targets one after another waits this out, and fails
    rec.start()
    try:
        judge = CountingServer(responder=schema_responder, latency=0.1)
        with judge:
            targets = "".join(
                f"  - id: {k}\n    concurrency: {n}\n"
                f"    http: {{url: '{rec.url}/{k}', body: {{q: '{{input}}'}}, output: text}}\n"
                for k, n in LIMITS.items())
            suite = tmp_path / "suite.yaml"
            suite.write_text(f"cases: cases.jsonl\ntargets:\n{targets}evaluators:\n  - contains: {{value: question}}\n"
                             '  - llm_judge: {rubric: "- quality: answers the question"}\n', encoding="utf-8")
            assert run(suite, tmp_path / "out", judge.openai_base_url, "--engine", "ray", "--concurrency", "2",
                       "--no-cache") == 0
    finally:
        rec.stop()
    assert rec.overlap_seen and rec.both_at_limit and rec.max_in_flight == LIMITS
    assert len(judge.arrivals) == 2 * N_CASES and judge.max_in_flight == 2
    for k in LIMITS:
        rows = read_results(tmp_path / "out" / f"{k}.jsonl").rows
        assert len(rows) == N_CASES and all(r.status == "scored" and r.target and r.target.id == k for r in rows)
        m = RunManifest.read(tmp_path / "out" / f"{k}.jsonl")
        assert m is not None and m.totals is not None and m.totals.provider_calls == N_CASES


def test_a_targets_own_concurrency_never_widens_the_judge_budget_on_ray(ray_cluster: None, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A target allowed 8 generations at once still has at most --concurrency judge calls in flight on the
    cluster (the permit actor is given --concurrency, not the cases the run keeps in flight)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    (tmp_path / "fast_agent.py").write_text("def answer(text):\n    return 'answer to ' + text\n", encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text(
        "".join(json.dumps({"id": f"c{i}", "input": f"q{i}"}) + "\n" for i in range(10)), encoding="utf-8")
    suite = tmp_path / "suite.yaml"
    suite.write_text("cases: cases.jsonl\ntargets:\n  - {id: v1, python: 'fast_agent:answer', concurrency: 8}\n"
                     'evaluators:\n  - llm_judge: {rubric: "- quality: answers the question"}\n', encoding="utf-8")
    judge = CountingServer(responder=schema_responder, latency=0.15)
    with judge:
        assert run(suite, tmp_path / "out", judge.openai_base_url, "--engine", "ray", "--concurrency", "2",
                   "--no-cache") == 0
    assert len(judge.arrivals) == 10 and judge.max_in_flight == 2


def test_batch_mode_stays_local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    suite = judged_suite(tmp_path)
    assert cli(["run", str(suite), "--provider", "openai", "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
                "--batch", "--engine", "ray"]) == 2
    assert "--batch runs on the local engine" in capsys.readouterr().err
    assert not (tmp_path / "suite_results.jsonl").exists()


EXIT_PLUGIN = '''\
import os


def boom(case, output):
    if case.id == "c1":
        os._exit(3)  # hostile: takes its Ray worker down with it
    return True
'''


def test_a_case_that_kills_its_worker_is_an_error_row_and_the_run_goes_on(ray_cluster: None,
                                                                          tmp_path: Path) -> None:
    suite = judged_suite(tmp_path, n=6)
    (tmp_path / "exit_plugin.py").write_text(EXIT_PLUGIN, encoding="utf-8")
    suite.write_text("name: boom\ncases: cases.jsonl\nevaluators:\n  - contains: answer\n"
                     '  - "exit_plugin:boom"\n', encoding="utf-8")
    assert cli(["run", str(suite), "--no-gates", "--out", str(tmp_path / "r.jsonl"), "--engine", "ray"]) == 0
    rows = {r.id: r for r in read_results(tmp_path / "r.jsonl").rows}
    assert len(rows) == 6
    assert rows["c1"].status == "error" and "died, also with the case alone on it" in (rows["c1"].error or "")
    # Cases that only shared a worker with c1 when it died were tried again, alone, and got their rows.
    assert all(r.status == "scored" and r.passed for i, r in rows.items() if i != "c1")


def test_workers_of_another_referee_are_refused(ray_cluster: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from referee.run.engines import _ray

    monkeypatch.setattr(_ray, "WIRE", _ray.WIRE + 1)  # as if this driver were a newer referee than its workers
    suite = judged_suite(tmp_path)
    assert cli(["run", str(suite), "--no-judge", "--engine", "ray"]) == 2
    err = capsys.readouterr().err
    assert "install the same referee on every node" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "suite_results.jsonl").exists()


SLOW_PLUGIN = '''\
import time


def slow(case, output):
    time.sleep(1.0)
    return True
'''


def _descendants(root: int) -> dict[int, str]:
    """pid -> start time of every process under ``root`` (root included), from /proc."""
    parent: dict[int, list[tuple[int, str]]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                fields = Path(f"/proc/{d}/stat").read_bytes().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            parent.setdefault(int(fields[1]), []).append((int(d), fields[19].decode()))
    out, todo = {}, [root]
    while todo:
        for pid, start in parent.get(todo.pop(), []):
            out[pid] = start
            todo.append(pid)
    return out


def _alive(pid: int, start: str) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[19].decode() == start
    except OSError:
        return False


def _listening(pids: set[int]) -> list[tuple[int, str]]:
    """(pid, local address) of every listening TCP socket the processes hold (/proc/net/tcp and tcp6)."""
    inodes: dict[str, str] = {}
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if f[3] == "0A":  # LISTEN
                inodes[f[9]] = f[1]
    out = []
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:[") and target[8:-1] in inodes:
                out.append((pid, inodes[target[8:-1]]))
    return out


def _is_loopback(hex_addr: str) -> bool:
    ip = hex_addr.split(":")[0]
    if len(ip) == 8:  # IPv4, little-endian: 127.x.x.x ends in 7F
        return ip.endswith("7F")
    # IPv6: ::1, or ::ffff:127.x.x.x (an IPv4 loopback bound through a v6 socket)
    return ip == "00000000000000000000000001000000" or (ip[:24] == "0000000000000000FFFF0000" and ip.endswith("7F"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM"])
def test_the_local_cluster_listens_on_loopback_only_and_dies_with_referee(tmp_path: Path, how: str) -> None:
    import signal
    import subprocess

    (tmp_path / "cases.jsonl").write_text(
        "".join(json.dumps({"id": f"c{i}", "input": "q", "output": "a"}) + "\n" for i in range(40)), encoding="utf-8")
    (tmp_path / "slow_plugin.py").write_text(SLOW_PLUGIN, encoding="utf-8")
    suite = tmp_path / "suite.yaml"
    suite.write_text('name: slow\ncases: cases.jsonl\nevaluators:\n  - "slow_plugin:slow"\n', encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_ADDRESS")}
    env.update(PYTHONPATH=os.pathsep.join(sys.path), RAY_USAGE_STATS_ENABLED="0")
    proc = subprocess.Popen([sys.executable, "-m", "referee", "run", str(suite), "--no-gates", "--out",
                             str(tmp_path / "r.jsonl"), "--engine", "ray"], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    seen: dict[int, str] = {}
    try:
        # Until the cluster's workers evaluate cases: rows arrive.
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline and proc.poll() is None:
            out = tmp_path / "r.jsonl"
            if out.exists() and out.read_text().count("\n") >= 2:
                break
            time.sleep(0.5)
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        seen = _descendants(proc.pid)
        names = {Path(f"/proc/{p}/comm").read_text().strip() for p in seen if _alive(p, seen[p])}
        assert {"gcs_server", "raylet"} <= names, names
        sockets = _listening(set(seen) | {proc.pid})
        assert len(sockets) >= 4, sockets  # the GCS, the raylet, the driver, the workers ...
        assert [s for s in sockets if not _is_loopback(s[1])] == [], names
        # referee alone: as the OOM killer would (SIGKILL), or CI cancelling a job (SIGTERM)
        os.kill(proc.pid, getattr(signal, how))
        proc.wait(timeout=60)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(_alive(p, s) for p, s in seen.items()):
            time.sleep(0.5)
        left = {p: Path(f"/proc/{p}/cmdline").read_bytes()[:80] for p, s in seen.items() if _alive(p, s)}
        assert left == {}, left
    finally:
        for p, s in seen.items():  # never leave a cluster behind, whatever failed above
            if _alive(p, s):
                with contextlib.suppress(OSError):
                    os.kill(p, signal.SIGKILL)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        if proc.stderr is not None:
            proc.stderr.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_an_address_of_a_token_authenticated_cluster_is_joined_with_the_token(tmp_path: Path) -> None:
    import signal
    import subprocess

    token = "0123456789abcdef0123456789abcdef"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    import shutil
    import tempfile

    ray_bin = str(Path(sys.executable).with_name("ray"))
    temp = tempfile.mkdtemp(prefix="rt", dir="/tmp")  # short: Ray's Unix socket paths must fit in 107 bytes
    base = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "RAY_AUTH"))}
    base.update(HOME=str(tmp_path), RAY_USAGE_STATS_ENABLED="0", PYTHONPATH=os.pathsep.join(sys.path))
    head = subprocess.Popen([ray_bin, "start", "--head", "--block", f"--port={port}", "--node-ip-address=127.0.0.1",
                             "--num-cpus=1", "--include-dashboard=false", f"--temp-dir={temp}"],
                            env={**base, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    seen: dict[int, str] = {}
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            time.sleep(0.5)
        suite = judged_suite(tmp_path, n=2)
        suite.write_text("name: t\ncases: cases.jsonl\nevaluators:\n  - contains: answer\n", encoding="utf-8")
        # The user names the cluster and gives its token as Ray documents (RAY_AUTH_TOKEN); RAY_AUTH_MODE unset.
        done = subprocess.run([sys.executable, "-m", "referee", "run", str(suite), "--no-gates", "--out",
                               str(tmp_path / "r.jsonl"), "--engine", f"ray=127.0.0.1:{port}"],
                              env={**base, "RAY_AUTH_TOKEN": token}, capture_output=True, text=True, timeout=240,
                              start_new_session=True)
        seen = _descendants(head.pid)
        assert done.returncode == 0, done.stderr[-2000:]
        rows = read_results(tmp_path / "r.jsonl").rows
        assert len(rows) == 2 and all(r.status == "scored" for r in rows)
    finally:
        seen.update(_descendants(head.pid))
        head.send_signal(signal.SIGTERM)  # --block: stops the cluster it started
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
            head.wait(timeout=30)
        for p, started in seen.items():
            if _alive(p, started):
                with contextlib.suppress(OSError):
                    os.kill(p, signal.SIGKILL)
        shutil.rmtree(temp, ignore_errors=True)
