"""referee.evaluate / evaluate_async: inputs, evaluators, the result object, gates, files, event loops."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

import referee
from referee import CheckResult, Judge, UserError
from referee.cli import cli
from referee.errors import InputError, MissingExtraError

CASES = [
    {"id": "a", "input": "2+2?", "output": "4", "reference": "4", "category": "math"},
    {"id": "b", "input": "capital of France?", "output": "Paris", "reference": "Paris", "category": "geo"},
    {"id": "c", "input": "3+3?", "output": "seven", "reference": "6", "category": "math"},
]


def verdict(score: float) -> str:
    return json.dumps({"correctness": {"score": score, "rationale": "r"}, "overall_score": score})


def test_checks_and_functions_give_rows_summary_and_gates() -> None:
    r = referee.evaluate(CASES, ["equals", lambda output: output[0].isupper() or output.isdigit()], progress=False)
    assert [row.id for row in r.rows] == ["a", "b", "c"]
    assert [row.passed for row in r.rows] == [True, True, False]
    assert [c.id for c in r.rows[2].criteria] == ["equals", "lambda"]
    assert r.rows[2].criteria[0].rationale == "expected '6', got 'seven'"
    # The summary is referee score's: 2 of 3 cases pass, per category too.
    assert r.summary.overall.cases == 3
    assert r.summary.overall.pass_rate.estimate == pytest.approx(2 / 3)
    by_cat = {g.name: g.pass_rate.estimate for g in r.summary.categories}
    assert by_cat == {"geo": 1.0, "math": 0.5}
    # No gate given: none applies (as `referee run`); something was graded, so it passes.
    assert r.passed and r.gates == []
    # Every case must pass, asked for explicitly.
    strict = referee.evaluate(CASES, ["equals", lambda output: output[0].isupper() or output.isdigit()],
                              gates={"fail_under": 1.0}, progress=False)
    assert not strict.passed
    assert [(g.flag, g.failed) for g in strict.gates] == [("--fail-under", True)]
    assert referee.evaluate(CASES, ["equals"], gates={"fail_under": 0.6}, progress=False).passed


def test_function_signatures_and_return_types() -> None:
    seen: list[tuple[Any, Any]] = []

    def output_case(output: str, case: referee.Case) -> float:
        seen.append((output, case.id))
        return 0.25

    def case_output(case: referee.Case, output: str) -> CheckResult:
        return CheckResult(score=1.0, passed=True, reason=f"{case.id}:{output}")

    async def async_check(output: str) -> bool:
        await asyncio.sleep(0)
        return output == "4"

    r = referee.evaluate(CASES[:1], [output_case, case_output, async_check], threshold=0.5, progress=False)
    crit = {c.id: c for c in r.rows[0].criteria}
    assert seen == [("4", "a")]
    assert crit["output_case"].score == 0.25 and crit["output_case"].passed is False
    assert crit["case_output"].rationale == "a:4"
    assert crit["async_check"].score == 1.0
    assert r.rows[0].score == pytest.approx((0.25 + 1 + 1) / 3)


def test_a_function_that_raises_or_returns_junk_is_an_error_row_not_a_stopped_run() -> None:
    def boom(output: str) -> bool:
        if output == "Paris":
            raise RuntimeError("kaput")
        return True

    r = referee.evaluate(CASES, [boom, lambda output: 3.5], progress=False)
    assert [row.status for row in r.rows] == ["error", "error", "error"]
    assert "kaput" in (r.rows[1].error or "")
    assert "3.5" in (r.rows[0].error or "")
    assert r.summary.overall.errors == 3 and r.summary.overall.cases == 0
    assert not r.passed  # no scored case: the pass rate is undefined, the gate fails


def test_strings_and_missing_ids() -> None:
    r = referee.evaluate(["OK fine", "nope"], [{"regex": {"pattern": "^OK"}}], progress=False)
    assert [(row.id, row.passed) for row in r.rows] == [("1", True), ("2", False)]


def test_bad_inputs_are_user_errors_naming_what_is_wrong() -> None:
    with pytest.raises(InputError, match="<cases>:2: field 'id'"):
        referee.evaluate([{"id": "x", "output": "1"}, {"id": ["bad"], "output": "2"}], ["is_json"])
    with pytest.raises(InputError, match="duplicate case id 'x'"):
        referee.evaluate([{"id": "x", "output": "1"}, {"id": "x", "output": "2"}], ["is_json"])
    with pytest.raises(UserError, match="unknown evaluator 'nope'"):
        referee.evaluate(CASES, ["nope"])
    with pytest.raises(UserError, match="expected a name"):
        referee.evaluate(CASES, [42])
    with pytest.raises(UserError, match="unknown provider 'nosuch'"):
        Judge("nosuch:model")


def test_judge_strings_parse() -> None:
    j = Judge("openai:gpt-4o-mini")
    assert (j.provider, j.model) == ("openai", "gpt-4o-mini")
    assert Judge("ollama", model="llama3.1").model == "llama3.1"
    with pytest.raises(UserError, match="two different models"):
        Judge("openai:a", model="b")
    with pytest.raises(UserError, match="needs a model"):
        Judge("vllm").client()


def test_llm_judge_through_the_fake_provider_has_typed_usage_cost_and_judge_info() -> None:
    replies = {"4": verdict(0.9), "Paris": verdict(1.0), "seven": verdict(0.1)}
    judge = Judge.fake(lambda req: next(v for k, v in replies.items() if f"<answer>\n{k}\n" in req.messages[1].content),
                       input_price_per_mtok=1.0, output_price_per_mtok=2.0)
    r = referee.evaluate(CASES, ["equals", referee.judges.LLMJudge()], judge=judge, progress=False)
    scores = {c.id: c.score for c in r.rows[1].criteria}
    assert scores == {"equals": 1.0, "llm_judge": 1.0}
    assert r.rows[2].criteria[1].score == pytest.approx(0.1)
    row = r.rows[0]
    assert row.judge is not None and row.judge.provider == "fake" and row.judge.template_hash
    assert row.usage is not None and row.usage.input_tokens == 10 and row.usage.output_tokens == 5
    assert row.cost_usd == pytest.approx(10 / 1e6 * 1.0 + 5 / 1e6 * 2.0)
    assert "_usage" not in json.dumps(row.to_json_dict())
    t = r.manifest.totals
    assert (t.provider_calls, t.scored) == (3, 3)
    assert r.manifest.judge is not None and r.manifest.judge.provider == "fake"


def test_an_unscorable_judge_reply_is_unscored_never_a_score() -> None:
    r = referee.evaluate(CASES[:1], [referee.judges.LLMJudge()], judge=Judge.fake(["not json", "still not"]),
                         progress=False)
    assert r.rows[0].status == "unscored" and r.rows[0].score is None
    assert r.summary.overall.unscored == 1


def test_judge_over_the_openai_wire_format(fake_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    fake_server.script(verdict(0.8))
    r = referee.evaluate(CASES[:1], [{"llm_judge": {"rubric": "- correct"}}],
                         judge=Judge("openai:gpt-test", base_url=fake_server.url + "/v1"), progress=False)
    assert r.rows[0].score == pytest.approx(0.8)
    assert r.rows[0].judge is not None and r.rows[0].judge.model == "gpt-test"


def test_evaluate_inside_a_running_event_loop() -> None:
    async def handler() -> referee.EvalResult:
        asyncio.get_running_loop()  # as in Jupyter or an async web handler
        return referee.evaluate(CASES, ["equals"], judge=None, progress=False)

    r = asyncio.run(handler())
    assert [row.passed for row in r.rows] == [True, True, False]


async def test_evaluate_async_stays_on_the_callers_loop() -> None:
    loop = asyncio.get_running_loop()
    loops: list[asyncio.AbstractEventLoop] = []

    async def check(output: str) -> bool:
        loops.append(asyncio.get_running_loop())
        return True

    r = await referee.evaluate_async(CASES, [check], judge=Judge.fake(), progress=False)
    assert all(row.passed for row in r.rows)
    assert loops == [loop, loop, loop]


def test_save_writes_the_files_referee_score_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r = referee.evaluate(CASES, ["equals"], progress=False)
    out = r.save(tmp_path / "res.jsonl")
    assert (tmp_path / "res.manifest.json").is_file()
    manifest = json.loads((tmp_path / "res.manifest.json").read_text())
    assert manifest["kind"] == "suite" and manifest["totals"]["scored"] == 3
    assert cli(["score", str(out), "--json-out", str(tmp_path / "s.json")]) == 0
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["overall"]["pass_rate"]["estimate"] == pytest.approx(r.summary.overall.pass_rate.estimate)
    # Saving again over paid-for results moves them aside; the cases file itself is refused.
    r.save(out)
    assert (tmp_path / "res.prev.jsonl").is_file()
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(c) + "\n" for c in CASES))
    r2 = referee.evaluate(cases, ["equals"], progress=False)
    with pytest.raises(UserError, match="cases file"):
        r2.save(cases)


def test_summarize_rows_in_memory_equals_summarize_the_file(tmp_path: Path) -> None:
    r = referee.evaluate(CASES, ["equals"], progress=False)
    path = r.save(tmp_path / "r.jsonl")
    a = referee.summarize(r.rows)
    b = referee.summarize(path)
    assert a.overall == b.overall
    assert a.categories == b.categories
    assert [c.id for c in a.lowest] == [c.id for c in b.lowest]
    assert a.lowest[0].rationale == b.lowest[0].rationale


def test_out_resumes_without_running_finished_cases_again(tmp_path: Path) -> None:
    calls: list[str] = []

    def counting(output: str, case: referee.Case) -> bool:
        calls.append(case.id)
        return True

    out = tmp_path / "run.jsonl"
    referee.evaluate(CASES, [counting], out=out, progress=False)
    assert len(calls) == 3
    lines = out.read_text().splitlines()
    out.write_text("\n".join(lines[:2]) + "\n")  # a run that crashed after two cases
    r = referee.evaluate(CASES, [counting], out=out, progress=False)
    assert len(calls) == 4 and len(r.rows) == 3
    assert len(out.read_text().splitlines()) == 3


def test_cases_from_csv_with_nested_json(tmp_path: Path) -> None:
    p = tmp_path / "cases.csv"
    p.write_text('id,output,category,metadata\n'
                 'x,"{""a"": 1}",fmt,"{""owner"": ""me""}"\n'
                 'y,not json,fmt,\n', encoding="utf-8")
    r = referee.evaluate(p, ["is_json"], progress=False)
    assert [(row.id, row.passed) for row in r.rows] == [("x", True), ("y", False)]
    assert r.rows[0].metadata == {"owner": "me"}
    bad = tmp_path / "bad.csv"
    bad.write_text('id,output,turns\nx,hi,[not json\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"bad.csv:2: field 'turns': expected JSON"):
        referee.load_cases(bad)


def test_the_cli_reads_csv_cases_too(tmp_path: Path) -> None:
    (tmp_path / "cases.csv").write_text("id,output\na,OK\nb,no\n", encoding="utf-8")
    (tmp_path / "suite.yaml").write_text("cases: cases.csv\nevaluators:\n  - regex: '^OK'\n", encoding="utf-8")
    assert cli(["run", str(tmp_path / "suite.yaml"), "--out", str(tmp_path / "r.jsonl")]) == 0  # no gates
    rows = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert {r["id"]: r["passed"] for r in rows} == {"a": True, "b": False}


def test_parquet_and_dataframes_in_and_out(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    pl = pytest.importorskip("polars")
    df = pd.DataFrame({"id": ["a", "b"], "output": ["4", "x"], "reference": ["4", "5"],
                       "turns": [None, '[{"role": "user", "content": "hi"}]'], "n": [1, float("nan")]})
    r = referee.evaluate(df, ["equals"], gates={"fail_under": 0.5}, progress=False)
    assert [row.passed for row in r.rows] == [True, False] and r.passed
    out = r.to_pandas()
    assert list(out["id"]) == ["a", "b"] and list(out["evaluator"]) == ["equals", "equals"]
    assert list(out["passed"]) == [True, False]
    r2 = referee.evaluate(pl.from_pandas(df[["id", "output", "reference"]]), ["equals"], progress=False)
    assert r2.to_polars()["score"].to_list() == [1.0, 0.0]
    path = tmp_path / "cases.parquet"
    df[["id", "output", "reference"]].to_parquet(path)
    assert [c.id for c in referee.load_cases(path)] == ["a", "b"]
    assert cli(["run", "--help"]) == 0


def test_missing_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    r = referee.evaluate(CASES[:1], ["equals"], progress=False)
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(MissingExtraError, match=r"referee\[pandas\]"):
        r.to_pandas()


def test_suite_from_dict_is_built_in_memory_with_evaluator_instances(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from referee.suites._loader import suite_from_dict

    monkeypatch.setattr("tempfile.TemporaryDirectory", None)  # nothing is written to a temp dir any more
    s = suite_from_dict({"cases": CASES, "evaluators": [referee.as_evaluator(lambda output: True, "always"),
                                                        "equals"]}, base_dir=tmp_path)
    assert [spec.label for spec in s.specs] == ["always", "equals"]
    assert len(s.cases) == 3


def test_progress_shows_in_a_notebook(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import types

    from referee.runner import _progress as progress_mod

    class ZMQInteractiveShell:  # what IPython's get_ipython() returns inside a Jupyter kernel
        pass

    fake_ipython = types.SimpleNamespace(get_ipython=lambda: ZMQInteractiveShell())
    assert not progress_mod.in_notebook() or "IPython" in sys.modules
    monkeypatch.setitem(sys.modules, "IPython", fake_ipython)
    shown: list[str] = []  # the bar goes to the cell through IPython's display, updated in place

    class Handle:
        def update(self, obj: Any) -> None:
            shown.append(obj.data)

    def display(obj: Any, display_id: bool) -> Handle:
        assert display_id and not shown
        shown.append(obj.data)
        return Handle()

    monkeypatch.setitem(sys.modules, "IPython.display", types.SimpleNamespace(
        HTML=lambda data: types.SimpleNamespace(data=data), display=display))
    assert progress_mod.in_notebook()
    bar = progress_mod.Progress(total=3, label="evaluating", delay_s=0.0)
    assert bar.enabled and bar.notebook
    for _ in range(3):
        bar.advance()
    bar.close()
    assert capsys.readouterr().err == ""
    assert shown and '<progress value="3" max="3"' in shown[-1] and "evaluating" in shown[-1]
    hidden = progress_mod.Progress(total=3, label="evaluating", enabled=False, delay_s=0.0)
    assert not hidden.enabled


def test_the_cli_and_the_api_compute_the_same_rows_and_gates(tmp_path: Path, fake_server: Any,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from referee.testing import rows_without_timings

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    fake_server.script(*[verdict(s) for s in (0.9, 0.2, 0.8)] * 2)
    cases = tmp_path / "cases.csv"
    cases.write_text("id,input,output,reference,category\n"
                     "a,2+2?,4,4,math\nb,capital?,Lyon,Paris,geo\nc,3+3?,6,6,math\n", encoding="utf-8")
    evaluators = ["equals", {"llm_judge": {"rubric": "- correct"}, "weight": 2}]
    (tmp_path / "suite.yaml").write_text(
        "cases: cases.csv\nevaluators:\n  - equals\n  - llm_judge: {rubric: '- correct'}\n    weight: 2\n"
        "gates:\n  fail_under: 0.6\n", encoding="utf-8")
    cli_out = tmp_path / "cli.jsonl"
    code = cli(["run", str(tmp_path / "suite.yaml"), "--out", str(cli_out), "--provider", "openai",
                "--model", "m", "--base-url", fake_server.url + "/v1", "--concurrency", "1", "--no-cache"])
    r = referee.evaluate(cases, evaluators, judge=Judge("openai:m", base_url=fake_server.url + "/v1", cache=False,
                                                        concurrency=1),
                         gates={"fail_under": 0.6}, progress=False)
    api_out = r.save(tmp_path / "api.jsonl")
    assert rows_without_timings(cli_out) == rows_without_timings(api_out)
    assert code == (0 if r.passed else 1) and r.passed  # 2 of 3 pass: the same gate, the same verdict


def test_a_stream_of_cases_is_taken_as_the_judge_answers() -> None:
    from referee.cases._case import CaseStream

    taken: list[str] = []
    taken_at_first_call: list[int] = []

    def source() -> Any:
        for i in range(12):
            taken.append(str(i))
            yield {"id": f"t{i}", "input": f"question {i}", "output": "WRONG" if i % 4 == 0 else f"answer {i}"}

    def reply(req: Any) -> str:
        taken_at_first_call.append(len(taken))
        return verdict(0.1 if "WRONG" in req.messages[1].content else 0.9)

    handed: list[tuple[str, int]] = []  # (row id, cases taken when it was handed over)
    r = referee.evaluate(CaseStream(source(), name="<live>",
                                    on_rows=lambda rows: handed.extend((row.id, len(taken)) for row in rows)),
                         [referee.judges.LLMJudge()], judge=Judge.fake(reply, concurrency=2), progress=False)
    assert taken_at_first_call[0] < 12  # the first call went out before the stream was spent
    # every row handed to on_rows once, the first while the stream was still being taken
    assert sorted(i for i, _ in handed) == sorted(f"t{i}" for i in range(12)) and handed[0][1] < 12
    assert [row.id for row in r.rows] == [f"t{i}" for i in range(12)]  # in the stream's order
    assert [row.score for row in r.rows] == [pytest.approx(0.1 if i % 4 == 0 else 0.9) for i in range(12)]
    assert [c.id for c in r.cases] == [f"t{i}" for i in range(12)]
    es = r.manifest.eval_set
    assert es is not None and es.n_cases == 12 and es.case_ids == [f"t{i}" for i in range(12)]
    same = CaseStream(iter([c.data for c in r.cases]))
    assert list(same) and es.path == "<live>" and es.sha256 == same.sha256  # the cases' identity, once spent
    assert r.manifest.totals.scored == 12
    for kw in ({"out": "x.jsonl"}, {"store": "sqlite:///x.sqlite"}, {"target": lambda x: x}, {"engine": "ray"}):
        with pytest.raises(UserError, match="a stream of cases runs in this process and in memory"):
            referee.evaluate(CaseStream(iter([{"id": "a", "output": "o"}])), ["equals"], progress=False, **kw)


def test_summarize_compares_two_results_as_score_compares_their_files(tmp_path: Path) -> None:
    # `referee.summarize(result, baseline=earlier)` was a TypeError ('EvalResult' object is not iterable).
    evals = [{"contains": {"value": "yes"}}]
    before = referee.evaluate([{"id": f"c{i}", "output": "yes"} for i in range(30)], evals, store=False)
    after = referee.evaluate([{"id": f"c{i}", "output": "yes" if i > 5 else "no"} for i in range(30)], evals,
                             store=False, out=tmp_path / "after.jsonl")
    s = referee.summarize(after, baseline=before)
    assert s.comparison is not None and s.comparison.regression_count == 6 and s.comparison.verdict == "REGRESSED"
    assert before.run_id is not None
    assert s.path == str(tmp_path / "after.jsonl") and s.comparison.baseline == f"run {before.run_id[:12]}"
    from_file = referee.summarize(tmp_path / "after.jsonl", baseline=before)
    assert from_file.comparison is not None and from_file.overall.pass_rate == s.overall.pass_rate
    assert from_file.comparison.regression_count == 6
