"""``referee judge`` end to end through the real providers against FakeLLMServer: every failure mode of the
issue, the result rows and the manifest."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from referee.runner._client import RetryPolicy
from referee.testing import FakeLLMServer, Reply, WireRequest
from tests.support.judging import KEY, TEMPLATE, judge_args, make_cases, read_rows, run, verdict, write_cases

Cap = pytest.CaptureFixture[str]


@pytest.fixture(autouse=True)
def _openai_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def test_rows_manifest_cost_and_latency(tmp_path: Path, fake_server: FakeLLMServer, capsys: Cap) -> None:
    code, _, err = run(judge_args(tmp_path, fake_server, "--input-price-per-mtok", "3",
                                  "--output-price-per-mtok", "15", "--category", "support"), capsys)
    assert code == 0, err
    rows = read_rows(tmp_path / "results.jsonl")
    assert sorted(r["id"] for r in rows) == ["c0", "c1", "c2"]
    for r in rows:
        assert "status" not in r  # "scored" is the default and left out of the compact form
        assert r["score"] == 0.8 and r["rationale"] == "clear and correct" and r["category"] == "support"
        assert r["cost_usd"] == 0.00096  # 120 in + 40 out tokens reported by the server; no float noise
        assert r["latency_ms"] > 0 and r["usage"] == {"input_tokens": 120, "output_tokens": 40, "calls": 1}
        assert r["judge"]["provider"] == "openai" and r["judge"]["model"] == "judge-model"
        assert r["criteria"][0]["id"] == "quality"
    m = json.loads((tmp_path / "results.manifest.json").read_text())
    assert m["status"] == "complete" and m["eval_set"]["case_ids"] == ["c0", "c1", "c2"]
    assert m["totals"]["scored"] == 3 and m["totals"]["cost_usd"] == 0.00288
    assert m["totals"]["provider_calls"] == 3 and m["judge"]["input_price_per_mtok"] == 3.0
    assert m["template"]["sha256"] == rows[0]["judge"]["template_hash"]
    assert "3 scored, 0 unscored, 0 error" in err


def test_cost_needs_both_prices(tmp_path: Path, fake_server: FakeLLMServer, capsys: Cap) -> None:
    code, _, _ = run(judge_args(tmp_path, fake_server, "--input-price-per-mtok", "3"), capsys)
    assert code == 0
    assert all("cost_usd" not in r for r in read_rows(tmp_path / "results.jsonl"))


@pytest.mark.parametrize("provider", ["anthropic", "gemini"])
def test_other_wire_formats_end_to_end(tmp_path: Path, fake_server: FakeLLMServer, capsys: Cap,
                                       monkeypatch: pytest.MonkeyPatch, provider: str) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY" if provider == "anthropic" else "GEMINI_API_KEY", KEY)
    code, _, err = run(judge_args(tmp_path, fake_server, provider=provider), capsys)
    assert code == 0, err
    assert [r["score"] for r in read_rows(tmp_path / "results.jsonl")] == [0.8] * 3
    assert {r.format for r in fake_server.requests} == {provider}


def test_429_storm_every_case_scored_retry_after_honoured(tmp_path: Path, fake_server: FakeLLMServer,
                                                          capsys: Cap, monkeypatch: pytest.MonkeyPatch) -> None:
    lock = threading.Lock()
    count = {"n": 0}

    def storm(req: WireRequest) -> Reply:
        with lock:
            count["n"] += 1
            n = count["n"]
        return Reply(status=429, retry_after="0.03") if n <= 40 else Reply(text=verdict(0.6))

    fake_server.responder = storm
    seen: list[tuple[float | None, float]] = []
    orig = RetryPolicy.delay

    def recording(self: RetryPolicy, attempt: int, retry_after: float | None) -> float:
        d = orig(self, attempt, retry_after)
        seen.append((retry_after, d))
        return d

    monkeypatch.setattr(RetryPolicy, "delay", recording)
    code, _, err = run(judge_args(tmp_path, fake_server, "--concurrency", "8", "--max-retries", "30",
                                  cases=make_cases(12)), capsys)
    assert code == 0, err
    rows = read_rows(tmp_path / "results.jsonl")
    assert len(rows) == 12 and all(r.get("score") == 0.6 for r in rows)
    assert len(fake_server.requests) == 52 and len(seen) == 40
    assert all(ra == 0.03 and d >= 0.03 for ra, d in seen)


@pytest.mark.parametrize("failure", [
    Reply(status=503), Reply(status=500), Reply(status=502, body="<html>bad gateway</html>"),
    Reply(drop=True), Reply(truncate=True, text=verdict()), Reply(body="garbage, not json"),
    Reply(text=verdict(), delay=1.5),  # longer than --timeout
], ids=["503", "500", "502-html", "drop", "truncated-body", "garbage-body", "timeout"])
def test_transient_failures_are_retried(tmp_path: Path, fake_server: FakeLLMServer, capsys: Cap,
                                        failure: Reply) -> None:
    fake_server.script(failure, failure)
    code, _, err = run(judge_args(tmp_path, fake_server, "--timeout", "0.5", "--concurrency", "1",
                                  cases=make_cases(1)), capsys)
    assert code == 0, err
    (row,) = read_rows(tmp_path / "results.jsonl")
    assert row["score"] == 0.8
    assert len(fake_server.requests) == 3


def test_persistent_failure_is_an_error_row_and_exit_1(tmp_path: Path, fake_server: FakeLLMServer,
                                                       capsys: Cap) -> None:
    fake_server.responder = lambda req: Reply(status=500)
    code, _, err = run(judge_args(tmp_path, fake_server, "--max-retries", "2", cases=make_cases(2)), capsys)
    assert code == 1 and "nothing was graded" in err
    rows = read_rows(tmp_path / "results.jsonl")
    assert [r["status"] for r in rows] == ["error", "error"] and all("score" not in r for r in rows)
    assert "HTTP 500" in rows[0]["error"] and len(fake_server.requests) == 6
    assert json.loads((tmp_path / "results.manifest.json").read_text())["totals"]["error"] == 2


def test_fenced_reply_is_scored(tmp_path: Path, fake_server: FakeLLMServer, capsys: Cap) -> None:
    fake_server.script("```json\n" + verdict(0.9) + "\n```")
    code, _, _ = run(judge_args(tmp_path, fake_server, cases=make_cases(1)), capsys)
    assert code == 0 and read_rows(tmp_path / "results.jsonl")[0]["score"] == 0.9
    assert len(fake_server.requests) == 1


@pytest.mark.parametrize("bad", [
    "I would rate this answer highly.",
    '{"quality": {"score": 0.8, "rationale": "cut', # a truncated reply
    json.dumps({"quality": {"score": 0.8, "rationale": "x"}, "overall_score": 8}),  # out of range
    json.dumps({"quality": {"score": 1.7, "rationale": "x"}, "overall_score": 0.5}),
    json.dumps({"quality": {"score": 0.8, "rationale": "x"}}),  # overall_score missing
], ids=["prose", "truncated", "overall-out-of-range", "criterion-out-of-range", "missing-overall"])
def test_invalid_reply_reasks_once_then_unscored(tmp_path: Path, fake_server: FakeLLMServer, capsys: Cap,
                                                 bad: str) -> None:
    fake_server.responder = lambda req: bad
    code, _, err = run(judge_args(tmp_path, fake_server, cases=make_cases(1)), capsys)
    assert code == 1  # nothing graded
    (row,) = read_rows(tmp_path / "results.jsonl")
    assert row["status"] == "unscored" and "score" not in row  # never a 0
    assert row["raw_reply"] == bad[:500] and "invalid judge reply" in row["error"]
    assert len(fake_server.requests) == 2  # exactly one re-ask
    assert "could not be used" in fake_server.requests[1].last_user_text
    assert "0 scored, 1 unscored" in err


def test_invalid_then_valid_reply_is_scored(tmp_path: Path, fake_server: FakeLLMServer, capsys: Cap) -> None:
    fake_server.script(json.dumps({"overall_score": 3}), verdict(0.4))
    code, _, _ = run(judge_args(tmp_path, fake_server, cases=make_cases(1)), capsys)
    assert code == 0 and read_rows(tmp_path / "results.jsonl")[0]["score"] == 0.4


def test_placeholders_in_case_text_are_not_expanded(tmp_path: Path, fake_server: FakeLLMServer,
                                                    capsys: Cap) -> None:
    cases = [{"id": "p", "input": "Say {output} and {reference}", "output": "REAL-OUTPUT", "reference": "R"}]
    code, _, _ = run(judge_args(tmp_path, fake_server, cases=cases), capsys)
    assert code == 0
    text = fake_server.requests[0].last_user_text
    assert "<input>Say {output} and {reference}</input>" in text
    assert text.count("REAL-OUTPUT") == 1


def test_duplicates_and_missing_fields_fail_preflight_before_any_call(tmp_path: Path, fake_server: FakeLLMServer,
                                                                      capsys: Cap,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")  # the preflight runs before any key is looked at
    cases = [{"id": "a", "input": "first", "output": "o"}, {"id": "a", "input": "second", "output": "o"},
             {"id": "b", "input": "no output"}, {"id": "c", "input": "q", "output": "o"}]
    args = judge_args(tmp_path, fake_server, "--provider", "anthropic", cases=cases)
    code, _, err = run(args, capsys)
    assert code == 2 and not fake_server.requests
    assert "duplicate id 'a'" in err and "cases.jsonl:2" in err and "missing field(s) output" in err
    assert "--skip-invalid" in err and "Traceback" not in err
    assert not (tmp_path / "results.jsonl").exists()


def test_skip_invalid_keeps_the_first_duplicate(tmp_path: Path, fake_server: FakeLLMServer, capsys: Cap) -> None:
    cases = [{"id": "a", "input": "first", "output": "o"}, {"id": "a", "input": "second", "output": "o"},
             {"id": "b", "input": "no output"}, {"id": "c", "input": "q", "output": "o"}]
    code, _, err = run(judge_args(tmp_path, fake_server, "--skip-invalid", cases=cases), capsys)
    assert code == 0, err
    assert sorted(r["id"] for r in read_rows(tmp_path / "results.jsonl")) == ["a", "c"]
    prompts = [r.last_user_text for r in fake_server.requests]
    assert any("<input>first</input>" in p for p in prompts) and not any("second" in p for p in prompts)
    m = json.loads((tmp_path / "results.manifest.json").read_text())
    assert m["totals"]["skipped_invalid"] == 2 and "2 skipped as invalid" in err


@pytest.mark.parametrize(("content", "needle"), [
    (b'{"id": "a", "input": "q", "output": "o"}\n{"id": "b", "input": "caf\xe9", "output": "o"}\n',
     "cases.jsonl:2: not valid UTF-8"),
    (b"", "empty"),
    (b'{"id": "a", "input": "q", "output": "o"}\n{"id": "b", "input": \n', "cases.jsonl:2: malformed JSON"),
])
def test_bad_case_files_exit_2_with_one_line(tmp_path: Path, fake_server: FakeLLMServer, capsys: Cap,
                                             content: bytes, needle: str) -> None:
    args = judge_args(tmp_path, fake_server)
    (tmp_path / "cases.jsonl").write_bytes(content)
    code, _, err = run(args, capsys)
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1
    assert not fake_server.requests


def test_missing_template_and_bad_flag(tmp_path: Path, fake_server: FakeLLMServer, capsys: Cap) -> None:
    args = judge_args(tmp_path, fake_server)
    (tmp_path / "judge.md").unlink()
    code, _, err = run(args, capsys)
    assert code == 2 and "judge.md" in err and "not found" in err
    code, _, err = run([*judge_args(tmp_path, fake_server), "--concurrency", "0"], capsys)
    assert code == 2 and "--concurrency" in err


@pytest.mark.parametrize(("provider", "var"), [("anthropic", "ANTHROPIC_API_KEY"), ("gemini", "GEMINI_API_KEY"),
                                               ("openai", "OPENAI_API_KEY")])
def test_missing_key_exits_2_before_any_call(tmp_path: Path, fake_server: FakeLLMServer, capsys: Cap,
                                             monkeypatch: pytest.MonkeyPatch, provider: str, var: str) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    args = judge_args(tmp_path, fake_server, provider=provider)
    if provider == "openai":  # only the official endpoint needs a key; a local server does not
        i = args.index("--base-url")
        del args[i : i + 2]
    code, _, err = run(args, capsys)
    assert code == 2 and var in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not fake_server.requests


def test_server_down_exits_2_naming_base_url(tmp_path: Path, capsys: Cap) -> None:
    with FakeLLMServer() as srv:
        args = judge_args(tmp_path, srv, "--max-retries", "1")
    code, _, err = run(args, capsys)  # the server is stopped now
    assert code == 2 and "--base-url" in err and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("referee: error:")
    m = json.loads((tmp_path / "results.manifest.json").read_text())
    assert m["status"] == "failed"


def test_unknown_model_exits_2(tmp_path: Path, fake_server: FakeLLMServer, capsys: Cap) -> None:
    fake_server.responder = lambda req: Reply(status=404, body={"error": {"message": "model 'nope' not found"}})
    code, _, err = run(judge_args(tmp_path, fake_server, cases=make_cases(5)), capsys)
    assert code == 2 and "model 'nope' not found" in err and "unknown model" in err
    assert len(fake_server.requests) < 5 + 8  # stopped, not retried case after case


def test_keys_and_url_credentials_never_written(tmp_path: Path, fake_server: FakeLLMServer, capsys: Cap,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.chdir(tmp_path)
    args = judge_args(tmp_path, fake_server, provider="anthropic")
    i = args.index("--base-url")
    args[i + 1] = fake_server.url.replace("http://", "http://proxyuser:pr0xyPASS@")
    fake_server.script(Reply(status=500, body={"error": {"message": f"bad things with key {KEY}"}}))
    code, _, err = run([*args, "--max-retries", "0"], capsys)
    assert code == 0, err
    assert fake_server.requests[0].headers["x-api-key"] == KEY  # it was sent, in the header
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".sqlite" for p in written) and any(p.name.endswith("manifest.json") for p in written)
    for p in written:
        data = p.read_bytes()
        assert KEY.encode() not in data, p
        assert b"pr0xyPASS" not in data, p
    assert KEY not in err and "pr0xyPASS" not in err


def test_repeat_uses_distinct_seeds_and_bypasses_the_cache(tmp_path: Path, fake_server: FakeLLMServer,
                                                           capsys: Cap) -> None:
    args = judge_args(tmp_path, fake_server, "--repeat", "3", "--seed", "10", cases=make_cases(2))
    code, _, _ = run(args, capsys)
    assert code == 0
    rows = read_rows(tmp_path / "results.jsonl")
    assert sorted((r["id"], r["repeat"]) for r in rows) == [(c, k) for c in ("c0", "c1") for k in range(3)]
    seeds = sorted(r.body["seed"] for r in fake_server.requests if "question 0" in r.last_user_text)
    assert seeds == [10, 11, 12]
    out2 = [*args[:args.index("--out") + 1], str(tmp_path / "again.jsonl"), *args[args.index("--out") + 2:]]
    code, _, _ = run(out2, capsys)
    assert code == 0 and len(fake_server.requests) == 12  # no cache for repeats


def test_unchanged_rerun_makes_zero_calls(tmp_path: Path, fake_server: FakeLLMServer, capsys: Cap) -> None:
    args = judge_args(tmp_path, fake_server, cases=make_cases(4))
    assert run(args, capsys)[0] == 0
    assert len(fake_server.requests) == 4
    code, _, err = run(args, capsys)  # same results file: every row is already there
    assert code == 0 and len(fake_server.requests) == 4
    assert len(read_rows(tmp_path / "results.jsonl")) == 4 and "0 judge calls" in err
    i = args.index("--out")
    other = [*args[: i + 1], str(tmp_path / "other.jsonl"), *args[i + 2 :]]
    code, _, err = run(other, capsys)  # a new results file: every reply comes from the cache
    assert code == 0 and len(fake_server.requests) == 4 and "4 from cache" in err
    assert all("cached" in r["flags"] for r in read_rows(tmp_path / "other.jsonl"))
    code, _, _ = run([*other, "--no-cache", "--out", str(tmp_path / "third.jsonl")], capsys)
    assert code == 0 and len(fake_server.requests) == 8


def test_rerun_after_a_crash_judges_only_missing_cases(tmp_path: Path, fake_server: FakeLLMServer,
                                                       capsys: Cap) -> None:
    args = judge_args(tmp_path, fake_server, "--no-cache", cases=make_cases(6))
    assert run(args, capsys)[0] == 0
    out = tmp_path / "results.jsonl"
    lines = out.read_text().splitlines()
    out.write_text("\n".join(lines[:2]) + "\n" + lines[2][:25], encoding="utf-8")  # a crash mid-write
    mpath = tmp_path / "results.manifest.json"
    m = json.loads(mpath.read_text())
    m["status"] = "running"
    mpath.write_text(json.dumps(m))
    before = len(fake_server.requests)
    code, _, err = run(args, capsys)
    assert code == 0 and "resuming: 2 rows" in err
    assert len(fake_server.requests) - before == 4
    rows = read_rows(out)
    assert sorted(r["id"] for r in rows) == [f"c{i}" for i in range(6)]
    assert json.loads(mpath.read_text())["status"] == "complete"


def test_changed_template_does_not_reuse_old_rows(tmp_path: Path, fake_server: FakeLLMServer, capsys: Cap) -> None:
    args = judge_args(tmp_path, fake_server, "--no-cache", cases=make_cases(2))
    assert run(args, capsys)[0] == 0
    (tmp_path / "judge.md").write_text(TEMPLATE + "\nBe strict.\n", encoding="utf-8")
    code, _, err = run(args, capsys)
    assert code == 0 and len(fake_server.requests) == 4 and "results.prev.jsonl" in err


def test_disk_full_exits_2_and_keeps_rows(tmp_path: Path, fake_server: FakeLLMServer, capsys: Cap,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from referee.results import _io as rio

    orig = rio.ResultWriter._append
    budget = {"rows": 2}

    def append(self: rio.ResultWriter, text: str, rows: int) -> None:
        if budget["rows"] <= 0:
            self._f.write = _enospc  # type: ignore[method-assign]
        budget["rows"] -= rows
        orig(self, text, rows)

    def _enospc(s: str) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(rio.ResultWriter, "_append", append)
    args = judge_args(tmp_path, fake_server, "--concurrency", "1", cases=make_cases(5))
    code, _, err = run(args, capsys)
    assert code == 2 and "disk full" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) <= 2
    assert [r["id"] for r in read_rows(tmp_path / "results.jsonl")] == ["c0", "c1"]
    monkeypatch.setattr(rio.ResultWriter, "_append", orig)  # space freed: the rerun finishes the rest
    before = len(fake_server.requests)
    code, _, _ = run(args, capsys)
    assert code == 0 and len(read_rows(tmp_path / "results.jsonl")) == 5
    # c2 was judged (and cached) before its row hit the full disk, and c3 too (its request left before the turn's
    # write failed): both come from the cache, only c4 goes to the server again.
    assert len(fake_server.requests) - before == 1


def test_rows_are_appended_as_they_complete(tmp_path: Path, fake_server: FakeLLMServer, capsys: Cap) -> None:
    fake_server.responder = lambda req: Reply(text=verdict(), delay=0.4 if "question 0" in req.last_user_text
                                              else 0.0)
    code, _, _ = run(judge_args(tmp_path, fake_server, "--concurrency", "3", cases=make_cases(3)), capsys)
    assert code == 0
    assert read_rows(tmp_path / "results.jsonl")[-1]["id"] == "c0"  # the slow one is written last


def test_out_is_a_directory(tmp_path: Path, fake_server: FakeLLMServer, capsys: Cap) -> None:
    args = judge_args(tmp_path, fake_server)
    i = args.index("--out")
    args[i + 1] = str(tmp_path)
    code, _, err = run(args, capsys)
    assert code == 2 and "is a directory" in err and not fake_server.requests


def test_rejected_key_exits_2_without_judging_every_case(tmp_path: Path, fake_server: FakeLLMServer,
                                                         capsys: Cap) -> None:
    fake_server.responder = lambda req: Reply(status=401, body={"error": {"message": "invalid x-api-key"}})
    code, _, err = run(judge_args(tmp_path, fake_server, "--concurrency", "1", cases=make_cases(5)), capsys)
    assert code == 2 and "check the API key" in err and len(fake_server.requests) == 1


def test_out_must_not_be_the_cases_file(tmp_path: Path, fake_server: FakeLLMServer, capsys: Cap) -> None:
    args = judge_args(tmp_path, fake_server)
    i = args.index("--out")
    args[i + 1] = str(tmp_path / "cases.jsonl")
    before = (tmp_path / "cases.jsonl").read_bytes()
    code, _, err = run(args, capsys)
    assert code == 2 and "cases file" in err and (tmp_path / "cases.jsonl").read_bytes() == before


def test_manifest_records_the_command_it_was_given(tmp_path: Path, fake_server: FakeLLMServer, capsys: Cap) -> None:
    args = judge_args(tmp_path, fake_server, cases=make_cases(1))
    assert run(args, capsys)[0] == 0
    m = json.loads((tmp_path / "results.manifest.json").read_text())
    assert m["command"] == ["referee", *args]  # not pytest's own sys.argv


def test_no_cost_when_the_provider_reports_no_tokens(tmp_path: Path, fake_server: FakeLLMServer,
                                                     capsys: Cap) -> None:
    envelope = {"id": "x", "object": "chat.completion", "model": "judge-model",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": verdict(0.5)}}]}
    fake_server.responder = lambda req: Reply(body=envelope)  # a server that sends no "usage"
    code, _, _ = run(judge_args(tmp_path, fake_server, "--input-price-per-mtok", "3", "--output-price-per-mtok",
                                "15", cases=make_cases(2)), capsys)
    assert code == 0
    rows = read_rows(tmp_path / "results.jsonl")
    assert [r["score"] for r in rows] == [0.5, 0.5]
    assert all("cost_usd" not in r and "input_tokens" not in r.get("usage", {}) for r in rows)  # never estimated
    assert json.loads((tmp_path / "results.manifest.json").read_text())["totals"]["cost_usd"] is None


def test_changed_cases_are_judged_again_not_resumed(tmp_path: Path, fake_server: FakeLLMServer,
                                                    capsys: Cap) -> None:
    cases = make_cases(3)
    args = judge_args(tmp_path, fake_server, cases=cases)
    assert run(args, capsys)[0] == 0 and len(fake_server.requests) == 3
    cases[1]["output"] = "a new answer after the prompt change"
    write_cases(tmp_path / "cases.jsonl", cases)
    fake_server.responder = lambda req: verdict(0.1 if "new answer" in req.last_user_text else 0.8)
    code, _, err = run(args, capsys)
    assert code == 0 and "results.prev.jsonl" in err
    assert len(fake_server.requests) == 4  # only the changed case is sent; the others come from the cache
    scores = {r["id"]: r["score"] for r in read_rows(tmp_path / "results.jsonl")}
    assert scores == {"c0": 0.8, "c1": 0.1, "c2": 0.8}


def test_retry_after_ms_header(fake_server: FakeLLMServer) -> None:
    import asyncio

    from referee.errors import ProviderError
    from referee.providers import JudgeRequest, Message
    from referee.providers._openai_compat import OpenAICompatProvider

    fake_server.script(Reply(status=429, headers={"retry-after-ms": "1500"}))
    p = OpenAICompatProvider("m", base_url=fake_server.openai_base_url)

    async def go() -> ProviderError:
        try:
            await p.complete(JudgeRequest(messages=(Message("user", "x"),)))
        except ProviderError as exc:
            return exc
        finally:
            await p.aclose()
        raise AssertionError("expected a 429")

    assert asyncio.run(go()).retry_after == 1.5


SEED_TEMPLATE = """You are grading a support agent.
Question: {input}
Answer: {output}
Conversation:
{transcript}
Context: {metadata}
Respond with JSON only:
{"accuracy": {"score": 0.0-1.0, "rationale": "..."}, "overall_score": 0.0-1.0}
"""


def test_a_seed_users_template_reaches_the_judge_byte_for_byte(tmp_path: Path, fake_server: FakeLLMServer,
                                                               capsys: Cap) -> None:
    """The seed's filling: braces of the JSON example untouched, final_output for {output}, turns as
    'Role: content', non-strings as json.dumps(value, indent=2); the row's rationale is the lowest criterion's."""
    fake_server.script(json.dumps({"accuracy": {"score": 0.9, "rationale": "correct"},
                                   "tone": {"score": 0.3, "rationale": "curt"},
                                   "clarity": {"score": 0.6, "rationale": "ok"}, "overall_score": 0.6}))
    case = {"id": "s1", "input": "Refund {order}?", "final_output": "Yes, done.",
            "turns": [{"role": "user", "content": "Refund?"}, {"role": "assistant", "content": "Yes, done."}],
            "metadata": {"plan": "pro", "tags": ["café", 2]}}
    args = judge_args(tmp_path, fake_server, cases=[case])
    (tmp_path / "judge.md").write_text(SEED_TEMPLATE, encoding="utf-8")
    code, _, err = run(args, capsys)
    assert code == 0, err
    expected = (SEED_TEMPLATE.replace("{input}", "Refund {order}?").replace("{output}", "Yes, done.")
                .replace("{transcript}", "User: Refund?\nAssistant: Yes, done.")
                .replace("{metadata}", json.dumps(case["metadata"], indent=2)))
    assert fake_server.requests[0].last_user_text == expected
    assert '{"accuracy": {"score": 0.0-1.0, "rationale": "..."}, "overall_score": 0.0-1.0}' in expected
    (row,) = read_rows(tmp_path / "results.jsonl")
    assert row["score"] == 0.6 and row["rationale"] == "curt"
    assert [c["id"] for c in row["criteria"]] == ["accuracy", "tone", "clarity"]


@pytest.mark.parametrize("provider", ["ollama", "vllm", "lmstudio"])
def test_a_local_server_that_routes_by_model_needs_model(tmp_path: Path, fake_server: FakeLLMServer, capsys: Cap,
                                                         monkeypatch: pytest.MonkeyPatch, provider: str) -> None:
    monkeypatch.delenv("REFEREE_MODEL", raising=False)
    args = judge_args(tmp_path, fake_server)
    i = args.index("--model")
    del args[i : i + 2]
    args[args.index("--provider") + 1] = provider
    code, _, err = run(args, capsys)
    assert code == 2 and f"--provider {provider} needs --model" in err and not fake_server.requests
    code, _, err = run([*args, "--model", "llama3.1"], capsys)
    assert code == 0, err
    assert {r.model for r in fake_server.requests} == {"llama3.1"}


def test_pairwise_shares_the_preflight_report_and_runs_it_before_the_key(tmp_path: Path, capsys: Cap,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    cases = write_cases(tmp_path / "pw.jsonl", [{"id": "a", "input": "q", "output_a": "x", "output_b": "y"},
                                                {"id": "a", "input": "q", "output_a": "x", "output_b": "y"},
                                                {"id": "b", "input": "q", "output_a": "x"}])
    tmpl = tmp_path / "pw.md"
    tmpl.write_text("{input}\n{response_1}\n{response_2}\n", encoding="utf-8")
    code, _, err = run(["pairwise", str(cases), "-t", str(tmpl), "-o", str(tmp_path / "o.jsonl"),
                        "--provider", "anthropic"], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and "API key" not in err
    assert lines[0].startswith("invalid: ") and "duplicate id 'a'" in lines[0] and "pw.jsonl:2" in lines[0]
    assert "missing field(s) output_b" in lines[1]
    assert "2 invalid case(s)" in lines[2] and "--skip-invalid" in lines[2]
    code, _, err = run(["pairwise", str(cases), "-t", str(tmpl), "-o", str(tmp_path / "o.jsonl"),
                        "--provider", "anthropic", "--skip-invalid"], capsys)
    assert code == 2 and "ANTHROPIC_API_KEY" in err  # only now, with the invalid cases skipped


def test_a_placeholder_no_case_has_is_one_line_naming_the_typo(tmp_path: Path, fake_server: FakeLLMServer,
                                                               capsys: Cap) -> None:
    args = judge_args(tmp_path, fake_server, "--skip-invalid", cases=make_cases(30))
    (tmp_path / "judge.md").write_text("Q: {input}\nA: {ouptut}\n", encoding="utf-8")
    code, _, err = run(args, capsys)
    assert code == 2 and not fake_server.requests
    (line,) = err.strip().splitlines()  # not 30 per-case lines: the template is wrong, not the cases
    assert "{ouptut}" in line and "cases.jsonl" in line and "input, output" in line


def test_a_byte_order_mark_in_the_template_never_reaches_the_judge(tmp_path: Path, fake_server: FakeLLMServer,
                                                                   capsys: Cap) -> None:
    args = judge_args(tmp_path, fake_server, cases=make_cases(1))
    (tmp_path / "judge.md").write_bytes(b"\xef\xbb\xbfQ: {input}\r\nA: {output}\r\n")
    code, _, err = run(args, capsys)
    assert code == 0, err
    assert fake_server.requests[0].last_user_text == "Q: question 0\nA: answer 0\n"


@pytest.mark.parametrize(("out", "name"), [("cases.jsonl", "cases"), ("judge.md", "--template")])
def test_out_naming_an_input_file_is_refused(tmp_path: Path, fake_server: FakeLLMServer, capsys: Cap,
                                            out: str, name: str) -> None:
    args = judge_args(tmp_path, fake_server, out=out)
    before = (tmp_path / out).read_bytes()
    code, _, err = run(args, capsys)
    assert code == 2 and f"is the {name} file" in err
    assert (tmp_path / out).read_bytes() == before and not list(tmp_path.glob("*.prev*"))
    assert fake_server.requests == []
