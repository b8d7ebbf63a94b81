"""Batch mode (``--batch``) through the real HTTP client against the local server's three batch wire formats:
submit, poll, download, map back by custom_id; job ids in the manifest; resume after a kill; expired, cancelled and
partly failed jobs; batch prices; the cache filled from batch results."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from referee.testing import BatchPlan, FakeLLMServer, Reply
from tests.support.judging import KEY, judge_args, make_cases, read_rows, run, verdict


@pytest.fixture(autouse=True)
def _fast_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFEREE_BATCH_POLL_S", "0.05")
    monkeypatch.setenv("REFEREE_BATCH_WINDOW_S", "0.05")
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(var, KEY)


def _args(tmp: Path, srv: FakeLLMServer, provider: str, *extra: str, n: int = 3,
          out: str = "results.jsonl") -> list[str]:
    cases = make_cases(n) if not (tmp / "cases.jsonl").exists() else None
    return judge_args(tmp, srv, "--batch", *extra, provider=provider, cases=cases, out=out)


def _manifest(tmp: Path, name: str = "results") -> dict[str, Any]:
    manifest: dict[str, Any] = json.loads((tmp / f"{name}.manifest.json").read_text())
    return manifest


def _status(row: dict[str, Any]) -> str:
    return str(row.get("status", "scored"))


def test_openai_batch_end_to_end_at_the_batch_price_then_a_rerun_makes_no_call(
        fake_server: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake_server.responder = lambda req: Reply(text=verdict(0.9), input_tokens=1000, output_tokens=100)
    code, _, err = run(_args(tmp_path, fake_server, "openai", "--input-price-per-mtok", "10",
                             "--output-price-per-mtok", "20"), capsys)
    assert code == 0, err
    rows = read_rows(tmp_path / "results.jsonl")
    assert sorted(r["id"] for r in rows) == ["c0", "c1", "c2"] and {_status(r) for r in rows} == {"scored"}
    assert all(r["score"] == 0.9 for r in rows)
    # Half of 1000 x $10/M + 100 x $20/M.
    assert all(r["cost_usd"] == pytest.approx(0.006) for r in rows)
    (job,) = fake_server.batch_jobs.values()
    assert len(job.requests) == 3 and all(len(cid) == 64 for cid, _ in job.requests)
    # Each case's prompt went out under its own custom_id and came back to that case.
    by_case = {w.last_user_text: cid for cid, w in job.requests}
    assert len(by_case) == 3 and all(f"answer {i}" in "".join(by_case) for i in range(3))
    paths = [p for _, p in fake_server.batch_calls]
    assert paths[:2] == ["/v1/files", "/v1/batches"] and f"/v1/batches/{job.id}" in paths
    assert any(p.endswith("/content") for p in paths)
    m = _manifest(tmp_path)
    assert m["judge"]["batch"] is True and m["totals"]["provider_calls"] == 3
    (rec,) = m["extra"]["batch_jobs"]
    assert rec["id"] == job.id and rec["state"] == "completed" and rec["ended"] is True and rec["answered"] == 3
    assert "keys" not in rec  # ended jobs keep no per-request list
    assert f"batch job {job.id} submitted (openai, 3 requests)" in err and f"batch job {job.id}: completed" in err
    assert KEY not in (tmp_path / "results.manifest.json").read_text()

    # Unchanged rerun into a new file: every reply comes from the cache filled by the batch results.
    calls_before = len(fake_server.batch_calls)
    code, _, err = run(_args(tmp_path, fake_server, "openai", "--input-price-per-mtok", "10",
                             "--output-price-per-mtok", "20", out="again.jsonl"), capsys)
    assert code == 0, err
    assert len(fake_server.batch_calls) == calls_before and len(fake_server.batch_jobs) == 1
    again = read_rows(tmp_path / "again.jsonl")
    assert {_status(r) for r in again} == {"scored"}
    assert all(r["cost_usd"] == pytest.approx(0.006) for r in again)  # still priced as a batch reply
    assert _manifest(tmp_path, "again")["totals"]["cached_calls"] == 3


def test_anthropic_expired_job_errors_the_missing_cases_and_a_rerun_resubmits_only_them(
        fake_server: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake_server.batch_plan(BatchPlan(outcome="expired", succeed=2, polls=2))
    code, _, err = run(_args(tmp_path, fake_server, "anthropic", n=4), capsys)
    assert code == 0, err
    rows = read_rows(tmp_path / "results.jsonl")
    assert sorted(_status(r) for r in rows) == ["error", "error", "scored", "scored"]
    errors = [r for r in rows if _status(r) == "error"]
    assert all("expired" in r["error"] and "rerun resubmits" in r["error"] and "score" not in r for r in errors)
    first = next(iter(fake_server.batch_jobs.values()))
    assert [p for _, p in fake_server.batch_calls].count(f"/v1/messages/batches/{first.id}/results") == 1
    assert "in_progress" in err and "ended" in err and "2/4 answered" in err
    (rec,) = _manifest(tmp_path)["extra"]["batch_jobs"]
    assert rec["state"] == "ended" and rec["answered"] == 2

    code, _, err = run(_args(tmp_path, fake_server, "anthropic", n=4), capsys)
    assert code == 0, err
    jobs = list(fake_server.batch_jobs.values())
    assert len(jobs) == 2 and len(jobs[1].requests) == 2  # only the two missing cases
    assert {cid for cid, _ in jobs[1].requests} == {cid for cid, _ in first.requests[2:]}
    rows = read_rows(tmp_path / "results.jsonl")
    assert sorted(r["id"] for r in rows) == ["c0", "c1", "c2", "c3"] and {_status(r) for r in rows} == {"scored"}
    assert len(_manifest(tmp_path)["extra"]["batch_jobs"]) == 2


def test_gemini_partly_failed_job_and_the_rerun(fake_server: FakeLLMServer, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    def responder(req: Any) -> Reply:
        failing = "answer 1" in req.prompt_text and len(fake_server.batch_jobs) == 1
        return Reply(status=500) if failing else Reply(text=verdict(0.7))

    fake_server.responder = responder
    code, _, err = run(_args(tmp_path, fake_server, "gemini"), capsys)
    assert code == 0, err
    rows = {r["id"]: r for r in read_rows(tmp_path / "results.jsonl")}
    assert _status(rows["c1"]) == "error" and "Gemini batch" in rows["c1"]["error"]
    assert _status(rows["c0"]) == _status(rows["c2"]) == "scored"
    (job,) = fake_server.batch_jobs.values()
    assert ("POST", "/v1beta/models/judge-model:batchGenerateContent") in fake_server.batch_calls
    assert ("GET", f"/v1beta/batches/{job.id}") in fake_server.batch_calls
    assert "BATCH_STATE_SUCCEEDED" in err

    assert run(_args(tmp_path, fake_server, "gemini"), capsys)[0] == 0
    assert [len(j.requests) for j in fake_server.batch_jobs.values()] == [3, 1]
    assert {_status(r) for r in read_rows(tmp_path / "results.jsonl")} == {"scored"}


def test_openai_cancelled_and_failed_jobs(fake_server: FakeLLMServer, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    fake_server.batch_plan(BatchPlan(outcome="cancelled", succeed=1), BatchPlan(outcome="failed"))
    assert run(_args(tmp_path, fake_server, "openai"), capsys)[0] == 0
    rows = read_rows(tmp_path / "results.jsonl")
    assert sorted(_status(r) for r in rows) == ["error", "error", "scored"]
    assert all("batch_cancelled" in r["error"] for r in rows if _status(r) == "error")
    assert run(_args(tmp_path, fake_server, "openai"), capsys)[0] == 0
    rows = read_rows(tmp_path / "results.jsonl")
    assert sorted(_status(r) for r in rows) == ["error", "error", "scored"]
    assert all("failed" in r["error"] for r in rows if _status(r) == "error")
    assert [len(j.requests) for j in fake_server.batch_jobs.values()] == [3, 2]


def test_an_invalid_reply_is_reasked_in_the_next_job(fake_server: FakeLLMServer, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    fake_server.script("this is not JSON at all", verdict(0.6))
    assert run(_args(tmp_path, fake_server, "anthropic", n=1), capsys)[0] == 0
    (row,) = read_rows(tmp_path / "results.jsonl")
    assert _status(row) == "scored" and row["score"] == 0.6
    jobs = list(fake_server.batch_jobs.values())
    assert [len(j.requests) for j in jobs] == [1, 1]
    assert "could not be used" in jobs[1].requests[0][1].last_user_text


def _kill_once_a_batch_job_is_recorded(args: list[str], manifest: Path) -> None:
    """Run ``referee <args>`` in a child process and SIGKILL it as soon as ``manifest`` records a batch job."""
    proc = subprocess.Popen([sys.executable, "-m", "referee", *args], env={**os.environ, "REFEREE_BATCH_POLL_S": "0.05"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            try:
                if json.loads(manifest.read_text() or "{}").get("extra", {}).get("batch_jobs"):
                    return
            except (OSError, ValueError):
                pass  # not written yet, or caught mid-write
            time.sleep(0.05)
        pytest.fail(f"no batch job was ever recorded in {manifest}")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)


def test_a_killed_run_finds_its_job_again_instead_of_paying_twice(fake_server: FakeLLMServer, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    fake_server.batch_plan(BatchPlan(polls=10**9))  # the job runs until the test lets it end
    args = _args(tmp_path, fake_server, "openai")
    manifest = tmp_path / "results.manifest.json"
    _kill_once_a_batch_job_is_recorded(args, manifest)
    (job,) = fake_server.batch_jobs.values()
    (rec,) = json.loads(manifest.read_text())["extra"]["batch_jobs"]
    assert rec["id"] == job.id and rec["ended"] is False and len(rec["keys"]) == 3
    job.plan.polls = 0  # the provider finishes the job while referee is down

    code, _, err = run(args, capsys)
    assert code == 0, err
    assert len(fake_server.batch_jobs) == 1  # nothing submitted twice
    assert f"batch job {job.id} resumed from the manifest" in err
    rows = read_rows(tmp_path / "results.jsonl")
    assert sorted(r["id"] for r in rows) == ["c0", "c1", "c2"] and {_status(r) for r in rows} == {"scored"}
    (rec,) = _manifest(tmp_path)["extra"]["batch_jobs"]
    assert rec["ended"] is True and rec["state"] == "completed"


def test_batch_needs_a_provider_with_a_batch_api(fake_server: FakeLLMServer, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("botocore")
    for var, value in (("AWS_ACCESS_KEY_ID", "AKIAFAKE"), ("AWS_SECRET_ACCESS_KEY", "secret"),
                       ("AWS_REGION", "us-east-1"), ("AWS_EC2_METADATA_DISABLED", "true")):
        monkeypatch.setenv(var, value)
    code, _, err = run(_args(tmp_path, fake_server, "bedrock"), capsys)
    assert code == 2 and "--batch" in err and "bedrock" in err and len(err.strip().splitlines()) == 1
    assert not fake_server.batch_calls and not fake_server.requests


@pytest.mark.parametrize("auth", ["api-key", "entra"])
def test_azure_batch_under_openai_with_api_version(fake_server: FakeLLMServer, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch, auth: str) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY" if auth == "api-key" else "AZURE_OPENAI_AD_TOKEN",
                       "azure-credential-0123456789SECRET")
    code, _, err = run(_args(tmp_path, fake_server, "azure"), capsys)
    assert code == 0, err
    assert {_status(r) for r in read_rows(tmp_path / "results.jsonl")} == {"scored"}
    (job,) = fake_server.batch_jobs.values()
    assert {w.body["model"] for _, w in job.requests} == {"judge-model"}  # the deployment
    paths = [p for _, p in fake_server.batch_calls]
    assert paths[:2] == ["/openai/files", "/openai/batches"] and f"/openai/batches/{job.id}" in paths
    assert "azure-credential-0123456789SECRET" not in (tmp_path / "results.manifest.json").read_text()


def test_hostile_results_cannot_answer_other_requests_or_pull_the_key_elsewhere(
        fake_server: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A results_url on another host is not followed with the key; lines for unknown custom_ids are ignored."""
    from aiohttp import web

    from referee.testing import _batch_api as batch_api

    real = batch_api.BatchRoutes._anthropic_batch_object

    def hostile(self: Any, job: Any, origin: str) -> dict[str, Any]:
        obj = real(self, job, origin)
        if obj["results_url"]:
            obj["results_url"] = "http://127.0.0.2:9/steal"
        return obj

    real_results = batch_api.BatchRoutes._anthropic_batch_results

    async def extra_line(self: Any, request: web.Request) -> web.StreamResponse:
        resp = await real_results(self, request)
        assert isinstance(resp, web.Response) and resp.text is not None
        forged = json.dumps({"custom_id": "0" * 64, "result": {"type": "succeeded", "message": {
            "content": [{"type": "text", "text": verdict(0.01)}], "usage": {}}}})
        return web.Response(text=resp.text + forged + "\n", content_type="application/binary")

    mp = pytest.MonkeyPatch()
    mp.setattr(batch_api.BatchRoutes, "_anthropic_batch_object", hostile)
    mp.setattr(batch_api.BatchRoutes, "_anthropic_batch_results", extra_line)
    try:
        with FakeLLMServer() as srv:  # routes are bound when the server starts
            srv.responder = lambda req: verdict(0.8)
            code, _, err = run(_args(tmp_path, srv, "anthropic"), capsys)
    finally:
        mp.undo()
    assert code == 0, err
    rows = read_rows(tmp_path / "results.jsonl")
    assert {_status(r) for r in rows} == {"scored"} and {r["score"] for r in rows} == {0.8}


def test_suite_run_with_batch(fake_server: FakeLLMServer, tmp_path: Path) -> None:
    from referee.cli import cli
    from referee.results import read_results

    cases = [{"id": f"s{i}", "output": f"Refunds take {i} days."} for i in range(4)]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"""\
cases: cases.jsonl
judge:
  provider: openai
  base_url: {fake_server.openai_base_url}
  model: suite-model
  rubric: "- accuracy: states the refund window"
evaluators:
  - contains: {{value: days}}
  - llm_judge
""")
    fake_server.responder = lambda req: '{"accuracy": {"score": 0.9, "rationale": "ok"}, "overall_score": 0.9}'
    out = tmp_path / "suite.jsonl"
    assert cli(["run", str(suite), "--out", str(out), "--batch", "--no-gates"]) == 0
    rows = read_results(out).rows
    assert len(rows) == 4 and {r.status for r in rows} == {"scored"}
    (job,) = fake_server.batch_jobs.values()
    assert len(job.requests) == 4 and all(w.model == "suite-model" for _, w in job.requests)
    assert json.loads((tmp_path / "suite.manifest.json").read_text())["extra"]["batch_jobs"][0]["id"] == job.id


def test_model_targets_generate_through_batch_too(fake_server: FakeLLMServer, tmp_path: Path) -> None:
    """``referee run --batch`` with a model target: generation and judging each go out as batch jobs."""
    from referee.cli import cli
    from referee.results import read_results

    def responder(req: Any) -> Reply:
        if req.schema is not None:  # the judge
            return Reply(text='{"quality": {"score": 0.9, "rationale": "ok"}, "overall_score": 0.9}')
        return Reply(text=f"answer from {req.model}", input_tokens=10, output_tokens=5)

    fake_server.responder = responder
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"q{i}", "input": f"question {i}"}) + "\n"
                                                  for i in range(5)))
    (tmp_path / "v1.md").write_text("Answer: {input}")
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"""\
cases: cases.jsonl
targets:
  - {{id: v1, provider: openai, model: small, base_url: "{fake_server.openai_base_url}", prompt: v1.md,
      input_price_per_mtok: 1.0, output_price_per_mtok: 1.0}}
evaluators:
  - contains: {{value: answer}}
  - llm_judge: {{rubric: "- quality: answers the question"}}
""")
    out = tmp_path / "out"
    assert cli(["run", str(suite), "--out", str(out), "--provider", "openai", "--base-url",
                fake_server.openai_base_url, "--model", "judge-model", "--batch", "--no-gates"]) == 0
    rows = read_results(out / "v1.jsonl").rows
    assert len(rows) == 5 and {r.status for r in rows} == {"scored"}
    jobs = list(fake_server.batch_jobs.values())
    # One generation job (the target's 5 prompts), then one judging job (5 verdicts).
    assert sorted(len(j.requests) for j in jobs) == [5, 5]
    assert {w.model for j in jobs for _, w in j.requests} == {"small", "judge-model"}
    assert all(r.cost_usd == pytest.approx(15 / 1e6 / 2) for r in rows)  # generation at the batch price


def test_python_api_judge_with_batch(fake_server: FakeLLMServer) -> None:
    import referee
    from referee.judges import LLMJudge

    fake_server.responder = lambda req: '{"accuracy": {"score": 0.8, "rationale": "ok"}, "overall_score": 0.8}'
    judge = referee.Judge("anthropic", model="claude-3-haiku-20240307", base_url=fake_server.url, batch=True)
    result = referee.evaluate([f"Refunds take {i} days." for i in range(3)],
                              [LLMJudge(rubric="- accuracy: states the refund window")], judge=judge,
                              progress=False)
    assert [r.status for r in result.rows] == ["scored"] * 3
    (job,) = fake_server.batch_jobs.values()
    assert len(job.requests) == 3
    assert result.manifest.judge is not None and result.manifest.judge.batch is True
    # Claude 3 Haiku's batch rate from genai-prices (120 in / 40 out tokens per call, half of $0.25 / $1.25).
    assert all(r.cost_usd == pytest.approx((120 * 0.25 + 40 * 1.25) / 1e6 / 2) for r in result.rows)


def test_an_outage_while_polling_is_retried_and_a_bad_key_stops_the_run_keeping_the_job(
        fake_server: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake_server.batch_plan(BatchPlan(fail_polls=2), BatchPlan(fail_polls=1, poll_status=401))
    assert run(_args(tmp_path, fake_server, "gemini"), capsys)[0] == 0
    assert {_status(r) for r in read_rows(tmp_path / "results.jsonl")} == {"scored"}

    code, _, err = run(_args(tmp_path, fake_server, "gemini", out="second.jsonl", n=3) + ["--no-cache"], capsys)
    assert code == 2 and "HTTP 401" in err and KEY not in err
    (rec,) = _manifest(tmp_path, "second")["extra"]["batch_jobs"]
    assert rec["ended"] is False and len(rec["keys"]) == 3  # the next run polls it again
    code, _, err = run(_args(tmp_path, fake_server, "gemini", out="second.jsonl", n=3) + ["--no-cache"], capsys)
    assert code == 0, err
    assert len(fake_server.batch_jobs) == 2 and "resumed from the manifest" in err


async def test_polls_back_off_and_requests_arriving_together_share_one_job() -> None:
    """The runner's logic with a scripted adapter: one job for a burst, waits growing by half up to the cap."""
    import asyncio

    from referee.providers import Completion, FakeProvider, JudgeRequest, Message
    from referee.providers._batch import BatchAdapter, JobStatus
    from referee.runner._batch import BatchRunner

    class Scripted(BatchAdapter):
        def __init__(self) -> None:
            super().__init__(FakeProvider())
            self.submitted: list[list[str]] = []
            self.polled_at: list[float] = []

        async def submit(self, items: list[tuple[str, JudgeRequest]]) -> str:
            self.submitted.append([k for k, _ in items])
            return f"job{len(self.submitted)}"

        async def status(self, job_id: str) -> JobStatus:
            self.polled_at.append(asyncio.get_running_loop().time())
            return JobStatus(state="running", ended=len(self.polled_at) >= 6)

        async def results(self, job_id: str, status: JobStatus, keys: list[str]) -> dict[str, Any]:
            return {k: Completion(text=k) for k in keys if k != "k3"}

    adapter = Scripted()
    lines: list[str] = []
    runner = BatchRunner(adapter, window_s=0.02, poll_s=0.02, max_poll_s=0.05, report=lines.append)
    req = JudgeRequest(messages=(Message("user", "x"),))

    async def one(k: str) -> str:
        await asyncio.sleep(0.001 * int(k[1:]))
        try:
            return (await runner.complete(k, req)).text
        except Exception as exc:  # noqa: BLE001
            return f"error: {exc}"

    out = await asyncio.gather(*(one(f"k{i}") for i in range(5)))
    assert adapter.submitted == [["k0", "k1", "k2", "k3", "k4"]]
    assert out[:3] == ["k0", "k1", "k2"] and out[4] == "k4"
    assert out[3].startswith("error: batch job job1 ended as running without a result")
    gaps = [b - a for a, b in zip(adapter.polled_at, adapter.polled_at[1:], strict=False)]
    assert gaps[0] >= 0.02 and gaps[1] >= 0.029 and all(g < 0.2 for g in gaps)  # 0.02, 0.03, then capped 0.05
    assert gaps[-1] >= 0.045
    assert lines[0] == "batch job job1 submitted (fake, 5 requests)"


async def test_large_runs_are_split_into_jobs_within_the_providers_limits() -> None:
    from referee.providers import FakeProvider, JudgeRequest, Message
    from referee.providers._batch import BatchAdapter, JobStatus
    from referee.runner._batch import BatchRunner

    class Small(BatchAdapter):
        max_requests = 3
        max_bytes = 4000

        async def submit(self, items: list[tuple[str, JudgeRequest]]) -> str:
            raise AssertionError

        async def status(self, job_id: str) -> JobStatus:
            raise AssertionError

        async def results(self, job_id: str, status: JobStatus, keys: list[str]) -> dict[str, Any]:
            raise AssertionError

    runner = BatchRunner(Small(FakeProvider()), report=lambda line: None)
    short = JudgeRequest(messages=(Message("user", "x"),))
    long = JudgeRequest(messages=(Message("user", "y" * 3000),))
    items = [(f"s{i}", short) for i in range(7)] + [("l0", long), ("l1", long)]
    chunks = runner._chunks(items)
    assert [[k for k, _ in c] for c in chunks] == [["s0", "s1", "s2"], ["s3", "s4", "s5"], ["s6"], ["l0"], ["l1"]]


@pytest.mark.parametrize("outcome", ["expired", "cancelled"])
@pytest.mark.parametrize(("provider", "answered", "word"), [("openai", 1, "batch_"), ("anthropic", 1, "request "),
                                                            ("gemini", 0, "BATCH_STATE_")])
def test_every_format_reports_unanswered_requests_as_error_rows(
        fake_server: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], provider: str,
        answered: int, word: str, outcome: Any) -> None:
    # Gemini's expired or cancelled jobs return no results at all; the others return what ran.
    fake_server.batch_plan(BatchPlan(outcome=outcome, succeed=1))
    # Nothing graded at all is exit 1 (the judge command's rule); the rows are kept either way.
    assert run(_args(tmp_path, fake_server, provider), capsys)[0] == (0 if answered else 1)
    rows = read_rows(tmp_path / "results.jsonl")
    assert sum(_status(r) == "scored" for r in rows) == answered
    errors = [r["error"] for r in rows if _status(r) == "error"]
    assert len(errors) == 3 - answered and all(word in e and "rerun resubmits" in e for e in errors)
    assert run(_args(tmp_path, fake_server, provider), capsys)[0] == 0
    assert [len(j.requests) for j in fake_server.batch_jobs.values()] == [3, 3 - answered]


def test_case_text_cannot_forge_batch_lines(fake_server: FakeLLMServer, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    forged = '"}\n{"custom_id": "' + "0" * 64 + '", "method": "POST", "url": "/v1/chat/completions", "body": {}}\n'
    cases = [{"id": "evil", "input": "q", "output": forged}, {"id": "ok", "input": "q", "output": "fine"}]
    assert run(judge_args(tmp_path, fake_server, "--batch", provider="openai", cases=cases), capsys)[0] == 0
    (job,) = fake_server.batch_jobs.values()
    assert len(job.requests) == 2 and "0" * 64 not in [cid for cid, _ in job.requests]
    rows = {r["id"]: r for r in read_rows(tmp_path / "results.jsonl")}
    assert set(rows) == {"evil", "ok"} and all(_status(r) == "scored" for r in rows.values())


def test_repeats_go_into_the_same_job_with_their_own_seeds(fake_server: FakeLLMServer, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert run(_args(tmp_path, fake_server, "openai", "--repeat", "2", "--seed", "5", n=2), capsys)[0] == 0
    rows = read_rows(tmp_path / "results.jsonl")
    assert sorted((r["id"], r.get("repeat")) for r in rows) == [("c0", 0), ("c0", 1), ("c1", 0), ("c1", 1)]
    (job,) = fake_server.batch_jobs.values()
    assert sorted(w.body["seed"] for _, w in job.requests) == [5, 5, 6, 6]


def test_a_killed_run_finds_its_target_generation_job_again(fake_server: FakeLLMServer, tmp_path: Path) -> None:
    from referee.cli import cli
    from referee.results import read_results

    def responder(req: Any) -> Reply:
        if req.schema is not None:
            return Reply(text='{"quality": {"score": 0.9, "rationale": "ok"}, "overall_score": 0.9}')
        return Reply(text=f"answer from {req.model}")

    fake_server.responder = responder
    fake_server.batch_plan(BatchPlan(polls=10**9))  # the generation job runs until the test lets it end
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"q{i}", "input": f"question {i}"}) + "\n"
                                                  for i in range(3)))
    (tmp_path / "v1.md").write_text("Answer: {input}")
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"""\
cases: cases.jsonl
targets:
  - {{id: v1, provider: openai, model: small, base_url: "{fake_server.openai_base_url}", prompt: v1.md}}
evaluators:
  - llm_judge: {{rubric: "- quality: answers the question"}}
""")
    out = tmp_path / "out"
    args = ["run", str(suite), "--out", str(out), "--provider", "openai", "--base-url", fake_server.openai_base_url,
            "--model", "judge-model", "--batch", "--no-gates"]
    _kill_once_a_batch_job_is_recorded(args, out / "v1.manifest.json")
    (job,) = fake_server.batch_jobs.values()
    assert {w.model for _, w in job.requests} == {"small"}
    job.plan.polls = 0
    assert cli(args) == 0
    models = [{w.model for _, w in j.requests} for j in fake_server.batch_jobs.values()]
    assert models == [{"small"}, {"judge-model"}]  # the generation job resumed, not submitted again
    rows = read_results(out / "v1.jsonl").rows
    assert len(rows) == 3 and {r.status for r in rows} == {"scored"}


def test_line_separators_inside_json_strings_do_not_split_batch_lines(fake_server: FakeLLMServer, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """U+2028 and U+0085 are legal unescaped in JSON strings (the upload is written with ensure_ascii=False):
    JSONL is split on newlines only, on both sides of a batch job."""
    from referee.providers._batch import _lines

    odd = "line one\u2028line two\u0085three"
    cases = [{"id": "odd", "input": "q", "output": odd}, {"id": "ok", "input": "q", "output": "fine"}]
    code, _, err = run(judge_args(tmp_path, fake_server, "--batch", provider="openai", cases=cases), capsys)
    assert code == 0, err
    (job,) = fake_server.batch_jobs.values()
    assert len(job.requests) == 2 and any(odd in json.dumps(w.body, ensure_ascii=False) for _, w in job.requests)
    assert {r["id"]: _status(r) for r in read_rows(tmp_path / "results.jsonl")} == {"odd": "scored", "ok": "scored"}
    result = json.dumps({"custom_id": "k1", "response": {"body": {"text": odd}}}, ensure_ascii=False)
    assert _lines(result + "\n\n" + json.dumps({"custom_id": "k2"}) + "\n") == [json.loads(result), {"custom_id": "k2"}]
