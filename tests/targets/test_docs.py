"""docs/targets.md stays true: every YAML example in it is valid, and the walkthrough's suite runs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from referee.cli import cli
from referee.results._io import read_results
from referee.targets import parse_targets
from referee.testing import FakeLLMServer, Reply

DOC = Path(__file__).resolve().parents[2] / "docs" / "targets.md"


def _blocks() -> list[Any]:
    return [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)]


def _files(data: Any, base: Path) -> None:
    """Create the prompt files the example names."""
    names = []
    for t in [*(data.get("targets") or []), *(data.get("prompts") or [])]:
        names += [t] if isinstance(t, str) else [t[k] for k in ("prompt", "system_file") if t.get(k)]
    for name in names:
        (base / name).parent.mkdir(parents=True, exist_ok=True)
        (base / name).write_text("{input}", encoding="utf-8")


def test_every_targets_example_is_valid(tmp_path: Path) -> None:
    blocks = [b for b in _blocks() if isinstance(b, dict) and ("targets" in b or "prompts" in b)]
    assert len(blocks) >= 4
    for b in blocks:
        _files(b, tmp_path)
        _, problems = parse_targets(b, tmp_path)
        assert problems == [], (b, problems)


def test_the_walkthrough_suite_runs_and_gates(tmp_path: Path, fake_server: FakeLLMServer,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    suite = next(b for b in _blocks() if isinstance(b, dict) and b.get("name") == "support-prompt-change")
    for t in suite["targets"]:
        t["base_url"] = fake_server.openai_base_url
    _files(suite, tmp_path)

    def responder(req: Any) -> Reply:
        if req.schema is not None:
            return Reply(text=json.dumps({"correctness": {"score": 0.9, "rationale": "ok"},
                                          "tone": {"score": 0.9, "rationale": "ok"}, "overall_score": 0.9}))
        return Reply(text="Duplicate charges are refunded in full within 5 business days.")

    fake_server.responder = responder
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    (tmp_path / "cases.jsonl").write_text(json.dumps(
        {"id": "refund-01", "category": "billing", "customer_tier": "pro", "input": "I was charged twice in March.",
         "reference": "Duplicate charges are refunded in full within 5 business days."}) + "\n", encoding="utf-8")
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite), encoding="utf-8")
    code = cli(["run", str(tmp_path / "suite.yaml"), "--out", str(tmp_path / "results"), "--provider", "openai",
                "--base-url", fake_server.openai_base_url, "--model", "judge"])
    assert code == 0
    assert [r.status for r in read_results(tmp_path / "results" / "v2.jsonl").rows] == ["scored"]
