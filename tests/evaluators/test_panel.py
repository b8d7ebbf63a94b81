"""Judge panels on any LLM evaluator: each rule, quorum and tie by hand (``combine_panel``), then whole runs
through ``referee.evaluate`` with fake judges: the row keeps every judge, totals count every judge."""

from __future__ import annotations

import json
from typing import Any

import pytest

import referee
from referee.errors import OptionError, UserError
from referee.evaluators._panel import PanelEvaluator, PanelMember, combine_panel
from referee.judges import LLMJudge
from referee.providers import FakeProvider
from referee.results import Usage, panel_of
from referee.results._check import CheckResult

M3 = [PanelMember("openai:a"), PanelMember("openai:b"), PanelMember("anthropic:c")]


def _r(score: float | None, passed: bool | None = None, *, status: str = "scored", winner: str | None = None,
       cost: float | None = 0.001) -> CheckResult:
    return CheckResult(score=score, passed=passed, status=status, winner=winner,  # type: ignore[arg-type]
                       cost_usd=cost, usage=Usage(input_tokens=10, output_tokens=2, calls=1),
                       reason="why" if status == "scored" else "no verdict")


def test_majority_mean_median_min_all_pass_weighted_by_hand() -> None:
    rs = [_r(0.9, True), _r(0.8, True), _r(0.2, False)]
    maj = combine_panel(rs, M3, rule="majority")
    assert (maj.passed, maj.score) == (True, pytest.approx(0.85))  # the mean of the winning side
    assert maj.flags == ["panel_split"]
    rec = panel_of_result(maj)
    assert rec["agreement"] == pytest.approx(2 / 3) and rec["graded"] == 3 and rec["quorum"] == 2
    mean = combine_panel(rs, M3, rule="mean", threshold=0.7)
    assert (mean.score, mean.passed) == (pytest.approx(1.9 / 3), False)  # 0.633 < 0.7
    med = combine_panel(rs, M3, rule="median", threshold=0.7)
    assert (med.score, med.passed) == (pytest.approx(0.8), True)
    mn = combine_panel(rs, M3, rule="min", threshold=0.7)
    assert (mn.score, mn.passed) == (pytest.approx(0.2), False)
    allp = combine_panel(rs, M3, rule="all_pass")
    assert (allp.score, allp.passed) == (pytest.approx(0.2), False)
    assert combine_panel(rs[:2] + [_r(0.75, True)], M3, rule="all_pass").passed is True
    heavy = [PanelMember("openai:a", weight=1), PanelMember("openai:b", weight=1), PanelMember("x:c", weight=6)]
    w = combine_panel(rs, heavy, rule="weighted", threshold=0.7)
    assert w.score == pytest.approx((0.9 + 0.8 + 6 * 0.2) / 8) and w.passed is False


def panel_of_result(res: CheckResult) -> dict[str, Any]:
    panel: dict[str, Any] = res.details["panel"]
    return panel


def test_totals_keep_every_judge() -> None:
    res = combine_panel([_r(0.9, True, cost=0.01), _r(0.8, True, cost=0.02), _r(0.2, False, cost=None)], M3,
                        latencies=[5.0, 50.0, 7.0])
    assert res.cost_usd == pytest.approx(0.03)
    assert res.usage is not None and (res.usage.input_tokens, res.usage.calls) == (30, 3)
    assert res.latency_ms == pytest.approx(50.0)  # concurrent: the slowest judge
    assert res.judge is not None and res.judge.provider == "panel"
    assert res.judge.model == "openai:a+openai:b+anthropic:c"
    members = res.details["panel"]["members"]
    assert [m["judge"] for m in members] == ["openai:a", "openai:b", "anthropic:c"]
    assert [m["cost_usd"] for m in members] == [0.01, 0.02, None]
    assert [m["latency_ms"] for m in members] == [5.0, 50.0, 7.0]
    assert [m["input_tokens"] for m in members] == [10, 10, 10]


def test_quorum_leaves_out_a_judge_that_could_not_grade_and_refuses_below_it() -> None:
    one_bad = [_r(0.9, True), _r(None, status="error"), _r(0.8, True)]
    ok = combine_panel(one_bad, M3, rule="majority")
    assert ok.status == "scored" and ok.passed is True
    assert ok.details["panel"]["graded"] == 2
    two_bad = [_r(0.9, True), _r(None, status="error"), _r(None, status="unscored")]
    low = combine_panel(two_bad, M3, rule="majority")
    assert low.status == "unscored" and low.score is None and low.passed is None  # never the minority's vote
    assert "below quorum: 1 of 3 judges graded, 2 needed" in low.reason
    assert "openai:b error" in low.reason
    all_err = combine_panel([_r(None, status="error")] * 3, M3)
    assert all_err.status == "error"
    # A quorum of 1 takes the single grader.
    assert combine_panel(two_bad, M3, quorum=1).passed is True


def test_ties_follow_the_tie_rule() -> None:
    m2 = M3[:2]
    split = [_r(0.9, True), _r(0.3, False)]
    t = combine_panel(split, m2, quorum=2)
    assert t.status == "unscored" and "tied" in t.reason
    assert t.details["panel"]["tied"] is True
    assert combine_panel(split, m2, tie="strict").passed is False
    assert combine_panel(split, m2, tie="first").passed is True
    assert combine_panel(split[::-1], m2, tie="first").passed is False


def test_pairwise_winners() -> None:
    w = [_r(1.0, winner="a"), _r(0.0, winner="b"), _r(1.0, winner="a")]
    maj = combine_panel(w, M3, rule="majority")
    assert (maj.winner, maj.score) == ("a", 1.0)
    assert maj.passed is None
    tie_votes = [_r(0.5, winner="tie"), _r(0.0, winner="b"), _r(1.0, winner="a")]
    assert combine_panel(tie_votes, M3).status == "unscored"  # 1 a, 1 b: tied
    assert combine_panel(tie_votes, M3, tie="strict").winner == "tie"
    assert combine_panel(tie_votes, M3, tie="first").winner == "tie"  # the first grader's vote
    assert combine_panel(w, M3, rule="all_pass").winner == "tie"
    assert combine_panel([w[0], w[2], w[0]], M3, rule="all_pass").winner == "a"
    assert combine_panel(w, M3, rule="mean").winner == "a"  # mean 2/3 leans to a
    weighted = [PanelMember("openai:a"), PanelMember("openai:b", weight=5), PanelMember("x:c")]
    assert combine_panel(w, weighted, rule="weighted").winner == "b"


def test_a_panel_is_refused_when_its_options_make_no_sense() -> None:
    inner = LLMJudge(rubric="- correct")
    with pytest.raises(UserError, match="non-empty list"):
        PanelEvaluator(inner=inner, members=())
    with pytest.raises(OptionError, match="quorum"):
        PanelEvaluator(inner=inner, members=(PanelMember("openai:a"),), quorum=2)
    with pytest.raises(OptionError, match="rule"):
        PanelEvaluator(inner=inner, members=(PanelMember("openai:a"),), rule="mode")  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="min has no meaning"):
        PanelEvaluator(inner=referee.judges.Pairwise(), members=(PanelMember("openai:a"),), rule="min")
    with pytest.raises(UserError, match="weight"):
        PanelMember("openai:a", weight=float("nan"))
    with pytest.raises(UserError, match="unknown field"):
        PanelMember.parse({"provider": "openai", "key": "sk-1"})


def _judge(score: float | str, *, model: str = "m") -> referee.Judge:
    reply = score if isinstance(score, str) else json.dumps({"overall_score": score})
    return referee.Judge(FakeProvider([reply], model=model, input_tokens=100, output_tokens=10),
                         input_price_per_mtok=1.0, output_price_per_mtok=2.0, cache=False)


CASES = [{"id": f"c{i}", "input": "2+2?", "output": "4"} for i in range(3)]


def test_evaluate_with_a_panel_of_three_keeps_each_judge_in_the_row_and_counts_every_call() -> None:
    judges = [_judge(0.9, model="j1"), _judge(0.8, model="j2"), _judge(0.1, model="j3")]
    res = referee.evaluate(CASES, [LLMJudge(rubric="- correct")], judge=judges, progress=False)
    assert [r.status for r in res.rows] == ["scored"] * 3
    row = res.rows[0]
    assert row.passed is True and row.score == pytest.approx(0.85)
    rec = panel_of(row)
    assert rec is not None and [m.judge for m in rec.members] == ["fake:j1", "fake:j2", "fake:j3"]
    assert [m.vote for m in rec.members] == ["pass", "pass", "fail"]
    # Each judge: 100 input and 10 output tokens at $1 / $2 per million = $0.00012; the row has all three.
    assert [m.cost_usd for m in rec.members] == [pytest.approx(0.00012)] * 3
    assert row.cost_usd == pytest.approx(0.00036)
    t = res.manifest.totals
    assert t.provider_calls == 9 and t.cost_usd == pytest.approx(3 * 0.00036)
    assert res.manifest.extra["panel"]["llm_judge"]["judges"] == ["fake:j1", "fake:j2", "fake:j3"]
    assert "panel_split" in row.flags


def test_a_panel_of_one_is_that_judge() -> None:
    one = referee.evaluate(CASES[:1], [LLMJudge(rubric="- correct")], judge=[_judge(0.9)], progress=False)
    alone = referee.evaluate(CASES[:1], [LLMJudge(rubric="- correct")], judge=_judge(0.9), progress=False)
    assert one.rows[0].score == alone.rows[0].score and one.rows[0].passed == alone.rows[0].passed
    rec = panel_of(one.rows[0])
    assert rec is not None and rec.quorum == 1 and rec.agreement == 1.0


def test_two_identical_judges_agree_and_one_that_always_errors_is_left_out() -> None:
    twin = _judge(0.9, model="same")
    res = referee.evaluate(CASES[:2], [LLMJudge(rubric="- correct")], judge=[twin, twin], progress=False)
    assert all(panel_of(r).agreement == 1.0 for r in res.rows)  # type: ignore[union-attr]
    broken = _judge("no verdict here", model="broken")
    res = referee.evaluate(CASES, [LLMJudge(rubric="- correct")], judge=[_judge(0.9), _judge(0.8), broken],
                           progress=False)
    assert [r.status for r in res.rows] == ["scored"] * 3  # 2 of 3 graded: the quorum holds
    assert [m.status for m in panel_of(res.rows[0]).members] == ["scored", "scored", "unscored"]  # type: ignore
    # With a quorum of all three, every case is unscored: never a partial vote presented as the verdict.
    res = referee.evaluate(CASES, [LLMJudge(rubric="- correct")], judge=[_judge(0.9), _judge(0.8), broken],
                           panel={"quorum": 3}, progress=False)
    assert [r.status for r in res.rows] == ["unscored"] * 3 and not res.passed


def test_a_judge_whose_reply_copies_another_counts_once_in_the_effective_votes() -> None:
    from referee.stats._panel import effective_votes

    a, copy = _judge(0.9, model="a"), _judge(0.9, model="copy")
    res = referee.evaluate(CASES, [LLMJudge(rubric="- correct")], judge=[a, copy, _judge(0.2, model="c")],
                           panel={"rule": "mean"}, progress=False)
    votes = [[m.vote for m in panel_of(r).members] for r in res.rows]  # type: ignore[union-attr]
    by_judge = [list(col) for col in zip(*votes, strict=True)]
    assert by_judge[0] == by_judge[1]
    assert effective_votes(by_judge[:2], ["pass"] * 3).estimate in (None, 1.0)


def test_dry_run_counts_every_judge() -> None:
    from referee import estimate_run
    from referee.cases import Case
    from referee.suites import with_panel
    from referee.suites._loader import suite_from_dict

    suite = suite_from_dict({"cases": [c for c in CASES], "evaluators": [{"llm_judge": {"rubric": "- ok"}}]})
    assert isinstance(suite.cases[0], Case)
    one = estimate_run(suite, provider="openai", model="gpt-4o-mini", input_price=1, output_price=1)
    three = estimate_run(with_panel(suite, ["openai:a", "openai:b", "openai:c"]), provider="openai",
                         model="gpt-4o-mini", input_price=1, output_price=1)
    assert three.judge.calls == 3 * one.judge.calls == 9
    assert one.judge.cost_usd is not None
    assert three.judge.cost_usd == pytest.approx(3 * one.judge.cost_usd, rel=1e-3)  # tokens: chars // 4
    assert "a panel judges llm_judge: one call per judge" in three.describe()
    # The same prompt to three judges is three calls: each request names its judge, so no count merges them.
    panel = with_panel(suite, ["openai:a", "openai:b", "openai:c"]).specs[0].evaluator
    reqs = panel.call_requests(suite.cases[0], suite.cases[0].output)  # type: ignore[attr-defined]
    assert len({json.dumps(r.cache_material(), sort_keys=True) for r in reqs}) == 3
    assert [r.judge for r in reqs] == ["openai:a", "openai:b", "openai:c"]


def _pairwise_judge(prefers: str, model: str) -> referee.Judge:
    """Picks whichever response holds ``prefers`` (in either order: a judge without position bias)."""
    def reply(req: object) -> str:
        text = " ".join(m.content for m in req.messages)  # type: ignore[attr-defined]
        other = "BAD" if prefers == "GOOD" else "GOOD"
        first = text.rfind(prefers) < text.rfind(other)
        return json.dumps({"winner": "response_1" if first else "response_2", "rationale": "r"})

    return referee.Judge(FakeProvider(reply, model=model), cache=False)


def test_a_panel_of_pairwise_judges_names_the_winner_most_judges_name() -> None:
    cases = [{"id": "p1", "input": "q", "output_a": "GOOD answer", "output_b": "BAD answer"},
             {"id": "p2", "input": "q", "output_a": "BAD answer", "output_b": "GOOD answer"}]
    judges = [_pairwise_judge("GOOD", "g1"), _pairwise_judge("BAD", "contrarian"), _pairwise_judge("GOOD", "g2")]
    res = referee.evaluate(cases, [referee.judges.Pairwise()], judge=judges, progress=False)
    assert [r.winner for r in res.rows] == ["a", "b"]
    rec = panel_of(res.rows[0])
    assert rec is not None and [m.winner for m in rec.members] == ["a", "b", "a"]
    assert rec.agreement == pytest.approx(2 / 3)
    assert res.rows[0].usage is not None and res.rows[0].usage.calls == 6  # two orders x three judges


def test_a_huge_rationale_is_cut_in_the_record_and_a_bad_score_is_an_error_vote() -> None:
    long = CheckResult(score=0.9, passed=True, reason="x" * 50_000)
    res = combine_panel([long, _r(0.8, True), _r(0.7, True)], M3)
    assert len(res.details["panel"]["members"][0]["reason"]) == 500
    # A judge evaluator returning a score outside 0-1 (a buggy plugin) is an error vote, left out by the quorum.
    import asyncio

    from referee.evaluators._panel import _timed

    class Bad(LLMJudge):
        async def evaluate_async(self, case, output):  # type: ignore[no-untyped-def]  # noqa: ANN001, ANN202
            return CheckResult(score=7.0)

    r, _ = asyncio.run(_timed(Bad(rubric="- x"), None, None))  # type: ignore[arg-type]
    assert r.status == "error" and "scores are 0-1" in r.reason
