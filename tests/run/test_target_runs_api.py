"""``referee.run_targets`` and ``referee.estimate_run``: the library calls behind ``referee run`` with targets give
what the command gives (results per target, comparison, gate verdicts, Markdown, exit code), without the CLI."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

import referee
from referee.cli import cli
from referee.results._io import read_results

AGENT = """\
def good(text):
    return "Refunds take 5 business days: " + text

def worse(text):
    n = int(text.split()[-1])
    if n == 4:
        raise RuntimeError("agent crashed")
    return "Refunds take 5 business days." if n % 3 else "no idea"
"""


def _suite(tmp_path: Path, mod: str) -> Path:
    (tmp_path / f"{mod}.py").write_text(AGENT, encoding="utf-8")
    with open(tmp_path / "cases.jsonl", "w", encoding="utf-8") as f:
        for i in range(12):
            f.write(json.dumps({"id": f"q{i}", "input": f"question {i}", "category": "a" if i % 2 else "b"}) + "\n")
    p = tmp_path / "suite.yaml"
    p.write_text(f"""\
name: api-vs-cli
cases: cases.jsonl
targets:
  - id: v1
    python: {mod}:good
  - id: v2
    python: {mod}:worse
evaluators:
  - contains: {{value: "5 business days"}}
scoring: {{mode: all_pass}}
gates:
  baseline: v1
  candidate: v2
  fail_on_regression: true
""", encoding="utf-8")
    return p


def _rows(path: Path) -> list[tuple[object, ...]]:
    return [(r.id, r.status, r.passed, r.score, r.error, r.target.id if r.target else None)
            for r in read_results(path).rows]


def test_run_targets_from_python_equals_referee_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = _suite(tmp_path, "agent_api_vs_cli")
    cli_md = tmp_path / "cli.md"
    code = cli(["run", str(p), "--out", str(tmp_path / "cli"), "--markdown", str(cli_md)])
    cli_out = capsys.readouterr().out

    run = referee.run_targets(p, tmp_path / "py")

    assert code == run.exit_code == 1  # v2 regresses against v1 and one generation failed
    assert not run.passed
    assert [o.target.id for o in run.outcomes] == ["v1", "v2"]
    assert run.failed_generations == 1
    for tid in ("v1", "v2"):
        assert _rows(tmp_path / "py" / f"{tid}.jsonl") == _rows(tmp_path / "cli" / f"{tid}.jsonl")
    v2 = {r.id: r for r in next(o for o in run.outcomes if o.target.id == "v2").outcome.rows}
    assert v2["q4"].status == "error" and "agent crashed" in (v2["q4"].error or "")
    assert [(g.target, g.baseline, g.code) for g in run.gated] == [("v2", "v1", 1)]
    failed = [v for v in run.gated[0].gates if v.failed]
    assert [v.flag for v in failed] == ["--fail-on-regression"]
    assert failed[0].message in cli_out  # the verdict `referee run` printed
    assert "fail-on-regression" in run.markdown
    # On the command's own results (a rerun in its folder reuses every output and row, measured latencies
    # included), the Markdown is the command's, byte for byte.
    again = referee.run_targets(p, tmp_path / "cli")
    assert again.markdown == cli_md.read_text(encoding="utf-8")
    assert again.outcomes[0].generation.generated == 0 and again.outcomes[0].outcome.new_rows == []


def test_run_targets_selects_targets_and_reports_only(tmp_path: Path) -> None:
    p = _suite(tmp_path, "agent_api_select")
    suite = referee.suites.load_suite(str(p))
    with pytest.raises(referee.UserError, match="gates.candidate 'v2' is not among the targets run"):
        referee.run_targets(suite, tmp_path / "out", targets=["v1"])  # as `referee run --targets v1`: exit 2
    assert not (tmp_path / "out").exists()  # before any call
    suite = dataclasses.replace(suite, gates=referee.suites.Gates())
    run = referee.run_targets(suite, tmp_path / "out", targets=["v1"], gates=False)
    assert [o.target.id for o in run.outcomes] == ["v1"] and run.gated == [] and run.exit_code == 0
    assert all(r.passed for r in run.outcomes[0].outcome.rows)
    with pytest.raises(referee.UserError, match="folder"):
        referee.run_targets(suite, tmp_path / "out.jsonl")


def test_estimate_run_prints_what_dry_run_prints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = _suite(tmp_path, "agent_api_estimate")
    assert cli(["run", str(p), "--dry-run", "--provider", "openai", "--model", "gpt-4o-mini"]) == 0
    out = capsys.readouterr().out
    est = referee.estimate_run(referee.suites.load_suite(str(p), run_user_code=False), provider="openai",
                               model="gpt-4o-mini")
    assert est.describe() + "\n" == out
    assert [g.target for g in est.generation] == ["v1", "v2"] and est.judge.calls == 0
    assert "generation: 12 case(s) x 2 target(s)" in out


class _Steps:
    def __init__(self) -> None:
        self.steps: list[str] = []

    def ran(self, outcomes: list[Any]) -> None:
        self.steps.append("ran " + ",".join(o.target.id for o in outcomes))

    def compared(self, comparison: Any, failed_generations: int) -> None:
        self.steps.append(f"compared {failed_generations}")

    def gating(self, target: str, baseline: str | None) -> None:
        self.steps.append(f"gating {target} {baseline}")

    def gated(self, gate: Any) -> None:
        self.steps.append(f"gated {gate.target} {gate.code}")


def test_reporter_hears_each_step_and_paid_work_shows_before_a_late_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = _suite(tmp_path, "agent_api_reporter")
    steps = _Steps()
    run = referee.run_targets(p, tmp_path / "out", reporter=steps)
    assert steps.steps == ["ran v1,v2", "compared 1", "gating v2 v1", "gated v2 1"] and run.exit_code == 1

    # A baseline results file that does not read fails after the targets ran (and were paid for): the reporter,
    # and so `referee run`, has shown each target's totals by then.
    (tmp_path / "base.jsonl").write_text("not json\n", encoding="utf-8")
    text = p.read_text(encoding="utf-8").replace("baseline: v1\n  candidate: v2\n", "baseline: base.jsonl\n")
    (tmp_path / "bad.yaml").write_text(text, encoding="utf-8")
    steps = _Steps()
    with pytest.raises(referee.RefereeError):
        referee.run_targets(tmp_path / "bad.yaml", tmp_path / "bad", reporter=steps)
    assert steps.steps == ["ran v1,v2"]
    assert cli(["run", str(tmp_path / "bad.yaml"), "--out", str(tmp_path / "bad_cli")]) == 2
    err = capsys.readouterr().err
    assert err.index("v1: generated 12") < err.index("v2: generated 12") < err.index("base.jsonl: no result rows")


def test_run_targets_judges_llm_evaluators_with_the_given_judge(tmp_path: Path) -> None:
    p = _suite(tmp_path, "agent_api_judge")
    text = p.read_text(encoding="utf-8").replace(
        '  - contains: {value: "5 business days"}\n',
        '  - contains: {value: "5 business days"}\n  - llm_judge: {rubric: "- quality: answers the question"}\n')
    p.write_text(text.split("gates:")[0], encoding="utf-8")
    seen: list[str] = []

    def reply(request: Any) -> str:
        seen.append(request.messages[-1].content)
        return '{"quality": {"score": 0.25, "rationale": "thin"}, "overall_score": 0.25}'

    run = referee.run_targets(p, tmp_path / "out", judge=referee.Judge.fake(reply), gates=False)
    assert len(seen) == 12 + 11  # every generated output judged once; v2's failed generation never is
    for o in run.outcomes:
        scored = [r for r in o.outcome.rows if r.status == "scored"]
        assert scored and all(r.judge is not None for r in scored)
        assert o.outcome.manifest.judge is not None and o.outcome.manifest.judge.provider == "fake"
