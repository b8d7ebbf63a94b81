"""A run's panel figures: agreement, kappa, effective votes, shared families, and the panel against each judge
on human labels given for some cases; in ``referee score`` and ``referee calibrate``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import referee
from referee.calibrate import panel_agreement
from referee.cli import cli
from referee.judges import LLMJudge
from referee.providers import FakeProvider, JudgeRequest
from referee.results import panel_of
from referee.stats._panel import krippendorff_alpha, pairwise_kappa

# Case i's output is "answer-i"; each judge passes the cases in its set.
N = 12
PASSES = {
    "gpt-4o-mini": {0, 1, 2, 3, 4, 5, 6, 7},
    "gpt-4o": {0, 1, 2, 3, 4, 5, 8, 9},
    "claude-3-5-haiku": {0, 1, 2, 3, 6, 7, 8, 10},
}
HUMAN = {f"c{i}": (1 if i in {0, 1, 2, 3, 4, 5, 6, 8} else 0) for i in range(N) if i != 11}  # c11 unlabelled


def _judge(model: str) -> referee.Judge:
    def reply(req: JudgeRequest) -> str:
        text = " ".join(m.content for m in req.messages)
        found = re.search(r"answer-(\d+)", text)
        assert found is not None
        i = int(found.group(1))
        return json.dumps({"overall_score": 0.9 if i in PASSES[model] else 0.1})

    return referee.Judge(FakeProvider(reply, model=model), cache=False, input_price_per_mtok=1,
                         output_price_per_mtok=1)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> referee.EvalResult:
    out = tmp_path_factory.mktemp("panel") / "results.jsonl"
    cases = [{"id": f"c{i}", "input": "q", "output": f"answer-{i}"} for i in range(N)]
    return referee.evaluate(cases, [LLMJudge(rubric="- correct")],
                            judge=[_judge(m) for m in PASSES],
                            out=out, progress=False)


def test_agreement_kappa_and_effective_votes_match_the_votes(run: referee.EvalResult) -> None:
    (rep,) = panel_agreement(run.rows, n_boot=200)
    votes = [["pass" if i in PASSES[m] else "fail" for i in range(N)] for m in PASSES]
    assert rep.judges == ["fake:gpt-4o-mini", "fake:gpt-4o", "fake:claude-3-5-haiku"]
    assert rep.cases == N
    assert rep.alpha.estimate == pytest.approx(krippendorff_alpha(votes, n_boot=0).estimate)
    assert [k.kappa for k in rep.kappas] == [k.kappa for k in pairwise_kappa(votes, rep.judges)]
    split = sum(len({v[i] for v in votes}) > 1 for i in range(N))
    assert rep.split == split
    assert rep.effective.basis == "agreement" and 1 <= (rep.effective.estimate or 0) <= 3
    assert rep.shared_families == {"openai": ["fake:gpt-4o-mini", "fake:gpt-4o"]}
    assert any("openai models" in w for w in rep.warnings)
    assert rep.cost_usd is not None and rep.cost_usd > 0


def test_panel_against_each_judge_on_labels_for_some_cases(run: referee.EvalResult) -> None:
    (rep,) = panel_agreement(run.rows, HUMAN, n_boot=200)
    assert rep.labelled == N - 1
    assert any("1 of 12 cases have no human label" in w for w in rep.warnings)
    assert rep.effective.basis == "errors"
    # By hand: the majority passes {0..8} minus nothing... count: a case passes with 2 of 3 votes.
    maj = {i for i in range(N) if sum(i in s for s in PASSES.values()) >= 2}
    want_panel = sum((i in maj) == (HUMAN[f"c{i}"] == 1) for i in range(N - 1)) / (N - 1)
    assert rep.panel_vs_human is not None and rep.panel_vs_human.estimate == pytest.approx(want_panel)
    for m, (model, passes) in zip(rep.members_vs_human, PASSES.items(), strict=True):
        mine = sum((i in passes) == (HUMAN[f"c{i}"] == 1) for i in range(N - 1)) / (N - 1)
        assert m.agreement.estimate == pytest.approx(mine), model
        assert m.panel_minus_judge.diff == pytest.approx(want_panel - mine)
    assert panel_of(run.rows[0]) is not None


def test_score_and_calibrate_print_the_panel(run: referee.EvalResult, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert run.path is not None
    sj = tmp_path / "score.json"
    assert cli(["score", str(run.path), "--n-boot", "200", "--json-out", str(sj)]) == 0
    out = capsys.readouterr().out
    assert "Panel on judge: 3 judges" in out and "Krippendorff's alpha" in out
    panels = json.loads(sj.read_text())["panels"]
    assert panels[0]["judges"] == ["fake:gpt-4o-mini", "fake:gpt-4o", "fake:claude-3-5-haiku"]
    assert panels[0]["effective_votes"]["basis"] == "agreement"
    human = tmp_path / "human.jsonl"
    human.write_text("".join(json.dumps({"id": k, "score": v}) + "\n" for k, v in HUMAN.items()))
    js = tmp_path / "cal.json"
    code = cli(["calibrate", str(run.path), str(human), "--threshold", "1", "--json-out", str(js), "--n-boot", "200"])
    err = capsys.readouterr().err
    assert code == 0
    assert "vs human labels (11 cases): panel" in err
    data = json.loads(js.read_text())
    assert data["panels"][0]["labelled"] == 11
    assert len(data["panels"][0]["members_vs_human"]) == 3


def test_a_run_without_a_panel_has_no_panel_figures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    res = referee.evaluate([{"input": "q", "output": "a"}], ["is_json"], out=tmp_path / "r.jsonl", progress=False)
    assert panel_agreement(res.rows) == []
    cli(["score", str(tmp_path / "r.jsonl")])
    assert "Panel on" not in capsys.readouterr().out
