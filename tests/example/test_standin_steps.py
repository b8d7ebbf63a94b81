"""``referee example`` with no key: every model-graded step runs with the stand-in judge, labelled as such."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.cli import cli
from referee.results import read_results


def test_example_without_a_key_grades_every_step_with_the_stand_in(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    ex = tmp_path / "ex"
    code = cli(["example", "--dir", str(ex)])
    out = capsys.readouterr()
    assert code == 0, out.err[-2000:]
    text = out.out + out.err
    head = out.out[:1500]
    # Said at the top, before any step: the judge is a stand-in, and how to switch to a real provider.
    assert "STAND-IN judge" in head and "ANTHROPIC_API_KEY" in head and "not a model" in head
    assert "skipped" not in "\n".join(ln for ln in text.splitlines() if not ln.strip().startswith("skipped test"))
    assert "--provider standin" in text
    # Every model-graded step wrote its rows, every row graded and labelled by the stand-in.
    for name in ("judged_before", "judged_after", "rubric_after", "pairwise", "agent_judged",
                 "conversations_judged", "targets_out/v2"):
        rows = read_results(ex / f"{name}.jsonl").rows
        assert rows, name
        scored = [r for r in rows if r.status == "scored"]
        # The agent files hold one malformed case each on purpose (an error row, no judge call).
        assert len(scored) >= len(rows) - 1, (name, [r.error for r in rows if r.status != "scored"])
        if name != "targets_out/v2":  # a suite's combined row names its checks first
            assert all("stand-in judge" in (r.rationale or "") for r in scored), name
    # The judge follows the case: the answers the support lead failed score lower than the ones they passed.
    judged = {r.id: r.score for r in read_results(ex / "judged_after.jsonl").rows}
    labels = {"refund-01": 0, "delete-01": 0, "2fa-01": 0, "outage-02": 0,
              "sso-01": 1, "limits-01": 1, "plan-01": 1, "export-01": 1}
    bad = [judged[k] or 0.0 for k, v in labels.items() if v == 0]
    good = [judged[k] or 0.0 for k, v in labels.items() if v == 1]
    assert max(bad) < 0.5 <= min(good)
    # The targets step still catches the regression: its gated run exits 1.
    assert "the gate caught regressions in v2 (exit 1)" in out.out
    v2 = {r.id: r for r in read_results(ex / "targets_out" / "v2.jsonl").rows}
    judge_score = v2["refund-01"].check("judge").score
    assert judge_score is not None and judge_score < 0.5
