"""A suite's judge panel: ``judges:`` and ``panel:`` in the file (each entry's ``panel:`` over it), ``--judge``
repeated on ``referee run``, through the local server; bad panel settings are located by file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from referee.results import panel_of, read_results
from referee.suites import SuiteInvalid, load_suite
from referee.testing import FakeLLMServer
from tests.support.cli import run_cli

SCORES = {"judge-a": 0.9, "judge-b": 0.8, "judge-c": 0.2}


def _by_model(req: object) -> str:
    model = req.body.get("model")  # type: ignore[attr-defined]
    if model == "judge-broken":
        return "I will not say."
    return json.dumps({"overall_score": SCORES.get(model, 0.5)})


def _suite(tmp_path: Path, **extra: object) -> Path:
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps({"id": f"c{i}", "input": "2+2?", "output": "4"}) + "\n" for i in range(4)))
    data = {"cases": "cases.jsonl", "evaluators": [{"llm_judge": {"rubric": "- correct"}}], **extra}
    p = tmp_path / "suite.yaml"
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return p


def _run(srv: FakeLLMServer, suite: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    return run_cli(["run", str(suite), "--provider", "openai", "--base-url", srv.openai_base_url,
                    "--input-price-per-mtok", "1", "--output-price-per-mtok", "2", "--no-cache", *extra], capsys)


def test_judge_flags_make_a_panel_whose_rows_keep_each_judge(fake_server: FakeLLMServer, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    fake_server.responder = _by_model
    suite = _suite(tmp_path)
    code, out, err = _run(fake_server, suite, capsys, "--judge", "openai:judge-a", "--judge", "openai:judge-b",
                          "--judge", "openai:judge-c")
    assert code == 0, err
    assert {r.body["model"] for r in fake_server.requests} == {"judge-a", "judge-b", "judge-c"}
    assert len(fake_server.requests) == 12  # 4 cases x 3 judges
    rows = read_results(tmp_path / "suite_results.jsonl").rows
    assert all(r.passed and r.score == pytest.approx(0.85) for r in rows)
    rec = panel_of(rows[0])
    assert rec is not None and [m.judge for m in rec.members] == ["openai:judge-a", "openai:judge-b",
                                                                  "openai:judge-c"]
    assert "(12 judge calls" in err  # the run's totals count every judge
    m = json.loads((tmp_path / "suite_results.manifest.json").read_text())
    assert m["judge"]["model"] == "judge-a"
    assert m["extra"]["panel"]["llm_judge"]["rule"] == "majority"


def test_suite_judges_with_a_rule_per_entry_and_a_judge_that_never_grades(
        fake_server: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake_server.responder = _by_model
    suite = _suite(tmp_path, judges=["openai:judge-a", {"provider": "openai", "model": "judge-c", "weight": 3},
                                     "openai:judge-broken"], panel={"rule": "mean", "quorum": 2})
    data = yaml.safe_load(suite.read_text())
    data["evaluators"].append({"llm_judge": {"rubric": "- kind"}, "id": "kind",
                               "panel": {"rule": "weighted", "threshold": 0.5}})
    suite.write_text(yaml.safe_dump(data, sort_keys=False))
    code, _, err = _run(fake_server, suite, capsys)
    assert code in (0, 1), err
    rows = read_results(tmp_path / "suite_results.jsonl").rows
    row = rows[0]
    assert row.status == "scored"
    by = {c.id: c for c in row.criteria}
    assert by["llm_judge"].score == pytest.approx((0.9 + 0.2) / 2)  # mean of the two that graded
    assert by["kind"].score == pytest.approx((0.9 + 3 * 0.2) / 4)  # weighted
    rec = panel_of(row, "kind")
    assert rec is not None and rec.rule == "weighted" and rec.graded == 2
    assert [m.status for m in rec.members] == ["scored", "scored", "unscored"]


def test_dry_run_counts_each_judge(fake_server: FakeLLMServer, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    suite = _suite(tmp_path, judges=["openai:judge-a", "openai:judge-b", "openai:judge-c"])
    code, out, _ = _run(fake_server, suite, capsys, "--dry-run")
    assert code == 0
    assert "= 12 judge call(s)" in out and "a panel judges llm_judge: one call per judge" in out
    panel_line = next(x for x in out.splitlines() if "a panel judges" in x)
    assert panel_line.endswith("depend on the verdicts and are not counted")  # a whole sentence
    assert fake_server.requests == []


def test_bad_panel_settings_are_located(tmp_path: Path) -> None:
    suite = _suite(tmp_path, judges=["openai:a"], panel={"rule": "mode"})
    with pytest.raises(SuiteInvalid, match=r"suite.yaml:\d+ panel.rule"):
        load_suite(suite)
    suite = _suite(tmp_path, judges=[])
    with pytest.raises(SuiteInvalid, match="judges"):
        load_suite(suite)
    suite = _suite(tmp_path, judges=["openai:a"], panel={"quorum": 2})
    with pytest.raises(SuiteInvalid, match="quorum"):
        load_suite(suite)


def test_judge_flags_on_a_suite_without_llm_evaluators_are_refused(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    suite = _suite(tmp_path)
    data = yaml.safe_load(suite.read_text())
    data["evaluators"] = ["is_json"]
    suite.write_text(yaml.safe_dump(data))
    code, _, err = run_cli(["run", str(suite), "--judge", "openai:a", "--judge", "openai:b"], capsys)
    assert code == 2 and "no LLM evaluator for a panel" in err
