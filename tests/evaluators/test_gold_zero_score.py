"""In gold criteria the 0-2 score decides failure; pass/score disagreement is flagged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.cli import cli
from referee.testing import FakeLLMServer
from tests.evaluators.test_gold import CRITERIA, GEN, GOLD, GOOD, _responder


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "criteria.yaml").write_text(CRITERIA)
    (tmp_path / "gen.md").write_text(GEN)
    (tmp_path / "gold.md").write_text(GOLD)
    return {"criteria": tmp_path / "criteria.yaml", "gen": tmp_path / "gen.md", "gold": tmp_path / "gold.md",
            "out": tmp_path / "eval"}


def _args(srv: FakeLLMServer, f: dict[str, Path], *extra: str) -> list[str]:
    return ["gold", "--criteria", str(f["criteria"]), "--generated", str(f["gen"]), "--gold", str(f["gold"]),
            "--output", str(f["out"]), "--provider", "openai", "--base-url", srv.openai_base_url, *extra]


@pytest.mark.parametrize("single", [False, True])
def test_critical_score_zero_with_pass_true_fails(fake_server: FakeLLMServer, files: dict[str, Path],
                                                  capsys: pytest.CaptureFixture[str], single: bool) -> None:
    fake_server.responder = _responder({"scope": {**GOOD, "pass": True, "score": 0}, "template": GOOD,
                                        "coverage": GOOD})
    assert cli(_args(fake_server, files, *(["--single-call"] if single else []))) == 1
    captured = capsys.readouterr()
    case = json.loads((files["out"] / "results.json").read_text())["cases"][0]
    assert case["verdict"] == "FAIL" and case["critical_failures"] == 1
    scope = case["criteria"][0]
    assert scope["pass"] is False and scope["score"] == 0
    assert "pass_score_mismatch" in case["flags"]
    assert case["pass_score_mismatch"] == {"scope": "pass: true with score 0"}
    assert "judge said pass: true with score 0" in captured.out
    assert "--judge-pass-only" in captured.err


def test_judge_pass_only_restores_the_original(fake_server: FakeLLMServer, files: dict[str, Path]) -> None:
    fake_server.responder = _responder({"scope": {**GOOD, "pass": True, "score": 0}, "template": GOOD,
                                        "coverage": GOOD})
    assert cli(_args(fake_server, files, "--judge-pass-only")) == 0
    case = json.loads((files["out"] / "results.json").read_text())["cases"][0]
    assert case["verdict"] == "PASS" and case["criteria"][0]["pass"] is True
    assert "pass_score_mismatch" in case["flags"]  # still flagged, only not decisive


def test_pass_false_with_score_two_is_flagged_and_stays_failed(fake_server: FakeLLMServer,
                                                               files: dict[str, Path]) -> None:
    fake_server.responder = _responder({"scope": GOOD, "template": {**GOOD, "pass": False, "score": 2},
                                        "coverage": GOOD})
    assert cli(_args(fake_server, files)) == 0  # 2 of 3 passed >= pass_threshold 2
    case = json.loads((files["out"] / "results.json").read_text())["cases"][0]
    assert case["criteria"][1]["pass"] is False
    assert case["pass_score_mismatch"] == {"template": "pass: false with score 2"}
