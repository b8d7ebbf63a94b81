"""Suite files: loading, validation with lines, the schema, running, filters, dry runs, plugins, the judge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from referee.cli import cli
from referee.results._io import read_results
from referee.results._manifest import RunManifest
from referee.suites import check_suite, load_suite
from referee.testing import FakeLLMServer

CASES = [
    {"id": "a1", "category": "billing", "output": "Refunds take 5 business days.", "reference": "5 business days"},
    {"id": "a2", "category": "billing", "output": "Refunds are processed immediately!", "reference": "5 business days"},
    {"id": "b1", "category": "account", "output": '{"ok": true}', "reference": "x"},
]


def write(tmp: Path, text: str, cases: list[dict[str, Any]] | None = None) -> Path:
    if cases is not None:
        (tmp / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    p = tmp / "suite.yaml"
    p.write_text(text, encoding="utf-8")
    return p


BASIC = """\
name: basic
cases: cases.jsonl
evaluators:
  - contains: {value: [days, "true"]}
  - id: promise
    not_contains: [immediately]
    critical: true
  - length: {max: 200}
    weight: 2
gates:
  fail_under: 0.5
"""


def test_validate_reports_every_problem_with_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = write(tmp_path, """\
name: broken
cases: cases.jsonl
evaluators:
  - contains: {value: x}
  - regex:
      pattern: "a(b"
  - no_such_check
  - length: {min: "five"}
  - json_schema: {schema: {type: nonsense}}
  - contains: {value: x, colour: red}
scoring: {mode: sometimes}
gates: {fail_on_regression: true}
""", CASES)
    code = cli(["validate", str(p)])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{p}:6 evaluators[1].regex.pattern: invalid regex" in err
    assert f"{p}:7 evaluators[2]: unknown evaluator 'no_such_check'" in err
    assert f"{p}:8 evaluators[3].length.min:" in err
    assert f"{p}:9 evaluators[4].json_schema.schema: invalid JSON Schema" in err
    assert f"{p}:10 evaluators[5].contains.colour: unknown option" in err
    assert f"{p}:11 scoring.mode:" in err
    assert f"{p}:12 gates.fail_on_regression: needs gates.baseline" in err
    assert "7 problem(s)" in err


def test_validate_ok_and_bad_cases(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = write(tmp_path, BASIC, CASES)
    assert cli(["validate", str(p)]) == 0
    assert "ok:" in capsys.readouterr().out
    bad = write(tmp_path, "cases:\n  - {id: x, output: y}\n  - {output: z}\nevaluators: [is_json]\n")
    assert cli(["validate", str(bad)]) == 2
    assert f"{bad}:3 cases[1].id:" in capsys.readouterr().err
    assert cli(["validate", str(tmp_path / "missing.yaml")]) == 2


def test_run_writes_rows_manifest_and_applies_gates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = write(tmp_path, BASIC, CASES)
    out = tmp_path / "res.jsonl"
    assert cli(["run", str(p), "--out", str(out)]) == 0
    rows = {r.id: r for r in read_results(out, strict=True).rows}
    assert set(rows) == {"a1", "a2", "b1"}
    a1, a2 = rows["a1"], rows["a2"]
    assert a1.status == "scored" and a1.score == 1.0 and a1.passed
    assert [c.id for c in a1.criteria] == ["contains", "promise", "length"]
    assert a2.score == 0.0 and a2.passed is False and "critical_failed" in a2.flags
    assert "immediately" in (a2.rationale or "")
    assert a1.criteria[2].weight == 2 and a2.criteria[1].critical
    m = RunManifest.read(out)
    assert m is not None and m.kind == "suite" and m.totals.scored == 3 and m.status == "complete"
    # Pass rate 2/3 >= 0.5 passes; a stricter gate fails with exit 1.
    strict = write(tmp_path, BASIC.replace("fail_under: 0.5", "fail_under: 0.9"))
    assert cli(["run", str(strict), "--out", str(tmp_path / "res2.jsonl")]) == 1
    assert "FAIL --fail-under" in capsys.readouterr().out


def test_weighted_mean_all_pass_and_min(tmp_path: Path) -> None:
    base = """\
cases: cases.jsonl
evaluators:
  - contains: {value: refund}
    weight: 3
  - contains: {value: never-there}
scoring: {mode: MODE}
"""
    cases = [{"id": "x", "output": "refund"}]
    for mode, expected in (("weighted_mean", 0.75), ("all_pass", 0.0), ("min", 0.0)):
        p = write(tmp_path, base.replace("MODE", mode), cases)
        out = tmp_path / f"{mode}.jsonl"
        assert cli(["run", str(p), "--out", str(out), "--no-gates"]) == 0
        row = read_results(out).rows[0]
        assert row.score == pytest.approx(expected), mode


def test_filter_cases_and_evaluators(tmp_path: Path) -> None:
    p = write(tmp_path, BASIC, CASES)
    out = tmp_path / "f.jsonl"
    assert cli(["run", str(p), "--out", str(out), "--filter", "category:billing",
                "--filter", "evaluator:promise", "--no-gates"]) == 0
    rows = read_results(out).rows
    assert sorted(r.id for r in rows) == ["a1", "a2"]
    assert all(r.evaluator == "promise" for r in rows)  # one evaluator left: its own row
    assert cli(["run", str(p), "--out", str(out), "--filter", "id:zzz*"]) == 2


def test_a_check_that_raises_is_an_error_row_and_the_run_goes_on(tmp_path: Path) -> None:
    plugin = tmp_path / "my_checks.py"
    plugin.write_text(
        "def explodes(case, output):\n    if case.id == 'a2':\n        raise RuntimeError('kaboom')\n    return True\n"
        "def polite(case, output, word='please'):\n    return word in output.lower()\n", encoding="utf-8")
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        p = write(tmp_path, """\
cases: cases.jsonl
evaluators:
  - "my_checks:explodes"
  - "my_checks:polite": {word: refunds}
""", CASES)
        out = tmp_path / "p.jsonl"
        assert cli(["run", str(p), "--out", str(out), "--no-gates"]) == 0
        rows = {r.id: r for r in read_results(out).rows}
        assert rows["a2"].status == "error" and "kaboom" in (rows["a2"].error or "")
        assert rows["a1"].status == "scored" and rows["a1"].score == 1.0
        assert rows["b1"].criteria[1].passed is False
        bad = write(tmp_path, 'cases: cases.jsonl\nevaluators:\n  - "my_checks:polite": {colour: 1}\n'
                              '  - "my_checks:absent"\n')
        suite, problems = check_suite(bad)
        assert suite is None and len(problems) == 2
        assert "colour" in problems[0].path and "no attribute 'absent'" in problems[1].message
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("my_checks", None)


def test_a_plugin_module_that_raises_while_importing_is_a_one_line_error(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "broken_checks.py").write_text('raise RuntimeError("boom at import")\n', encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(__import__("sys").modules, "broken_checks", raising=False)
    p = write(tmp_path, 'cases: cases.jsonl\nevaluators:\n  - "broken_checks:fn"\n', CASES)
    assert cli(["run", str(p), "--out", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "broken_checks" in err and "RuntimeError: boom at import" in err and "Traceback" not in err


def test_entry_point_plugins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from referee.evaluators import _plugins as plugins

    class _EP:
        name = "shouts"
        value = "x:y"

        def load(self):  # type: ignore[no-untyped-def]
            return lambda case, output: str(output).isupper()

    monkeypatch.setattr(plugins, "_EP_CACHE", {"shouts": _EP()})
    p = write(tmp_path, "cases:\n  - {id: a, output: HEY}\n  - {id: b, output: hey}\nevaluators: [shouts]\n")
    suite = load_suite(p)
    assert [s.name for s in suite.specs] == ["shouts"]
    out = tmp_path / "ep.jsonl"
    assert cli(["run", str(p), "--out", str(out), "--no-gates"]) == 0
    assert {r.id: r.passed for r in read_results(out).rows} == {"a": True, "b": False}


def test_schema_file_is_up_to_date() -> None:
    from referee.suites.schema import SCHEMA_PATH, render

    assert SCHEMA_PATH.read_text(encoding="utf-8") == render(), \
        "suite.schema.json is stale: run python -m referee.suites.schema"


def test_schema_validates_suite_files(tmp_path: Path) -> None:
    import jsonschema
    import yaml

    from referee.suites.schema import suite_json_schema

    schema = suite_json_schema()
    good = yaml.safe_load(BASIC)
    jsonschema.validate(good, schema)
    example = Path(__file__).parents[2] / "src/referee/example/data/suite.yaml"
    jsonschema.validate(yaml.safe_load(example.read_text(encoding="utf-8")), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**good, "evaluators": [{"regex": {"pattern": 3}}]}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**good, "scoring": {"mode": "sometimes"}}, schema)
    jsonschema.validate({**good, "evaluators": [{"tool_used": {"tool": "x"}}, "pkg.mod:check"]}, schema)


JUDGED = """\
cases: cases.jsonl
judge:
  rubric: "- accuracy: the answer states the policy"
  input_price_per_mtok: 1.0
  output_price_per_mtok: 2.0
evaluators:
  - contains: {value: days}
  - llm_judge: {threshold: 0.5}
"""


def test_dry_run_counts_judge_calls_and_calls_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      fake_server: FakeLLMServer) -> None:
    p = write(tmp_path, JUDGED, CASES)
    out = tmp_path / "dry.jsonl"
    code = cli(["run", str(p), "--dry-run", "--out", str(out), "--provider", "openai",
                "--base-url", fake_server.url + "/v1", "--model", "m"])
    text = capsys.readouterr().out
    assert code == 0 and "3 judge call(s)" in text and "estimated cost at most $" in text
    assert not out.exists() and not fake_server.requests


def test_llm_judge_through_the_pipeline(tmp_path: Path, fake_server, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")

    def respond(req):  # type: ignore[no-untyped-def]
        text = req.prompt_text
        if "immediately" in text:
            return "not json at all"  # and again on the re-ask: the case stays unscored
        if "5 business days" in text:
            return '{"accuracy": {"score": 0.9, "rationale": "ok"}, "overall_score": 0.9}'
        return '{"accuracy": {"score": 0.2, "rationale": "wrong"}, "overall_score": 0.2}'

    fake_server.responder = respond
    p = write(tmp_path, JUDGED, CASES[:3])
    out = tmp_path / "judged.jsonl"
    code = cli(["run", str(p), "--out", str(out), "--provider", "openai", "--base-url", fake_server.url + "/v1",
                "--model", "m", "--concurrency", "1", "--no-gates"])
    assert code == 0
    rows = read_results(out).rows
    statuses = sorted(r.status for r in rows)
    assert statuses == ["scored", "scored", "unscored"]  # an unusable reply stays unscored, never a 0
    unscored = next(r for r in rows if r.status == "unscored")
    assert unscored.id == "a2"
    assert unscored.score is None and unscored.criteria[1].status == "unscored"
    scored = [r for r in rows if r.status == "scored"]
    assert scored and all(r.judge is not None and r.judge.model == "m" for r in scored)
    assert all(r.usage is not None and r.usage.calls >= 1 for r in scored)
    by_id = {r.id: r for r in rows}
    assert by_id["a1"].criteria[1].score == 0.9 and by_id["a1"].criteria[1].passed
    assert by_id["b1"].criteria[1].passed is False  # 0.2 < the evaluator's threshold 0.5
    assert "<answer>" in fake_server.requests[0].last_user_text  # the built-in template delimits case text


def test_code_checks_in_a_suite_run_and_hostile_outputs_do_not_stop_it(tmp_path: Path) -> None:
    cases = [
        {"id": "good", "output": "```python\ndef sq(x):\n    return x * x\n```"},
        {"id": "wrong", "output": "def sq(x):\n    return x + x"},
        {"id": "bomb", "output": "import os\nwhile True:\n    os.fork()"},
        {"id": "net", "output": "import urllib.request\nurllib.request.urlopen('http://example.com')"},
        {"id": "hang", "output": "while True:\n    pass"},
    ]
    p = write(tmp_path, """\
cases: cases.jsonl
evaluators:
  - python:
      tests: "def test_sq():\\n    assert sq(3) == 9\\n"
      cpu_s: 1
      timeout_s: 120  # far above cpu_s: on a loaded machine the CPU limit is still what stops "hang"
      memory_mb: 256
""", cases)
    out = tmp_path / "code.jsonl"
    assert cli(["run", str(p), "--out", str(out), "--no-gates"]) == 0
    rows = {r.id: r for r in read_results(out).rows}
    assert set(rows) == {c["id"] for c in cases}
    assert rows["good"].passed and rows["good"].score == 1.0
    for cid, why in (("wrong", "assert sq(3) == 9"), ("bomb", "os.fork"), ("net", "network"), ("hang", "CPU time")):
        r = rows[cid]
        assert r.status == "scored" and r.passed is False, cid
        assert why in (r.rationale or ""), (cid, r.rationale)  # one evaluator: the check's own row


def test_suite_judge_defaults_and_flag_precedence(tmp_path: Path, fake_server, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    p = write(tmp_path, f"""\
cases: cases.jsonl
judge:
  provider: openai
  base_url: {fake_server.url}/v1
  model: suite-model
  rubric: "- accuracy: states the refund window"
evaluators:
  - llm_judge
""", CASES[:1])
    out = tmp_path / "j.jsonl"
    assert cli(["run", str(p), "--out", str(out), "--no-gates", "--no-cache"]) == 0
    row = read_results(out).rows[0]
    assert row.status == "scored" and row.judge is not None and row.judge.model == "suite-model"
    assert "states the refund window" in fake_server.requests[-1].last_user_text
    out2 = tmp_path / "j2.jsonl"
    assert cli(["run", str(p), "--out", str(out2), "--no-gates", "--no-cache", "--model", "flag-model"]) == 0
    assert read_results(out2).rows[0].judge.model == "flag-model"  # type: ignore[union-attr]
    m = RunManifest.read(out2)
    assert m is not None and m.judge is not None and m.judge.model == "flag-model"


def test_missing_key_names_no_judge(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = write(tmp_path, "cases: cases.jsonl\nevaluators: [llm_judge, is_json]\n", CASES)
    assert cli(["run", str(p), "--out", str(tmp_path / "k.jsonl")]) == 2
    assert "--no-judge" in capsys.readouterr().err
    assert cli(["run", str(p), "--out", str(tmp_path / "k.jsonl"), "--no-judge", "--no-gates"]) == 0


def test_rerun_resumes_and_changed_cases_are_evaluated_again(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    p = write(tmp_path, BASIC, CASES)
    out = tmp_path / "r.jsonl"
    assert cli(["run", str(p), "--out", str(out), "--no-gates"]) == 0
    assert cli(["run", str(p), "--out", str(out), "--no-gates"]) == 0
    assert "resuming: 3 rows" in capsys.readouterr().err
    assert len(read_results(out).rows) == 3
    changed = [dict(c, output="Refunds are immediate.") if c["id"] == "a1" else c for c in CASES]
    write(tmp_path, BASIC, changed)
    assert cli(["run", str(p), "--out", str(out), "--no-gates"]) == 0
    assert "different configuration" in capsys.readouterr().err
    rows = {r.id: r for r in read_results(out).rows}
    assert len(rows) == 3 and rows["a1"].score == 0.75  # re-evaluated: "days" is gone (was 1.0)


def test_print_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["validate", "--print-schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["title"] == "referee suite" and "evaluators" in schema["required"]


def test_resume_and_cache_with_a_judge(tmp_path: Path, fake_server, monkeypatch,  # type: ignore[no-untyped-def]
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Through `referee run`: a rerun keeps finished rows and retries the error row with the judge's answer
    from the cache; a fresh run of the same suite is served by the cache; --no-cache asks again."""
    from referee.testing import schema_responder

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    fake_server.responder = schema_responder
    (tmp_path / "flaky.py").write_text(  # beside the suite: importable without PYTHONPATH
        "def flaky(case, output):\n    if case.id == 'a2':\n        raise RuntimeError('boom on a2')\n"
        "    return True\n", encoding="utf-8")
    p = write(tmp_path, "cases: cases.jsonl\nevaluators:\n  - 'flaky:flaky'\n  - llm_judge: '- accuracy: right'\n",
              CASES)
    out = tmp_path / "j.jsonl"
    args = ["run", str(p), "--out", str(out), "--provider", "openai", "--base-url", fake_server.url + "/v1",
            "--model", "m", "--no-gates"]
    assert cli(args) == 0
    assert len(fake_server.requests) == 3
    rows = {r.id: r for r in read_results(out).rows}
    assert rows["a2"].status == "error" and "boom on a2" in (rows["a2"].error or "")
    assert rows["a1"].status == rows["b1"].status == "scored"  # the run went on past the raising check
    capsys.readouterr()
    assert cli(args) == 0  # resume: a1 and b1 kept, a2 (error) evaluated again, its judge call cached
    assert "resuming: 2 rows" in capsys.readouterr().err
    assert len(fake_server.requests) == 3
    out.unlink()
    assert cli(args) == 0
    assert len(fake_server.requests) == 3  # every judge answer from the cache
    assert "3 from cache" in capsys.readouterr().err
    out.unlink()
    assert cli([*args, "--no-cache"]) == 0
    assert len(fake_server.requests) == 6


def test_concurrency_flag_then_suite_then_judge_default(tmp_path: Path, fake_server,  # type: ignore[no-untyped-def]
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from referee.run import _suite as runner

    seen: list[int] = []
    real = runner.execute

    def spy(**kwargs):  # type: ignore[no-untyped-def]
        seen.append(kwargs["concurrency"])
        return real(**kwargs)

    monkeypatch.setattr(runner, "execute", spy)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    judged = f"cases: cases.jsonl\nconcurrency: 2\njudge: {{base_url: '{fake_server.url}/v1', provider: openai, " \
             "model: m}\nevaluators: [is_json, llm_judge]\n"
    p = write(tmp_path, judged, CASES)
    out = str(tmp_path / "c.jsonl")
    assert cli(["run", str(p), "--out", out, "--no-gates"]) == 0
    assert cli(["run", str(p), "--out", out + "2", "--no-gates", "--concurrency", "5"]) == 0
    write(tmp_path, "cases: cases.jsonl\nconcurrency: 3\nevaluators: [is_json]\n")
    assert cli(["run", str(p), "--out", out + "3", "--no-gates"]) == 0
    assert cli(["run", str(p), "--out", out + "4", "--no-gates", "--concurrency", "1"]) == 0
    assert seen == [2, 5, 3, 1]


def test_a_mistyped_trajectory_sub_check_option_is_a_load_error_at_its_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Sub-check options are type-checked like any evaluator's (they used to give an error row per case)."""
    p = write(tmp_path, """\
name: traj
cases: cases.jsonl
evaluators:
  - trajectory:
      options:
        no_repeated_calls:
          max_identical: two
""", CASES)
    code = cli(["validate", str(p)])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{p}:7 evaluators[0].trajectory.options.no_repeated_calls.max_identical: Input should be a valid " \
           "integer" in err


def test_dry_run_counts_every_call_gold_and_pairwise_make(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         fake_server: FakeLLMServer) -> None:
    from referee.run._suite import dry_run

    cases = [{"id": f"c{i}", "output": "a plan", "reference": "the gold plan", "output_a": "x", "output_b": "y"}
             for i in range(2)]
    p = write(tmp_path, "cases: cases.jsonl\nevaluators:\n  - gold: gold-example-prd\n"
                        "  - pairwise: {reconcile: average}\n    threshold: 0.5\n", cases)
    # 2 cases x (3 criteria + 2 orders) = 10 calls, not one per evaluator per case (4)
    est = dry_run(load_suite(p), max_tokens=100, input_price=None, output_price=None)
    assert est.calls == 10 and est.max_output_tokens == 10 * 100
    code = cli(["run", str(p), "--dry-run", "--provider", "openai", "--base-url", fake_server.url + "/v1",
                "--model", "m", "--max-tokens", "100"])
    text = capsys.readouterr().out
    assert code == 0 and "= 10 judge call(s)" in text and not fake_server.requests
    single = write(tmp_path, "cases: cases.jsonl\nevaluators:\n  - gold: {criteria: gold-example-prd, "
                             "single_call: true}\n", cases)
    assert dry_run(load_suite(single), max_tokens=100, input_price=None, output_price=None).calls == 2
