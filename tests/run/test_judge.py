"""The judge of a run: ``Judge.for_suite`` applies the precedence ``referee run`` applies (the environment over
the suite's ``judge:`` settings over referee's defaults), so Python and the command judge a suite alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import referee
from referee import Judge
from referee.suites import JudgeDefaults
from referee.testing import FakeLLMServer


def test_the_suites_judge_settings_apply_under_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    defaults = JudgeDefaults(provider="openai", model="gpt-4o-mini", max_tokens=300, temperature=0.0,
                             concurrency=4, rubric="- correct")
    j = Judge.for_suite(defaults)
    assert (j.provider, j.model, j.max_tokens, j.temperature, j.concurrency) == ("openai", "gpt-4o-mini", 300,
                                                                                  0.0, 4)
    monkeypatch.setenv("REFEREE_MODEL", "gpt-4.1")  # the environment wins field by field, as in `referee run`
    j = Judge.for_suite(defaults)
    assert (j.provider, j.model, j.max_tokens) == ("openai", "gpt-4.1", 300)
    monkeypatch.delenv("REFEREE_MODEL")
    assert Judge.for_suite(None) == Judge.from_env() == Judge("anthropic")


def test_what_the_caller_gave_comes_first_then_the_suites_concurrency(monkeypatch: pytest.MonkeyPatch) -> None:
    defaults = JudgeDefaults(provider="openai", model="gpt-4o-mini", max_tokens=300, concurrency=4)
    monkeypatch.setenv("REFEREE_MODEL", "from-the-environment")
    j = Judge.for_suite(defaults, concurrency=2)  # the suite's top-level `concurrency:` beats its judge block's
    assert (j.model, j.max_tokens, j.concurrency) == ("from-the-environment", 300, 2)
    j = Judge.for_suite(defaults, given={"model": "typed", "concurrency": 16, "max_tokens": 50}, concurrency=2)
    assert (j.provider, j.model, j.max_tokens, j.concurrency) == ("openai", "typed", 50, 16)


def test_run_targets_without_a_judge_uses_the_suites_judge_block(tmp_path: Path, fake_server: FakeLLMServer,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    fake_server.responder = lambda req: '{"criteria": [{"name": "c", "score": 1, "rationale": "ok"}], ' \
                                        '"overall_score": 0.9}'
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "a", "input": "q", "reference": "r"}) + "\n",
                                          encoding="utf-8")
    (tmp_path / "agent.py").write_text("def run(x):\n    return 'an answer'\n", encoding="utf-8")
    (tmp_path / "suite.yaml").write_text(f"""\
cases: cases.jsonl
judge: {{provider: openai, base_url: "{fake_server.openai_base_url}", model: m-from-the-suite}}
targets:
  - id: app
    python: agent:run
evaluators: [{{llm_judge: {{rubric: "- answers"}}}}]
""", encoding="utf-8")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    run = referee.run_targets(tmp_path / "suite.yaml", tmp_path / "out")
    rows = run.outcomes[0].outcome.rows
    assert [r.status for r in rows] == ["scored"]
    assert fake_server.requests and fake_server.requests[-1].body["model"] == "m-from-the-suite"


def test_a_missing_key_in_python_names_judge_standin(monkeypatch: pytest.MonkeyPatch) -> None:
    from referee.errors import KeyMissing

    for var in ("ANTHROPIC_API_KEY", "REFEREE_PROVIDER", "REFEREE_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(KeyMissing, match=r'ANTHROPIC_API_KEY.*judge="standin"') as info:
        referee.evaluate([{"input": "2+2?", "output": "4"}], [referee.judges.LLMJudge(rubric="- correct")],
                         judge="anthropic", progress=False)
    assert "--provider" not in str(info.value)  # Python's spelling, not the command line's
