"""Gold-standard criteria: the seed's rules, per-criterion and single-call grading, the CLI, MLflow."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from referee.cli import cli
from referee.evaluators._gold import CriterionReply, gold_verdict
from referee.results import read_results
from referee.rubrics import parse_rubric
from referee.testing import FakeLLMServer, WireRequest

CRITERIA = """skill: generate-prd
judge_model: judge-from-file
gold_standard_file: gold-prd.md
generated_file_patterns: ["prd.md"]
criteria:
  - {id: scope, name: Scope Accuracy, weight: critical, prompt: Compare scope.}
  - {id: template, name: Template Compliance, prompt: Check sections.}
  - {id: coverage, name: Coverage, weight: important, prompt: Check requirements.}
pass_threshold: 2
"""
GEN = "# PRD\n## Goals\nIn scope: login\n<img src=x onerror=alert(1)>\n"
GOLD = "# PRD\n## Goals\nIn scope: login, logout\n"


def _r(passed: bool, score: int) -> CriterionReply:
    return CriterionReply(passed=passed, score=score, reasoning="", quotes=[])


def test_pass_rule_and_grades_as_written() -> None:
    rubric = parse_rubric(CRITERIA, "c.yaml")
    s = gold_verdict(rubric, {"scope": _r(True, 2), "template": _r(True, 2), "coverage": _r(False, 1)})
    assert (s.total, s.max, s.passed_count, s.passed, s.grade) == (5, 6, 2, True, "B")
    # A failed critical criterion fails the case whatever the count, and caps the grade at C.
    s = gold_verdict(rubric, {"scope": _r(False, 2), "template": _r(True, 2), "coverage": _r(True, 2)})
    assert s.passed is False and s.critical_failures == ["scope"] and s.grade == "C"
    # pass is the judge's own flag: a score of 2 with pass=false does not count as passed.
    s = gold_verdict(rubric, {"scope": _r(True, 2), "template": _r(False, 2), "coverage": _r(False, 2)})
    assert s.passed is False and s.pct == 1.0 and s.grade == "A"
    no_crit = parse_rubric(CRITERIA.replace("pass_threshold: 2", "fail_on_critical: false\npass_threshold: 2"),
                           "c.yaml")
    s = gold_verdict(no_crit, {"scope": _r(False, 0), "template": _r(True, 1), "coverage": _r(True, 1)})
    assert s.passed is True and s.grade == "D"


def _which(req: WireRequest) -> str | None:
    tail = req.prompt_text.rsplit("Grade the generated document", 1)[-1]
    for cid in ("scope", "template", "coverage"):
        if f"Criterion {cid}:" in tail and "each of these" not in tail:
            return cid
    return None


def _responder(verdicts: dict[str, dict[str, object] | str]) -> Callable[[WireRequest], str]:
    def respond(req: WireRequest) -> str:
        cid = _which(req)
        if cid is None:  # single call
            return json.dumps({"criteria": verdicts})
        v = verdicts[cid]
        return v if isinstance(v, str) else json.dumps(v)
    return respond


GOOD = {"pass": True, "score": 2, "reasoning": "matches", "quotes": ["In scope: login"]}


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    c = tmp_path / "criteria.yaml"
    c.write_text(CRITERIA)
    g = tmp_path / "gen.md"
    g.write_text(GEN)
    gold = tmp_path / "gold.md"
    gold.write_text(GOLD)
    return {"criteria": c, "gen": g, "gold": gold, "out": tmp_path / "eval"}


def _single(srv: FakeLLMServer, f: dict[str, Path], *extra: str) -> list[str]:
    return ["gold", "--criteria", str(f["criteria"]), "--generated", str(f["gen"]), "--gold", str(f["gold"]),
            "--output", str(f["out"]), "--provider", "openai", "--base-url", srv.openai_base_url, *extra]


def test_one_call_per_criterion_outputs_and_exit(fake_server: FakeLLMServer, files: dict[str, Path],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    fake_server.responder = _responder({"scope": {**GOOD, "pass": False, "score": 1, "reasoning": "misses logout"},
                                        "template": GOOD, "coverage": GOOD})
    assert cli(_single(fake_server, files)) == 1  # critical failure -> FAIL -> exit 1 (the original exits 0)
    out = capsys.readouterr().out
    assert len(fake_server.requests) == 3
    assert {r.model for r in fake_server.requests} == {"judge-from-file"}  # the file's judge_model by default
    assert "FAIL" in out and "* Scope Accuracy" in out and "misses logout" in out
    data = json.loads((files["out"] / "results.json").read_text())
    case = data["cases"][0]
    assert (case["verdict"], case["grade"], case["total_score"], case["max_score"]) == ("FAIL", "C", 5, 6)
    assert case["critical_failures"] == 1 and case["criteria_passed"] == 2
    scope = case["criteria"][0]
    assert scope["weight"] == "critical" and scope["pass"] is False and scope["score"] == 1
    assert scope["quotes"] == ["In scope: login"] and scope["grounded"] is True
    html = (files["out"] / "report.html").read_text()
    assert "misses logout" in html and "<img src=x" not in html and "&lt;img src=x onerror" in html
    # The judge sees the criterion, the generated document and the gold document, delimited.
    prompt = fake_server.requests[0].last_user_text
    assert "In scope: login, logout" in prompt and "<generated-" in prompt and "<gold-" in prompt


def test_single_call_and_pass(fake_server: FakeLLMServer, files: dict[str, Path]) -> None:
    fake_server.responder = _responder({"scope": GOOD, "template": GOOD, "coverage": GOOD})
    assert cli(_single(fake_server, files, "--single-call", "--model", "m2")) == 0
    assert len(fake_server.requests) == 1 and fake_server.requests[0].model == "m2"
    case = json.loads((files["out"] / "results.json").read_text())["cases"][0]
    assert case["verdict"] == "PASS" and case["grade"] == "A"


def test_unparseable_reply_is_unscored_not_zero(fake_server: FakeLLMServer, files: dict[str, Path],
                                                capsys: pytest.CaptureFixture[str]) -> None:
    fake_server.responder = _responder({"scope": GOOD, "template": "the document looks fine to me",
                                        "coverage": {**GOOD, "score": 3}})
    assert cli(_single(fake_server, files)) == 1
    assert len(fake_server.requests) == 5  # two invalid criteria re-asked once each
    case = json.loads((files["out"] / "results.json").read_text())["cases"][0]
    assert case["status"] == "unscored" and case["total_score"] is None and case["verdict"] == "UNSCORED"
    by_id = {c["id"]: c for c in case["criteria"]}
    assert by_id["template"]["score"] is None and by_id["template"]["status"] == "unscored"
    assert by_id["coverage"]["score"] is None and by_id["scope"]["score"] == 2
    assert "could not be graded" in capsys.readouterr().err


def test_threshold_warning_and_missing_gold(fake_server: FakeLLMServer, files: dict[str, Path],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    files["criteria"].write_text(CRITERIA.replace("pass_threshold: 2", ""))  # default 6 > 3 criteria
    fake_server.responder = _responder({"scope": GOOD, "template": GOOD, "coverage": GOOD})
    assert cli(_single(fake_server, files)) == 1  # can never pass
    err = capsys.readouterr().err
    assert "pass_threshold 6 is more than the 3 criteria" in err
    assert json.loads((files["out"] / "results.json").read_text())["warnings"]
    files["gold"].unlink()
    assert cli(_single(fake_server, files)) == 2
    assert "gold.md: gold file not found" in capsys.readouterr().err


def _dataset(tmp_path: Path) -> tuple[Path, Path]:
    ds, res = tmp_path / "cases", tmp_path / "output"
    for name in ("P-1", "P-2", "P-3"):
        (ds / name).mkdir(parents=True)
        (ds / name / "input.yaml").write_text("system_model: other\n")
    for name in ("P-1", "P-2"):
        (ds / name / "gold-prd.md").write_text(GOLD)
    (res / "P-1").mkdir(parents=True)
    (res / "P-1" / "prd.md").write_text(GEN)
    (res / "P-3").mkdir(parents=True)
    (res / "P-3" / "prd.md").write_text(GEN)
    return ds, res


def test_batch_skips_incomplete_cases_with_a_message(fake_server: FakeLLMServer, files: dict[str, Path],
                                                     tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds, res = _dataset(tmp_path)
    fake_server.responder = _responder({"scope": GOOD, "template": GOOD, "coverage": GOOD})
    assert cli(["gold", "--criteria", str(files["criteria"]), "--dataset", str(ds), "--results-dir", str(res),
                "--output", str(files["out"]), "--provider", "openai", "--base-url",
                fake_server.openai_base_url]) == 0
    err = capsys.readouterr().err
    assert "skipping P-2: no generated file" in err and "skipping P-3: gold file gold-prd.md not found" in err
    data = json.loads((files["out"] / "results.json").read_text())
    assert [c["case"] for c in data["cases"]] == ["P-1"] and data["summary"]["skipped"] == 2


def test_mlflow_runs_tags_metrics_and_artifact(fake_server: FakeLLMServer, files: dict[str, Path],
                                               tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mlflow = pytest.importorskip("mlflow", reason="mlflow (the optional extra 'mlflow') is not installed")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    ds, res = _dataset(tmp_path)
    (res / "P-2").mkdir()
    (res / "P-2" / "prd.md").write_text(GEN)
    fake_server.responder = _responder({"scope": GOOD, "template": {**GOOD, "pass": False, "score": 1},
                                        "coverage": GOOD})
    uri = "file:" + str(tmp_path / "mlruns")
    assert cli(["gold", "--criteria", str(files["criteria"]), "--dataset", str(ds), "--results-dir", str(res),
                "--output", str(files["out"]), "--mlflow", uri, "--provider", "openai", "--base-url",
                fake_server.openai_base_url]) == 0
    client = mlflow.tracking.MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("forge-skill-eval")
    assert exp is not None
    runs = client.search_runs([exp.experiment_id])
    assert sorted(r.data.tags["mlflow.runName"] for r in runs) == ["eval — P-1", "eval — P-2"]
    run = runs[0]
    assert run.data.tags["skill"] == "generate-prd" and run.data.tags["grade"] == "B"
    assert run.data.tags["verdict"] == "PASS"
    assert run.data.tags["case"] in ("P-1", "P-2")
    m = run.data.metrics
    assert (m["total_score"], m["max_score"], m["criteria_passed"], m["criteria_total"], m["critical_failures"]) == (
        5, 6, 2, 3, 0)
    assert m["score_pct"] == pytest.approx(5 / 6) and m["c_template"] == 1 and m["c_scope"] == 2
    arts = [a.path for a in client.list_artifacts(run.info.run_id)]
    assert "results.json" in arts


def test_mlflow_missing_extra_is_a_one_line_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    from referee.errors import MissingExtraError
    from referee.reports._mlflow import log_gold_runs

    real = builtins.__import__

    def no_mlflow(name: str, *a: object, **k: object) -> object:
        if name == "mlflow":
            raise ImportError("no mlflow")
        return real(name, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_mlflow)
    with pytest.raises(MissingExtraError, match=r"referee\[mlflow\]"):
        log_gold_runs([], uri="file:/nonexistent")


def test_ungrounded_quotes_and_self_grading_are_reported(fake_server: FakeLLMServer, files: dict[str, Path],
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    fake_server.responder = _responder({"scope": {**GOOD, "quotes": ["Out of scope: payments via crypto"]},
                                        "template": GOOD, "coverage": GOOD})
    assert cli(_single(fake_server, files, "--model", "m9", "--system-model", "M9")) == 0
    err = capsys.readouterr().err
    assert "ungrounded evidence per criterion: scope 1" in err and "self-grading" in err
    data = json.loads((files["out"] / "results.json").read_text())
    assert data["summary"]["ungrounded_per_criterion"] == {"scope": 1} and data["summary"]["self_grading"] == 1
    case = data["cases"][0]
    assert case["criteria"][0]["grounded"] is False and {"ungrounded", "self_grading"} <= set(case["flags"])
    # The score is kept (gold files default to `ungrounded: keep`).
    assert case["criteria"][0]["score"] == 2
    html = (files["out"] / "report.html").read_text()
    assert "Self-grading caveat" in html and "[not found in the judged text]" in html


def test_claude_default_is_not_sent_to_another_provider(fake_server: FakeLLMServer, files: dict[str, Path],
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    files["criteria"].write_text(CRITERIA.replace("judge_model: judge-from-file\n", ""))
    fake_server.responder = _responder({"scope": GOOD, "template": GOOD, "coverage": GOOD})
    assert cli(_single(fake_server, files, "--single-call")) == 0
    assert "claude" not in fake_server.requests[0].model
    assert "judge_model 'claude-sonnet-4-6' is an Anthropic model" in capsys.readouterr().err


def test_critical_failure_settles_fail_even_with_an_unscored_criterion(
        fake_server: FakeLLMServer, files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    fake_server.responder = _responder({"scope": {**GOOD, "pass": False, "score": 0, "reasoning": "no logout"},
                                        "template": "not json at all", "coverage": GOOD})
    assert cli(_single(fake_server, files, "--no-cache")) == 1
    cap = capsys.readouterr()
    assert "FAIL (critical criterion failed: scope)" in cap.out
    data = json.loads((files["out"] / "results.json").read_text())
    case = data["cases"][0]
    # FAIL from real evidence; the unscored criterion stays visible and nothing is invented for it.
    assert (case["status"], case["verdict"], case["grade"], case["total_score"], case["score_pct"]) == (
        "unscored", "FAIL", None, None, None)
    assert case["critical_failures"] == 1 and case["criteria_passed"] == 1
    by_id = {c["id"]: c for c in case["criteria"]}
    assert by_id["template"]["status"] == "unscored" and by_id["template"]["score"] is None
    s = data["summary"]
    assert (s["failed"], s["unscored"], s["failed_with_unscored_criteria"], s["passed"]) == (1, 0, 1, 0)
    row = read_results(files["out"] / "results.jsonl", strict=True).rows[0]
    assert row.status == "unscored" and row.passed is False and row.score is None
    html = (files["out"] / "report.html").read_text()
    assert "1 of them already FAIL on the criteria that were graded" in html


def test_too_few_criteria_left_to_reach_the_threshold_settles_fail(
        fake_server: FakeLLMServer, files: dict[str, Path]) -> None:
    files["criteria"].write_text(CRITERIA.replace("pass_threshold: 2", "pass_threshold: 3"))
    fake_server.responder = _responder({"scope": GOOD, "template": "not json at all",
                                        "coverage": {**GOOD, "pass": False, "score": 1}})
    assert cli(_single(fake_server, files, "--no-cache")) == 1
    case = json.loads((files["out"] / "results.json").read_text())["cases"][0]
    assert case["verdict"] == "FAIL" and "cannot be reached" in case["verdict_reason"]
    # With pass_threshold 2 the unscored criterion could still decide: no verdict, never a PASS.
    files["criteria"].write_text(CRITERIA)
    assert cli(_single(fake_server, files, "--no-cache")) == 1
    case = json.loads((files["out"] / "results.json").read_text())["cases"][0]
    assert case["verdict"] == "UNSCORED" and case["status"] == "unscored"


def test_a_changed_document_is_graded_again_not_resumed(fake_server: FakeLLMServer, files: dict[str, Path],
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    fake_server.responder = _responder({"scope": GOOD, "template": GOOD, "coverage": GOOD})
    assert cli(_single(fake_server, files, "--no-cache")) == 0
    n = len(fake_server.requests)
    assert cli(_single(fake_server, files, "--no-cache")) == 0  # same documents: resumed, nothing re-judged
    assert len(fake_server.requests) == n
    files["gen"].write_text(GEN + "\n## Out of scope\nlogout\n")
    fake_server.responder = _responder({"scope": {**GOOD, "pass": False, "score": 0}, "template": GOOD,
                                        "coverage": GOOD})
    capsys.readouterr()
    assert cli(_single(fake_server, files, "--no-cache")) == 1  # the new version FAILs
    assert len(fake_server.requests) == n + 3 and "different configuration" in capsys.readouterr().err
    assert json.loads((files["out"] / "results.json").read_text())["cases"][0]["verdict"] == "FAIL"


def test_nothing_graded_is_never_settled_even_when_no_case_can_pass(fake_server: FakeLLMServer,
                                                                     files: dict[str, Path]) -> None:
    files["criteria"].write_text(CRITERIA.replace("pass_threshold: 2", "pass_threshold: 9"))
    fake_server.responder = lambda req: "no JSON here"
    assert cli(_single(fake_server, files, "--no-cache", "--single-call")) == 1
    case = json.loads((files["out"] / "results.json").read_text())["cases"][0]
    assert case["verdict"] == "UNSCORED" and all(c["status"] == "unscored" for c in case["criteria"])
    row = read_results(files["out"] / "results.jsonl", strict=True).rows[0]
    assert row.passed is None
