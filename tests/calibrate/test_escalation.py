"""Escalation with a guarantee: the chosen threshold's kept verdicts meet the target agreement in at least the
stated share of repetitions, on simulated judges whose error rates are known; an unmeetable level keeps
nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import referee
from referee.calibrate import escalation_report
from referee.calibrate._escalation import choose_threshold
from referee.cli import cli
from referee.errors import UserError
from referee.judges import LLMJudge
from referee.providers import FakeProvider, JudgeRequest
from referee.results import panel_of

TARGET, CONF = 0.9, 0.9


def _judge(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A judge whose confidence c is uniform on [0, 1] and which agrees with humans with probability
    0.5 + 0.5 c: the verdicts kept at threshold t agree at 0.75 + 0.25 t, so the target 0.9 needs t >= 0.6."""
    c = rng.random(n)
    return c, rng.random(n) < 0.5 + 0.5 * c


def test_held_out_agreement_meets_the_target_in_the_stated_share_of_repetitions() -> None:
    rng = np.random.default_rng(2026)
    reps, true_ok, held_ok, coverage = 200, 0, 0, []
    for _ in range(reps):
        c, a = _judge(1000, rng)
        ch = choose_threshold(c.tolist(), a.tolist(), target=TARGET, confidence=CONF)
        if ch.threshold is None:
            true_ok += 1  # nothing kept: no kept verdict disagrees
            held_ok += 1
            coverage.append(0.0)
            continue
        # The kept verdicts' true agreement, known in closed form, and on a large held-out sample.
        true_ok += 0.75 + 0.25 * ch.threshold >= TARGET
        hc, ha = _judge(20_000, rng)
        kept = hc >= ch.threshold
        held_ok += ha[kept].mean() >= TARGET - 0.005  # the held-out estimate's own noise (sd ~0.003)
        coverage.append(kept.mean())
    slack = 3 * np.sqrt(CONF * (1 - CONF) / reps)  # the repetitions' own noise
    assert true_ok / reps >= CONF - slack
    assert held_ok / reps >= CONF - slack
    # Not vacuous: most repetitions keep a useful share (the most a guarantee allows is 40%, at t = 0.6).
    assert np.mean(np.array(coverage) > 0) > 0.7
    assert np.median(coverage) > 0.15


def test_the_threshold_is_the_lowest_passing_one_in_the_sequence() -> None:
    # 10 verdicts at confidence 1.0 (all agree), then 10 at 0.5 of which 5 agree. The grid: the confidences
    # keeping 5%, 10%, ... of the 20 (at least 7, the fewest that could pass: 0.7^7 = 0.082 <= 0.1).
    c = [1.0] * 10 + [0.5] * 10
    a = [True] * 10 + [True] * 5 + [False] * 5
    ch = choose_threshold(c, a, target=0.7, confidence=0.9)
    # At 1.0: 10 of 10, p = 0.7^10 = 0.028 <= 0.1: kept. At 0.5: 15 of 20, p = P(Bin(20, .7) >= 15) = 0.416.
    assert ch.threshold == 1.0 and (ch.kept, ch.agree) == (10, 10)
    assert ch.steps[0].p_value == pytest.approx(0.7**10)
    assert ch.steps[1].p_value == pytest.approx(0.41637, abs=1e-4)
    assert ch.lower_bound is not None and ch.lower_bound >= 0.7


def test_an_unmeetable_level_keeps_nothing() -> None:
    rng = np.random.default_rng(1)
    c, a = rng.random(200), rng.random(200) < 0.8  # 80% whatever the confidence
    ch = choose_threshold(c.tolist(), a.tolist(), target=0.99, confidence=0.9)
    assert ch.threshold is None and not ch.met and ch.kept == 0
    # Confidence 0 (no verdict) is never kept, even when every such case agreed.
    assert choose_threshold([0.0] * 50, [True] * 50, target=0.5).threshold is None


def test_levels_must_be_proper_probabilities() -> None:
    with pytest.raises(UserError, match="strictly between 0 and 1"):
        choose_threshold([0.5], [True], target=1.0)
    with pytest.raises(UserError, match="strictly between 0 and 1"):
        choose_threshold([0.5], [True], target=0.9, confidence=float("nan"))
    with pytest.raises(UserError, match="finite"):
        choose_threshold([float("inf")], [True], target=0.9)


# --- Escalation on a run: a panel of three fake judges, 80 cases; every fourth case splits 2-1. ----------------

N = 80


def _passes(judge: int, i: int) -> bool:
    if i % 4 == 0:
        return judge != 2  # split: two pass, one fails
    return i % 3 != 0  # unanimous


def _fake(j: int, model: str, score_pass: float = 0.9) -> referee.Judge:
    def reply(req: JudgeRequest) -> str:
        found = re.search(r"answer-(\d+)", " ".join(m.content for m in req.messages))
        assert found is not None
        i = int(found.group(1))
        ok = _passes(j, i) if j >= 0 else (i % 8 == 0)  # the stronger judge (j < 0): its own view
        return json.dumps({"overall_score": score_pass if ok else 0.1})

    return referee.Judge(FakeProvider(reply, model=model), cache=False, input_price_per_mtok=1,
                         output_price_per_mtok=1)


HUMAN = {f"c{i}": int(_passes(0, i) if i % 4 else i % 8 == 0) for i in range(N)}
CASES = [{"id": f"c{i}", "input": "q", "output": f"answer-{i}"} for i in range(N)]


def _run(tmp_path: Path, **panel: object) -> referee.EvalResult:
    return referee.evaluate(CASES, [LLMJudge(rubric="- correct")],
                            judge=[_fake(0, "m0"), _fake(1, "m1"), _fake(2, "m2")],
                            panel=panel or None,
                            out=tmp_path / "r.jsonl", progress=False)


def test_below_the_threshold_a_case_needs_a_human_or_goes_to_the_stronger_judge(tmp_path: Path) -> None:
    res = _run(tmp_path, escalate_below=1.0)
    split = [r for r in res.rows if int(r.id[1:]) % 4 == 0]
    assert split and all(r.status == "unscored" and "needs_human" in r.flags for r in split)
    assert all(panel_of(r).needs_human for r in split)  # type: ignore[union-attr]
    assert all(r.status == "scored" for r in res.rows if int(r.id[1:]) % 4)
    strong = _fake(-1, "strong")
    res2 = referee.evaluate(CASES, [LLMJudge(rubric="- correct")],
                            judge=[_fake(0, "m0"), _fake(1, "m1"), _fake(2, "m2")],
                            panel={"escalate_below": 1.0, "escalate_to": strong}, progress=False)
    esc = [r for r in res2.rows if int(r.id[1:]) % 4 == 0]
    assert all(r.status == "scored" and "escalated" in r.flags for r in esc)
    assert all(r.passed == (int(r.id[1:]) % 8 == 0) for r in esc)  # the stronger judge's verdict
    rec = panel_of(esc[0])
    assert rec is not None and rec.escalated is not None and rec.escalated.judge == "fake:strong"
    # Its cost is in the row and in the totals: four calls on an escalated case.
    assert esc[0].usage is not None and esc[0].usage.calls == 4
    assert res2.manifest.totals.provider_calls == 3 * N + len(esc)


def test_calibrate_chooses_the_threshold_reports_it_and_fails_an_unmeetable_level(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    res = _run(tmp_path)
    rep = escalation_report(res.rows, HUMAN, target=0.8, confidence=0.9)
    assert rep.choice.threshold == 1.0  # only the unanimous verdicts are kept
    assert rep.coverage == pytest.approx(0.75)
    assert rep.held_out_agreement is not None and rep.held_out_agreement[0] == 1.0
    assert sorted(rep.escalated) == sorted(f"c{i}" for i in range(0, N, 4))
    assert rep.cost_per_kept is not None and rep.cost_usd is not None
    assert rep.cost_per_kept == pytest.approx(rep.cost_usd / 60)

    human = tmp_path / "human.jsonl"
    human.write_text("".join(json.dumps({"id": k, "score": v}) + "\n" for k, v in HUMAN.items()))
    out, esc = tmp_path / "cal.json", tmp_path / "esc.jsonl"
    args = ["calibrate", str(res.path), str(human), "--threshold", "1", "--n-boot", "100"]
    assert cli([*args, "--target-agreement", "0.8", "--json-out", str(out), "--escalated-out", str(esc)]) == 0
    err = capsys.readouterr().err
    assert "threshold 1.000: keeps" in err and "coverage: 75.0%" in err and "cost per kept verdict" in err
    assert json.loads(out.read_text())["escalation"]["choice"]["threshold"] == 1.0
    assert len(esc.read_text().splitlines()) == N // 4
    # The escalated list never overwrites an input (the human labels here): a usage error, nothing written.
    before = human.read_text()
    assert cli([*args, "--target-agreement", "0.8", "--escalated-out", str(human)]) == 2
    assert human.read_text() == before
    capsys.readouterr()
    # 99% cannot be shown from 40 calibration cases: say so, keep nothing, exit 1.
    assert cli([*args, "--target-agreement", "0.99", "--escalated-out", str(esc)]) == 1
    err = capsys.readouterr().err
    assert "no threshold meets 99% agreement" in err and "nothing is kept automatically" in err
    assert len(esc.read_text().splitlines()) == N


def test_escalation_needs_labels() -> None:
    with pytest.raises(UserError, match="no case of the run has a human label"):
        escalation_report([], {}, target=0.9)
