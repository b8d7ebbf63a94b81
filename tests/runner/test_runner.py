"""The runner: retries with backoff honouring Retry-After, the response cache, bounded concurrency, resume."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from referee.errors import ProviderError, UserError
from referee.providers import FakeProvider, JudgeRequest, Message
from referee.providers._openai_compat import OpenAICompatProvider
from referee.results import ResultRow, ResultWriter, RunManifest, read_results
from referee.results._manifest import JudgeConfig, TemplateInfo
from referee.runner import FatalRunError, JudgeClient, ResponseCache, RetryPolicy, cache_key, run_rows
from referee.runner._session import execute
from referee.testing import FakeLLMServer, Reply
from tests.support.judging import KEY, verdict

REQ = JudgeRequest(messages=(Message("user", "grade"),))


def test_retry_policy_honours_retry_after_and_caps_backoff() -> None:
    pol = RetryPolicy(max_retries=3, base_delay=0.5, max_delay=4.0, max_retry_after=60.0)
    for attempt in range(6):
        d = pol.delay(attempt, None)
        assert 0.25 * 2**min(attempt, 3) <= d <= 4.0
    assert pol.delay(0, 10.0) == 10.0  # Retry-After wins over a shorter backoff
    assert pol.delay(0, 1000.0) == 60.0  # but an absurd one is capped


class _RecordingPolicy(RetryPolicy):
    def __init__(self) -> None:
        super().__init__(max_retries=3, base_delay=0.001)
        self.seen: list[tuple[float | None, float]] = []

    def delay(self, attempt: int, retry_after: float | None) -> float:
        d = super().delay(attempt, retry_after)
        self.seen.append((retry_after, d))
        return d


async def test_client_retries_429_with_retry_after_over_the_wire(fake_server: FakeLLMServer) -> None:
    fake_server.script(Reply(status=429, retry_after="0.05"), Reply(status=503), Reply(text=verdict(0.7)))
    pol = _RecordingPolicy()
    client = JudgeClient(OpenAICompatProvider("m", base_url=fake_server.openai_base_url, api_key=KEY), retry=pol)
    try:
        c = await client.complete(REQ)
    finally:
        await client.aclose()
    assert '"overall_score": 0.7' in c.text
    assert len(fake_server.requests) == 3 and client.stats.retries == 2 and client.stats.calls == 3  # every request sent
    assert pol.seen[0][0] == 0.05 and pol.seen[0][1] >= 0.05  # the server's Retry-After was honoured
    assert pol.seen[1][0] is None


async def test_client_gives_up_after_max_retries_and_never_retries_4xx() -> None:
    fake = FakeProvider([ProviderError("503", status=503, retryable=True)])
    client = JudgeClient(fake, retry=RetryPolicy(max_retries=2, base_delay=0.001))
    with pytest.raises(ProviderError):
        await client.complete(REQ)
    assert len(fake.requests) == 3
    fake4 = FakeProvider([ProviderError("400", status=400)])
    with pytest.raises(ProviderError):
        await JudgeClient(fake4, retry=RetryPolicy(max_retries=5, base_delay=0.001)).complete(REQ)
    assert len(fake4.requests) == 1


async def test_cache_serves_identical_requests_and_never_stores_the_key(tmp_path: Path,
                                                                         fake_server: FakeLLMServer) -> None:
    path = tmp_path / "c.sqlite"
    for run in range(2):
        client = JudgeClient(OpenAICompatProvider("m", base_url=fake_server.openai_base_url, api_key=KEY),
                             cache=ResponseCache(path))
        try:
            first = await client.complete(REQ)
            again = await client.complete(REQ)
            other = await client.complete(JudgeRequest(messages=(Message("user", "different"),)))
            bypass = await client.complete(REQ, use_cache=False)
        finally:
            await client.aclose()
        assert again.cached and again.text == first.text and not bypass.cached
        assert first.cached is (run == 1) and other.cached is (run == 1)
    # Run 1: REQ, "different", bypass; run 2: only the bypass goes to the server.
    assert len(fake_server.requests) == 4
    assert KEY.encode() not in path.read_bytes()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 2


def test_cache_key_depends_on_model_and_request() -> None:
    ident = {"provider": "openai", "model": "a", "base_url": None}
    k = cache_key(ident, REQ)
    assert k == cache_key(dict(ident), REQ)
    assert k != cache_key({**ident, "model": "b"}, REQ)
    assert k != cache_key(ident, JudgeRequest(messages=REQ.messages, seed=1))


@pytest.mark.timing
async def test_run_rows_bounds_concurrency_and_writes_as_rows_complete(tmp_path: Path) -> None:
    in_flight = 0
    peak = 0
    done = 0
    others_done = asyncio.Event()

    async def evaluate(i: int) -> ResultRow:
        nonlocal in_flight, peak, done
        in_flight += 1
        peak = max(peak, in_flight)
        if i == 0:  # the slow first case: finishes once every other case has (a condition, not a delay)
            await asyncio.wait_for(others_done.wait(), 60)
        else:
            await asyncio.sleep(0.001)
            done += 1
            if done == 11:
                others_done.set()
        in_flight -= 1
        return ResultRow(id=str(i), score=1.0)

    with ResultWriter(tmp_path / "r.jsonl") as w:
        stats = await run_rows(list(range(12)), evaluate, writer=w, concurrency=3, show_progress=False)
    assert peak == 3 and len(stats.rows) == 12
    ids = [r.id for r in read_results(tmp_path / "r.jsonl").rows]
    assert sorted(ids, key=int) == [str(i) for i in range(12)]
    assert ids[-1] == "0"  # the slow first case was written when it finished, after the others


async def test_an_iterator_s_items_are_made_while_the_first_calls_are_in_flight_and_never_far_ahead(
        tmp_path: Path) -> None:
    made: list[int] = []
    ahead_at_start: list[int] = []  # items made but not yet started, as each call starts
    made_while_first_in_flight: list[int] = []

    def items() -> Iterator[int]:
        for i in range(40):
            made.append(i)
            yield i

    async def evaluate(i: int) -> ResultRow:
        ahead_at_start.append(len(made) - len(ahead_at_start) - 1)
        if i < 4:
            # The first four calls (every worker's) stay in flight until the run has made items ahead of them (a
            # condition, not a delay; at most 1000 turns): the next items are made while calls wait on answers.
            for _ in range(1000):
                if len(made) >= 8:
                    break
                await asyncio.sleep(0)
            made_while_first_in_flight.append(len(made))
        return ResultRow(id=str(i), score=1.0)

    with ResultWriter(tmp_path / "r.jsonl") as w:
        stats = await run_rows(items(), evaluate, writer=w, concurrency=4, show_progress=False)
    assert sorted(int(r.id) for r in stats.rows) == list(range(40))
    assert sorted(int(r.id) for r in read_results(tmp_path / "r.jsonl").rows) == list(range(40))
    assert ahead_at_start[0] < 39  # the first call went out before the 40 items were made
    assert made_while_first_in_flight[0] >= 8  # four in the workers' hands, four made ahead meanwhile
    assert max(ahead_at_start) <= 4  # never more made ahead than the concurrency


async def test_an_iterator_that_fails_stops_the_run_after_the_items_made_before_it(tmp_path: Path) -> None:
    def items() -> Iterator[int]:
        yield from range(6)
        raise ValueError("the source broke")

    with ResultWriter(tmp_path / "r.jsonl") as w, pytest.raises(ValueError, match="the source broke"):
        await run_rows(items(), lambda i: _row(i), writer=w, concurrency=2, show_progress=False)
    # Every item made before the failure was evaluated and written; the run stopped with the source's error.
    assert sorted(int(r.id) for r in read_results(tmp_path / "r.jsonl").rows) == list(range(6))

    empty: Iterator[int] = iter(())
    stats = await run_rows(empty, _row, writer=None, concurrency=3, show_progress=False)
    assert stats.rows == []


async def _row(i: int) -> ResultRow:
    await asyncio.sleep(0)
    return ResultRow(id=str(i), score=1.0)


async def test_one_bad_case_never_stops_a_run_but_a_fatal_error_does(tmp_path: Path) -> None:
    async def evaluate(i: int) -> ResultRow:
        if i == 1:
            raise RuntimeError("boom")
        return ResultRow(id=str(i), score=1.0)

    stats = await run_rows([0, 1, 2], evaluate, writer=None, concurrency=1, show_progress=False,
                           on_error=lambda i, e: ResultRow(id=str(i), status="error", error=str(e)))
    assert [r.status for r in stats.rows] == ["scored", "error", "scored"]

    async def fatal(i: int) -> ResultRow:
        if i == 1:
            raise UserError("bad key")
        return ResultRow(id=str(i), score=1.0)

    with ResultWriter(tmp_path / "f.jsonl") as w, pytest.raises(FatalRunError, match="bad key"):
        await run_rows([0, 1, 2, 3], fatal, writer=w, concurrency=1, show_progress=False,
                       on_error=lambda i, e: ResultRow(id=str(i), status="error", error=str(e)))
    assert [r.id for r in read_results(tmp_path / "f.jsonl").rows] == ["0"]


async def test_rows_of_one_turn_are_written_together_and_all_reach_the_file_when_the_run_stops(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writes: list[int] = []
    orig = ResultWriter._append

    def append(self: ResultWriter, text: str, rows: int) -> None:
        writes.append(rows)
        orig(self, text, rows)

    monkeypatch.setattr(ResultWriter, "_append", append)
    task: asyncio.Task[object] | None = None

    async def evaluate(i: int) -> ResultRow:
        if i == 8:  # answered a turn later, and the run is stopped (Ctrl-C) in that very turn
            await asyncio.sleep(0.05)
            assert task is not None
            asyncio.get_running_loop().call_soon(task.cancel)
        elif i == 9:
            await asyncio.sleep(30)
        return ResultRow(id=str(i), score=1.0)

    with ResultWriter(tmp_path / "r.jsonl") as w:
        task = asyncio.create_task(run_rows(list(range(10)), evaluate, writer=w, concurrency=10,
                                            show_progress=False))
        with pytest.raises(asyncio.CancelledError):
            await task
    assert writes == [8, 1]  # the eight answers of the first turn in one write; case 8, answered as the run stops
    assert sorted(int(r.id) for r in read_results(tmp_path / "r.jsonl").rows) == list(range(9))


async def test_a_write_that_fails_stops_the_run_with_a_user_error(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    def broken(self: ResultWriter, text: str, rows: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(ResultWriter, "_append", broken)
    calls: list[int] = []

    async def evaluate(i: int) -> ResultRow:
        calls.append(i)
        await asyncio.sleep(0.01)
        return ResultRow(id=str(i), score=1.0)

    with ResultWriter(tmp_path / "r.jsonl") as w, pytest.raises(FatalRunError, match="cannot write .*Input/output"):
        await run_rows(list(range(50)), evaluate, writer=w, concurrency=2, show_progress=False)
    assert len(calls) <= 6  # the workers stop at their next case, not after all 50


def _manifest() -> RunManifest:
    return RunManifest(kind="judge", judge=JudgeConfig(provider="fake", model="m"),
                       template=TemplateInfo(sha256="abc"))


def _exec(out: Path, ids: list[str], seen: list[str], manifest: RunManifest | None = None) -> None:
    async def evaluate(cid: str) -> ResultRow:
        seen.append(cid)
        return ResultRow(id=cid, score=0.5)

    execute(out=out, manifest=manifest or _manifest(), items=ids, key=lambda c: (c, None, None),
            evaluate=evaluate, on_error=lambda c, e: ResultRow(id=c, status="error", error=str(e)),
            client=None, concurrency=2, label="t")


def test_resume_after_crash_judges_only_the_rest(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    # What a crash leaves: some rows (one of them an error), a partial last line, manifest still "running".
    m = _manifest()
    m.write(out)
    out.write_text(ResultRow(id="a", score=1.0).model_dump_json() + "\n"
                   + ResultRow(id="b", status="unscored", raw_reply="?").model_dump_json() + "\n"
                   + ResultRow(id="c", status="error", error="503").model_dump_json() + "\n"
                   + '{"schema_version": 1, "id": "d", "sco', encoding="utf-8")
    seen: list[str] = []
    _exec(out, ["a", "b", "c", "d", "e"], seen)
    assert sorted(seen) == ["c", "d", "e"]  # error rows are retried; scored and unscored are kept
    rows = read_results(out, strict=True).rows
    assert sorted(r.id for r in rows) == ["a", "b", "c", "d", "e"]
    done = RunManifest.read(out)
    assert done is not None and done.status == "complete" and done.totals.rows == 5
    seen.clear()
    _exec(out, ["a", "b", "c", "d", "e"], seen)
    assert seen == []  # unchanged rerun: nothing judged again


def test_different_configuration_moves_old_results_aside(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    seen: list[str] = []
    _exec(out, ["a"], seen)
    other = _manifest()
    other.template = TemplateInfo(sha256="different")
    _exec(out, ["a"], seen, other)
    assert seen == ["a", "a"]
    assert (tmp_path / "r.prev.jsonl").exists() and (tmp_path / "r.prev.manifest.json").exists()


def test_a_second_configuration_change_never_overwrites_the_first_set_aside_file(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    seen: list[str] = []
    _exec(out, ["first"], seen)
    for ident, sha in (("second", "t2"), ("third", "t3")):
        m = _manifest()
        m.template = TemplateInfo(sha256=sha)
        _exec(out, [ident], seen, m)
    ids = {p.name: [json.loads(line)["id"] for line in p.read_text().splitlines()]
           for p in tmp_path.glob("r*.jsonl")}
    assert ids == {"r.prev.jsonl": ["first"], "r.prev2.jsonl": ["second"], "r.jsonl": ["third"]}
    assert (tmp_path / "r.prev2.manifest.json").exists()


def test_a_corrupt_cache_file_is_a_user_error(tmp_path: Path) -> None:
    bad = tmp_path / "cache.sqlite"
    bad.write_bytes(b"this is not a database, just bytes " * 100)
    with pytest.raises(UserError, match="--no-cache"):
        ResponseCache(bad)


async def test_a_failing_cache_write_never_loses_the_reply(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           caplog: pytest.LogCaptureFixture) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache._db.close()  # any later statement fails like a full disk or a vanished file would
    client = JudgeClient(FakeProvider([verdict(0.3)]), cache=cache)
    with caplog.at_level(logging.WARNING, logger="referee"):
        c1 = await client.complete(REQ)
        c2 = await client.complete(REQ)
    assert '"overall_score": 0.3' in c1.text and not c2.cached
    warnings = [r.getMessage() for r in caplog.records if "response cache" in r.getMessage()]
    assert len(warnings) == 1 and "disabled for this run" in warnings[0]  # one warning, then the cache is off
    assert capsys.readouterr().err == ""  # logged, not printed: the CLI shows it (referee/cli/_log.py)


async def test_a_server_never_reached_fails_fast_but_a_known_one_gets_every_retry() -> None:
    from referee.errors import ProviderUnavailable

    down = FakeProvider([ProviderUnavailable("cannot connect (check --base-url)", retryable=True)])
    with pytest.raises(ProviderUnavailable):
        await JudgeClient(down, retry=RetryPolicy(max_retries=6, base_delay=0.001)).complete(REQ)
    assert len(down.requests) == 2  # one retry, then the run is told the server is down

    flaky = FakeProvider([verdict(), *[ProviderUnavailable("restarting", retryable=True)] * 4, verdict(0.2)])
    client = JudgeClient(flaky, retry=RetryPolicy(max_retries=6, base_delay=0.001))
    await client.complete(REQ)
    c = await client.complete(JudgeRequest(messages=(Message("user", "next"),)))
    assert '"overall_score": 0.2' in c.text and len(flaky.requests) == 6


def test_progress_bar_only_on_a_terminal_and_shows_rate_and_cost(monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    import sys

    from referee.runner._progress import Progress

    quiet = Progress(total=3, label="judging", delay_s=0.0)
    quiet.advance()
    quiet.close()
    assert capsys.readouterr().err == ""  # not a terminal: nothing
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    bar = Progress(total=3, label="judging", delay_s=0.0, cost=lambda: 0.0123)
    for _ in range(3):
        bar.advance()
    bar.close()
    err = capsys.readouterr().err
    assert "judging" in err and "3/3" in err and "$0.0123" in err and "/s" in err


def test_run_sync_never_formats_the_result() -> None:
    """asyncio.run formats its main task's repr when it restores the SIGINT handler (Python 3.11): a result
    holding thousands of rows cost a judging run most of its last second. The result stays out of the task."""
    from referee.runner._session import run_sync

    formatted: list[int] = []

    class Rows:
        def __repr__(self) -> str:
            formatted.append(1)
            return "Rows()"

    rows = Rows()

    async def run() -> Rows:
        return rows

    assert run_sync(run()) is rows
    assert formatted == []


async def test_a_reply_echoing_a_credential_is_masked_also_after_the_credential_changes() -> None:
    # The client collects what it masks once, and again whenever the provider's credentials change (a token
    # refreshed mid-run): a reply echoing the old token or the new one never reaches a row unmasked.
    tokens = ["tok-first-0123456789", "tok-second-0123456789"]

    class Refreshing(FakeProvider):
        def secrets(self) -> tuple[str, ...]:
            return (tokens[min(len(self.requests), 2) - 1],) if self.requests else ()

    provider = Refreshing(lambda req: f"my credential is {tokens[len(provider.requests) - 1]}")
    client = JudgeClient(provider)
    request = JudgeRequest(messages=(Message("user", "hi"),))
    first = await client.complete(request, use_cache=False)
    second = await client.complete(request, use_cache=False)
    assert first.text == "my credential is ***"
    assert second.text == "my credential is ***"
    assert tokens[1] not in second.text and tokens[0] not in first.text


def test_every_totals_line_is_built_by_totals_line() -> None:
    # One format: the default line, the gold line (PASS/FAIL counts, no time) and a target's line (no judge calls).
    from referee.reports._gold import gold_run_notes
    from referee.results._manifest import Totals
    from referee.runner._session import totals_line

    t = Totals(scored=3, unscored=1, error=2, skipped_invalid=1, cost_usd=0.01234, provider_calls=5,
               cached_calls=2, wall_s=1.26)
    assert totals_line(t, "r.jsonl") == ("3 scored, 1 unscored, 2 error, 1 skipped as invalid -> r.jsonl "
                                         "(5 judge calls, 2 from cache, cost $0.0123), 1.3s")
    assert totals_line(t, "r.jsonl", judged=False, timed=False, lead="v1: generated 6; 3 scored, ") == (
        "v1: generated 6; 3 scored, 1 unscored, 2 error, 1 skipped as invalid -> r.jsonl")
    rows = [ResultRow(id="a", status="scored", score=1.0, passed=True),
            ResultRow(id="b", status="scored", score=0.0, passed=False),
            ResultRow(id="c", status="error", error="boom")]
    lines = gold_run_notes(rows, skipped=4, out_dir=Path("out"), totals=t, judge_pass_only=False)
    assert lines[0] == "1 PASS, 1 FAIL, 1 unscored/error, 4 skipped -> out (5 judge calls, 2 from cache, cost $0.0123)"
