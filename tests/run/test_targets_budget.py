"""Targets side by side share ONE budget of judge calls (``--concurrency``): counted in flight at a local server,
never timed. A model target calling the judge's endpoint with the judge's key shares that budget too; one on
another endpoint keeps its own ``concurrency``. And a case's judging starts as soon as its generation returns."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from referee.cli import cli
from referee.results._io import read_results
from referee.testing import Reply
from tests.support.servers import CountingServer

N = 12


def _verdict_or_answer(req: Any) -> Reply:
    if req.schema is not None:  # a judge call
        return Reply(text=json.dumps({"quality": {"score": 0.9, "rationale": "ok"}, "overall_score": 0.9}))
    return Reply(text=f"answer to {req.last_user_text}")


def _cases(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i:02d}", "input": f"question {i}"}) + "\n"
                                                  for i in range(N)), encoding="utf-8")


def _judge_args(srv: CountingServer, out: Path, concurrency: int) -> list[str]:
    return ["--out", str(out), "--provider", "openai", "--base-url", srv.openai_base_url, "--model", "judge",
            "--concurrency", str(concurrency), "--no-cache", "--no-gates"]


def test_python_targets_side_by_side_never_exceed_the_judge_budget(tmp_path: Path, user_module: Any,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    mod = user_module("def a(text):\n    return 'a: ' + text\n\ndef b(text):\n    return 'b: ' + text\n")
    _cases(tmp_path)
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"""cases: cases.jsonl
targets:
  - {{id: a, python: "{mod}:a"}}
  - {{id: b, python: "{mod}:b"}}
evaluators:
  - llm_judge: {{rubric: "- quality: answers the question"}}
""", encoding="utf-8")
    # The targets answer at once, so both would have --concurrency judge calls in flight each (6) if each
    # had its own budget; the judge holds every call a moment so that they pile up.
    srv = CountingServer(responder=_verdict_or_answer, latency=0.1)
    with srv:
        assert cli(["run", str(suite), *_judge_args(srv, tmp_path / "out", 3)]) == 0
    assert len(srv.arrivals) == 2 * N
    assert srv.max_in_flight == 3  # the budget is used in full, and never beyond it
    for t in ("a", "b"):
        rows = read_results(tmp_path / "out" / f"{t}.jsonl").rows
        assert len(rows) == N and all(r.status == "scored" for r in rows)


def test_model_targets_on_the_judges_endpoint_share_its_budget_and_judging_follows_each_generation(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    _cases(tmp_path)
    srv = CountingServer(responder=_verdict_or_answer, latency=0.1)
    with srv:
        suite = tmp_path / "suite.yaml"
        suite.write_text(f"""cases: cases.jsonl
targets:
  - {{id: p1, provider: openai, model: small, base_url: "{srv.openai_base_url}", template: "Answer: {{input}}"}}
  - {{id: p2, provider: openai, model: small, base_url: "{srv.openai_base_url}", template: "Briefly: {{input}}"}}
evaluators:
  - llm_judge: {{rubric: "- quality: answers the question"}}
""", encoding="utf-8")
        assert cli(["run", str(suite), *_judge_args(srv, tmp_path / "out", 4)]) == 0
    kinds = ["judge" if r.schema is not None else "generation" for r in srv.requests]
    assert kinds.count("generation") == 2 * N and kinds.count("judge") == 2 * N
    # Two targets, each generating and judging: one endpoint, one account, so 4 calls in flight in all.
    assert srv.max_in_flight == 4
    # Pipelined per case: judging starts while generations are still being sent, not after all of them.
    last_generation = max(i for i, k in enumerate(kinds) if k == "generation")
    assert kinds.index("judge") < last_generation
    for t in ("p1", "p2"):
        assert all(r.status == "scored" for r in read_results(tmp_path / "out" / f"{t}.jsonl").rows)


def test_a_model_target_on_another_endpoint_keeps_its_own_concurrency(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    _cases(tmp_path)
    target_srv = CountingServer(responder=_verdict_or_answer, latency=0.1)
    judge_srv = CountingServer(responder=_verdict_or_answer, latency=0.1)
    with target_srv, judge_srv:
        suite = tmp_path / "suite.yaml"
        suite.write_text(f"""cases: cases.jsonl
targets:
  - {{id: m, provider: openai, model: small, base_url: "{target_srv.openai_base_url}", template: "{{input}}",
     concurrency: 5}}
evaluators:
  - llm_judge: {{rubric: "- quality: answers the question"}}
""", encoding="utf-8")
        assert cli(["run", str(suite), *_judge_args(judge_srv, tmp_path / "out", 2)]) == 0
    assert len(target_srv.arrivals) == N and len(judge_srv.arrivals) == N
    assert target_srv.max_in_flight == 5  # the target's own limit, not the judge's budget
    assert judge_srv.max_in_flight == 2


def test_progress_counts_each_target_and_skips_what_a_resume_keeps(tmp_path: Path, user_module: Any) -> None:
    from rich.console import Console

    from referee.run._targets import build_targets, run_suite_targets
    from referee.suites import load_suite
    from referee.targets._progress import TargetsProgress

    mod = user_module("def a(text):\n    return 'a: ' + text\n\ndef b(text):\n    return 'b: ' + text\n")
    _cases(tmp_path)
    suite_file = tmp_path / "suite.yaml"
    suite_file.write_text(f"""cases: cases.jsonl
targets:
  - {{id: a, python: "{mod}:a"}}
  - {{id: b, python: "{mod}:b"}}
evaluators:
  - contains: {{value: question}}
""", encoding="utf-8")
    made: list[TargetsProgress] = []
    screen = io.StringIO()

    def progress(ids: list[str]) -> TargetsProgress:
        # Shown as in a terminal from the first case (the real one waits a second and needs a TTY).
        made.append(TargetsProgress(ids, enabled=True, delay_s=0.0,
                                    console=Console(file=screen, force_terminal=True, width=120)))
        return made[-1]

    def run() -> TargetsProgress:
        suite = load_suite(str(suite_file))
        run_suite_targets(suite, build_targets(suite.targets, suite.base_dir), tmp_path / "out",
                          bind=lambda s: (s, None), concurrency=4, command=["test"], progress_factory=progress)
        return made[-1]

    p = run()
    assert p.todo == {"a": N, "b": N} and p.done == {"a": N, "b": N} and p.finished == {"a", "b"}
    assert p.line() == f"a {N}/{N}, b {N}/{N} ({2 * N}/{2 * N})"
    shown = screen.getvalue()
    for label in ("a: ", "b: ", "all targets: "):
        assert label in shown
    assert f"{N}/{N}" in shown and f"{2 * N}/{2 * N}" in shown

    # A crashed run of a: its first 7 rows are kept, so only 5 cases are left to run (b has nothing left).
    results = tmp_path / "out" / "a.jsonl"
    results.write_text("".join(results.read_text(encoding="utf-8").splitlines(keepends=True)[:7]), encoding="utf-8")
    p = run()
    assert p.todo == {"a": N - 7, "b": 0} and p.done == {"a": N - 7, "b": 0}
    assert len(read_results(results).rows) == N


def test_no_progress_display_when_stderr_is_not_a_terminal(tmp_path: Path, user_module: Any,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    from referee.targets._progress import TargetsProgress

    p = TargetsProgress(["a", "b"], delay_s=0.0)
    p.begin("a", 2)
    p.advance("a")
    p.close()
    assert not p.enabled and p.done == {"a": 1, "b": 0} and p.todo == {"a": 2, "b": None}
    assert capsys.readouterr().err == ""
    assert p.line() == "a 1/2, b 0/? (1/2)"


def test_a_finished_targets_rate_stops_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A target done early keeps the rate it ran at, not one falling while the others run on (a fake clock)."""
    from referee.targets import _progress

    now = [100.0]
    monkeypatch.setattr(_progress.time, "perf_counter", lambda: now[0])
    p = _progress.TargetsProgress(["a", "b"], enabled=False)
    p.begin("a", 10)
    p.begin("b", 10)
    for _ in range(10):
        p.advance("a")
    now[0] += 2.0
    p.finish("a")
    now[0] += 8.0
    p.advance("b")
    assert p._describe("a") == "a: 5.0/s done"  # 10 cases in 2 s
    assert p._describe("b") == "b: 0.1/s"  # 1 case in 10 s
    assert p._describe(_progress.ALL) == "all targets: 1.1/s"


def test_the_tables_imports_wait_until_every_case_is_generated(monkeypatch: pytest.MonkeyPatch) -> None:
    """The end of the run's imports happen at the run's idle moment: once every target has generated every case
    it has to run (not before: a blocked event loop would hold generations back)."""
    import asyncio

    from referee.run._targets import _Tail

    fired: list[dict[str, int]] = []

    async def scenario() -> None:
        tail = _Tail(["a", "b"])
        monkeypatch.setattr(tail, "_import", lambda: fired.append(dict(tail.generated)))
        tail.begin("a", 2)
        tail.generated_one("a")
        tail.generated_one("a")  # a is done, b has not started (its count is unknown)
        tail.begin("b", 1)
        await asyncio.sleep(0.05)
        assert fired == []
        tail.generated_one("b")
        tail.begin("b", 1)  # checked again: it fires once
        for _ in range(50):
            if fired:
                break
            await asyncio.sleep(0.02)

    asyncio.run(scenario())
    assert fired == [{"a": 2, "b": 1}]
