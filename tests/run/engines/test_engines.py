"""Engine selection and the provider-call limiter (no Ray needed)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from referee.cli import cli
from referee.errors import UserError
from referee.run.engines import Limiter, LocalEngine, get_engine
from referee.testing import schema_responder
from tests.support.servers import CountingServer


def test_engine_specs() -> None:
    assert isinstance(get_engine(None), LocalEngine)
    assert isinstance(get_engine("local"), LocalEngine)
    ray = get_engine("ray=10.1.2.3:6379", rpm=30)  # building the engine imports no Ray and connects nowhere
    assert (ray.name, ray.describe(), getattr(ray, "rpm", None)) == ("ray", "ray=10.1.2.3:6379", 30)
    assert get_engine("ray").describe() == "ray"
    for bad in ("spark", "ray=", "local=x", "ray=ray://head:10001"):
        with pytest.raises(UserError):
            get_engine(bad)
    with pytest.raises(UserError, match="--rpm"):
        LocalEngine(rpm=0)


async def test_limiter_bounds_concurrency_per_key() -> None:
    lim = Limiter(concurrency=2)
    running = {"a": 0, "b": 0}
    peak = {"a": 0, "b": 0}

    async def call(key: str) -> None:
        await lim.acquire(key)
        try:
            running[key] += 1
            peak[key] = max(peak[key], running[key])
            await asyncio.sleep(0.01)
            running[key] -= 1
        finally:
            lim.release(key)

    await asyncio.gather(*(call(k) for k in "ab" * 10))
    assert peak == {"a": 2, "b": 2}  # two keys (providers) never share permits
    assert lim.max_in_flight == {"a": 2, "b": 2} and lim.granted == {"a": 10, "b": 10}


async def test_limiter_spaces_starts_by_rpm() -> None:
    lim = Limiter(rpm=1200)  # one start every 50 ms
    starts: list[float] = []

    async def call() -> None:
        await lim.acquire("p")
        # The limiter's own start time: a clock read here could come late on a busy machine (and make the
        # next gap look short), the start it let through cannot.
        starts.append(lim.last_start["p"])
        lim.release("p")

    await asyncio.gather(*(call() for _ in range(5)))
    gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    assert len(gaps) == 4 and min(gaps) >= 0.049  # 50 ms less the event loop's clock resolution


SUITE = """\
name: judged
cases: cases.jsonl
evaluators:
  - contains: "answer"
  - id: j1
    llm_judge: {rubric: "- correct: the answer is right"}
  - id: j2
    llm_judge: {rubric: "- clear: the answer is clear"}
"""


def judged_suite(tmp: Path, n: int = 6) -> Path:
    (tmp / "cases.jsonl").write_text(
        "".join(json.dumps({"id": f"c{i}", "input": f"q{i}", "output": f"answer {i}"}) + "\n" for i in range(n)),
        encoding="utf-8")
    p = tmp / "suite.yaml"
    p.write_text(SUITE, encoding="utf-8")
    return p


def test_local_engine_rpm_spaces_provider_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    suite = judged_suite(tmp_path, n=3)
    # The starts the run's limiter let through, as it timed them: the server's arrival times would also hold
    # the loaded machine's scheduling jitter (two calls sent 0.1 s apart can arrive bunched).
    starts: list[float] = []
    acquire = Limiter.acquire

    async def recording(self: Limiter, key: str) -> None:
        await acquire(self, key)
        starts.append(self.last_start[key])

    monkeypatch.setattr(Limiter, "acquire", recording)
    srv = CountingServer(responder=schema_responder)
    with srv:
        code = cli(["run", str(suite), "--provider", "openai", "--model", "m", "--base-url", srv.openai_base_url,
                    "--rpm", "600", "--concurrency", "8", "--no-gates", "--out", str(tmp_path / "r.jsonl")])
    assert code == 0
    assert len(srv.arrivals) == 6 and len(starts) == 6  # 3 cases x 2 judges, each call through the limiter
    gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    # 600/min = one call every 0.1 s (less the event loop's clock resolution); unlimited, 8 cases in flight
    # would all start at once.
    assert min(gaps) >= 0.099


def test_unknown_engine_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = judged_suite(tmp_path)
    assert cli(["run", str(suite), "--no-judge", "--engine", "spark"]) == 2
    assert "--engine 'spark'" in capsys.readouterr().err
    assert not (tmp_path / "suite_results.jsonl").exists()


def test_overlapping_local_runs_share_one_rpm_limit(tmp_path: Path) -> None:
    """A suite's targets run side by side, each with its own judge client: --rpm is still one limit per provider
    for the process (one limiter behind every overlapping run), and a later run starts with a fresh one."""
    from referee.suites import load_suite

    class Stub:
        name, base_url, model = "openai", "http://127.0.0.1:9/v1", "m"

        async def complete(self, request: object) -> str:
            return "ok"

    class Client:
        def __init__(self) -> None:
            self.provider = Stub()

    suite = load_suite(str(judged_suite(tmp_path)))
    eng = LocalEngine(rpm=60_000)
    a, b = Client(), Client()

    async def call_both() -> None:
        assert await a.provider.complete(None) == "ok" and await b.provider.complete(None) == "ok"

    with eng.start(suite, client=a, concurrency=1), eng.start(suite, client=b, concurrency=1):  # type: ignore[arg-type]
        limiter = eng._limiter
        asyncio.run(call_both())
    assert limiter is not None and limiter.granted == {"openai http://127.0.0.1:9/v1": 2}
    assert "complete" not in a.provider.__dict__ and "complete" not in b.provider.__dict__  # undone
    with eng.start(suite, client=a, concurrency=1):  # type: ignore[arg-type]
        assert eng._limiter is not limiter


def test_python_reads_referee_engine_as_the_command_does(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REFEREE_ENGINE", raising=False)
    assert isinstance(get_engine(None), LocalEngine)
    monkeypatch.setenv("REFEREE_ENGINE", "not-an-engine")
    with pytest.raises(UserError, match="not-an-engine"):
        get_engine(None)  # the variable is read, and a bad one refused as `--engine` refuses it
    assert isinstance(get_engine("local"), LocalEngine)  # an explicit engine wins over the variable
    monkeypatch.setenv("REFEREE_ENGINE", "local")
    assert isinstance(get_engine(None), LocalEngine)
