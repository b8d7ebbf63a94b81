"""``referee run`` with ``targets:`` and a judge panel: each gated target's Markdown has the panel's figures,
the ones ``referee score --json-out`` writes for that target's results file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from referee.testing import FakeLLMServer
from tests.support.cli import run_cli
from tests.support.panels import JUDGES, N_CASES, interval, responder, score_panels

AGENT = "def answer(text):\n    return 'answer number ' + text.split()[-1]\n"


def test_each_gated_target_has_the_panel_section(fake_server: FakeLLMServer, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    fake_server.responder = responder
    (tmp_path / "agent_panel.py").write_text(AGENT, encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": f"question {i}"}) + "\n"
                                                  for i in range(N_CASES)))
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump({
        "cases": "cases.jsonl", "judges": JUDGES,
        "targets": [{"id": "v1", "python": "agent_panel:answer"}, {"id": "v2", "python": "agent_panel:answer"}],
        "evaluators": [{"llm_judge": {"rubric": "- correct"}}],
        "gates": {"baseline": "v1", "fail_on_regression": True}}, sort_keys=False))
    md = tmp_path / "summary.md"
    code, _, err = run_cli(["run", str(suite), "--provider", "openai", "--base-url", fake_server.openai_base_url,
                            "--no-cache", "--out", str(tmp_path / "out"), "--markdown", str(md)], capsys)
    assert code == 0, err
    body = md.read_text()
    p = score_panels(tmp_path / "out" / "v2.jsonl", tmp_path, capsys)[0]
    target = body[body.index("#### target `v2`"):]
    assert "**Judge panels**" in target
    assert f"Krippendorff's alpha {interval(p['alpha'])}; effective independent votes" in target
    assert f"| openai:gpt-judge-a vs openai:gpt-judge-b | {p['kappas'][0]['kappa']:.3f} |" in target
