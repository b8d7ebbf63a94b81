"""The example's simulated-conversation step: runs without a key (stand-in user, rule-based agent)."""

from __future__ import annotations

from pathlib import Path

from referee.cli import cli
from referee.example import ExampleContext, prepare
from referee.example import step_65_simulate as step
from referee.results import read_results


def test_the_simulated_conversation_step_runs_without_a_key(tmp_path: Path) -> None:
    prepare(tmp_path)
    lines: list[str] = []
    outcome = step.run(ExampleContext(run_cli=cli, dir=tmp_path, judge=False, echo=lines.append))
    assert outcome == "4/6 episodes rewarded 1 (the unknown order is the agent's failure)"
    rows = read_results(tmp_path / "simulated_results.jsonl").rows
    by = {(r.id, r.repeat): r for r in rows}
    ok = by[("refund-delivered", 0)].details
    assert ok["reward"]["parts"] == {"state": 1.0, "outputs": 1.0}
    assert [m["role"] for m in ok["episode"]["messages"]] == ["user", "assistant", "tool", "assistant", "tool",
                                                              "assistant", "user"]
    bad = by[("unknown-order", 1)]
    assert bad.score == 0.0 and "check the order number" in (bad.rationale or "")
    assert any("referee simulate" in ln for ln in lines)
