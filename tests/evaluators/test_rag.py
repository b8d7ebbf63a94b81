"""The claim-level RAG metrics: each definition on hand-computed cases (a scripted judge over the real HTTP client),
zero claims and missing inputs unscored, quotes checked in their chunk, steps shared between metrics."""

from __future__ import annotations

import re
from typing import Any

import pytest

import referee
from referee.evaluators._rag import average_precision, is_refusal
from tests.support.claims import ClaimsJudge, judge_for

Q = "Where is the Eiffel Tower and when was it finished?"
CTX1 = "The Eiffel Tower is a wrought-iron tower in Paris. It was finished in 1889."
CTX2 = "Bananas are yellow fruit grown in the tropics."
ANSWER = "The tower is in Paris. It was finished in 1889. It is made of gold."
REF = "The Eiffel Tower stands in Paris. It was finished in 1889."


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")


def _case(**over: Any) -> dict[str, Any]:
    return {"id": "c1", "input": Q, "output": ANSWER, "reference": REF, "contexts": [CTX1, CTX2], **over}


def _run(server: Any, judge: ClaimsJudge, evaluators: list[Any], cases: list[dict[str, Any]] | None = None
         ) -> referee.EvalResult:
    server.responder = judge
    return referee.evaluate(cases or [_case()], evaluators, judge=judge_for(server), progress=False)


ANSWER_CLAIMS = ["The Eiffel Tower is in Paris.", "The Eiffel Tower was finished in 1889.",
                 "The Eiffel Tower is made of gold."]
REF_CLAIMS = ["The Eiffel Tower stands in Paris.", "The Eiffel Tower was finished in 1889."]


def _judge(**over: Any) -> ClaimsJudge:
    supports = {
        ANSWER_CLAIMS[0]: [("wrought-iron", "a wrought-iron tower in Paris"), ("stands in Paris", "stands in Paris")],
        ANSWER_CLAIMS[1]: [("wrought-iron", "It was finished in 1889"), ("stands in", "It was finished in 1889")],
        REF_CLAIMS[0]: [("wrought-iron", "tower in Paris"), ("made of gold", "The tower is in Paris")],
        REF_CLAIMS[1]: [("wrought-iron", "finished in 1889"), ("made of gold", "It was finished in 1889")],
    }
    base: dict[str, Any] = {"claims": {ANSWER: ANSWER_CLAIMS, REF: REF_CLAIMS}, "supports": supports,
                            "relevant": {ANSWER_CLAIMS[0], ANSWER_CLAIMS[1]}}
    base.update(over)
    return ClaimsJudge(**base)


def test_faithfulness_counts_the_answer_claims_a_chunk_supports(fake_server: Any) -> None:
    r = _run(fake_server, _judge(), [referee.judges.Faithfulness()])
    row = r.rows[0]
    assert row.status == "scored" and row.score == pytest.approx(2 / 3)
    assert [c.id for c in row.criteria] == ["a1", "a2", "a3"]
    assert [c.score for c in row.criteria] == [1.0, 1.0, 0.0]
    assert row.criteria[0].evidence == ["a wrought-iron tower in Paris"] and row.criteria[0].grounded is True
    assert "ctx1" in (row.criteria[0].rationale or "")
    assert row.details["numerator"] == 2 and row.details["denominator"] == 3
    claim = row.details["claims"][0]
    assert claim["checks"]["contexts"]["by"] == ["ctx1"]
    assert claim["checks"]["contexts"]["supports"][0] == {"passage": "ctx1", "quote": "a wrought-iron tower in Paris",
                                                          "found": True, "related": True, "match": 100.0}
    assert "a3" in (row.rationale or "") and "gold" in (row.rationale or "")


def test_all_supported_and_none_supported(fake_server: Any) -> None:
    every = {c: [("wrought-iron", q)] for c, q in zip(ANSWER_CLAIMS[:2], ["in Paris", "finished in 1889"], strict=True)}
    r = _run(fake_server, _judge(claims={ANSWER: ANSWER_CLAIMS[:2]}, supports=every), [referee.judges.Faithfulness()])
    assert r.rows[0].score == 1.0 and r.rows[0].passed is True
    r = _run(fake_server, _judge(supports={}), [referee.judges.Faithfulness()])
    assert r.rows[0].score == 0.0 and r.rows[0].passed is False
    assert all(c.grounded is None for c in r.rows[0].criteria)  # nothing was cited


def test_zero_claims_is_unscored_never_a_number(fake_server: Any) -> None:
    metrics = [referee.judges.Faithfulness(), referee.judges.AnswerRelevancy(), referee.judges.ClaimPrecision()]
    for m in metrics:
        r = _run(fake_server, _judge(claims={}), [m])
        assert r.rows[0].status == "unscored" and r.rows[0].score is None, m.name
        assert "no claims" in (r.rows[0].error or "")
        assert r.passed is False  # nothing graded never passes


def test_an_ungrounded_quote_is_asked_again_then_leaves_the_claim_unsupported(fake_server: Any) -> None:
    judge = _judge(supports={ANSWER_CLAIMS[0]: [("wrought-iron", "the Eiffel Tower can be found in Paris")]})
    r = _run(fake_server, judge, [referee.judges.Faithfulness()])
    row = r.rows[0]
    assert judge.count("referee_claim_support") == 2  # re-asked once
    assert row.score == 0.0
    assert row.criteria[0].grounded is False and row.criteria[0].score == 0.0
    assert "quote not found in ctx1" in (row.criteria[0].rationale or "")
    assert "ungrounded" in row.flags


def test_context_recall_and_precision(fake_server: Any) -> None:
    r = _run(fake_server, _judge(), [referee.judges.ContextRecall()])
    assert r.rows[0].score == 1.0
    one = _judge(supports={REF_CLAIMS[0]: [("wrought-iron", "tower in Paris")]})
    assert _run(fake_server, one, [referee.judges.ContextRecall()]).rows[0].score == pytest.approx(1 / 2)
    # ranks: irrelevant, relevant, irrelevant, relevant -> (1/2 + 2/4) / 2
    ctx = [CTX2, CTX1, "Apples are red.", "Paris is where the tower stands; it was finished in 1889."]
    judge = _judge(supports={REF_CLAIMS[0]: [("wrought-iron", "tower in Paris"), ("where the tower", "tower stands")],
                             REF_CLAIMS[1]: [("where the tower", "finished in 1889")]})
    row = _run(fake_server, judge, [referee.judges.ContextPrecision()], [_case(contexts=ctx)]).rows[0]
    assert row.score == pytest.approx(0.5)
    assert [c.passed for c in row.criteria] == [False, True, False, True]
    assert [c["relevant"] for c in row.details["chunks"]] == [False, True, False, True]


def test_average_precision_by_hand() -> None:
    assert average_precision([True, False, True]) == pytest.approx((1 + 2 / 3) / 2)
    assert average_precision([False, False]) == 0.0
    assert average_precision([False, True]) == pytest.approx(0.5)


def test_claim_precision_recall_f1(fake_server: Any) -> None:
    ref = "The Eiffel Tower stands in Paris. It was finished in 1889. It is 330 metres tall."
    g = [*REF_CLAIMS, "The Eiffel Tower is 330 metres tall."]
    supports = {ANSWER_CLAIMS[0]: [("stands in Paris", "stands in Paris")],
                ANSWER_CLAIMS[1]: [("stands in Paris", "It was finished in 1889")],
                REF_CLAIMS[0]: [("made of gold", "The tower is in Paris")]}
    judge = _judge(claims={ANSWER: ANSWER_CLAIMS, ref: g}, supports=supports)
    r = _run(fake_server, judge, [referee.judges.ClaimPrecision(), referee.judges.ClaimRecall(),
                                  referee.judges.ClaimF1()], [_case(reference=ref)])
    checks = r.rows[0].checks
    p, rec = 2 / 3, 1 / 3
    assert checks["claim_precision"].score == pytest.approx(p, abs=1e-6)
    assert checks["claim_recall"].score == pytest.approx(rec, abs=1e-6)
    assert checks["claim_f1"].score == pytest.approx(2 * p * rec / (p + rec), abs=1e-6)
    # every text extracted once and every verification made once for the three metrics
    assert judge.count("referee_claims") == 2 and judge.count("referee_claim_support") == 2


def test_context_utilization(fake_server: Any) -> None:
    ref = "The Eiffel Tower stands in Paris. It was finished in 1889. It is 330 metres tall."
    g = [*REF_CLAIMS, "The Eiffel Tower is 330 metres tall."]
    supports = {g[0]: [("wrought-iron", "tower in Paris"), ("made of gold", "The tower is in Paris")],
                g[1]: [("wrought-iron", "finished in 1889")], g[2]: [("made of gold", "made of gold")]}
    judge = _judge(claims={ANSWER: ANSWER_CLAIMS, ref: g}, supports=supports)
    row = _run(fake_server, judge, [referee.judges.ContextUtilization()], [_case(reference=ref)]).rows[0]
    # in the contexts: g1, g2; of those, in the answer: g1 -> 1/2 (g3 is in the answer, not in the contexts)
    assert row.score == pytest.approx(0.5)
    assert [c.id for c in row.criteria] == ["r1", "r2"]


def test_noise_sensitivity_hallucination_and_self_knowledge(fake_server: Any) -> None:
    rel = "Paris holds the tower. The tower was finished in 1889. The tower is painted every seven years."
    irr = "Gold towers are common in fiction. The tower was moved to Lyon."
    answer = "Five claims."
    a = ["The tower is in Paris.", "The tower is painted yearly.", "The tower was moved to Lyon.",
         "The tower is 5 km tall.", "The tower has three levels."]
    g = ["The Eiffel Tower is located in Paris.", "The tower was finished in 1889."]
    supports = {
        a[0]: [("Paris holds", "Paris holds the tower"), ("in Paris", "The tower is in Paris")],  # correct, relevant
        a[1]: [("Paris holds", "The tower is painted every seven years")],  # incorrect, from a relevant chunk
        a[2]: [("Gold towers", "The tower was moved to Lyon")],  # incorrect, from an irrelevant chunk only
        # a[3]: incorrect, from no chunk (hallucinated)
        a[4]: [("in Paris", "The tower has three levels")],  # correct, from no chunk (self-knowledge)
        g[0]: [("Paris holds", "Paris holds the tower")], g[1]: [("Paris holds", "finished in 1889")]}
    ref_text = "The tower is in Paris. The tower has three levels."
    judge = _judge(claims={answer: a, ref_text: g}, supports=supports)
    case = _case(output=answer, reference=ref_text, contexts=[rel, irr])
    r = _run(fake_server, judge, [referee.judges.NoiseSensitivity(),
                                  {"noise_sensitivity": {"chunks": "irrelevant"}, "id": "noise_irrelevant"},
                                  referee.judges.Hallucination(), referee.judges.SelfKnowledge()], [case])
    checks = r.rows[0].checks
    assert checks["noise_sensitivity"].score == pytest.approx(1 / 5)
    assert checks["noise_irrelevant"].score == pytest.approx(1 / 5)
    assert checks["hallucination"].score == pytest.approx(1 / 5)
    assert checks["self_knowledge"].score == pytest.approx(1 / 5)
    assert checks["hallucination"].passed is False  # 0.2 > 0.1: lower is better
    crit = {c.id: c for c in checks["hallucination"].criteria}
    assert crit["a4"].score == 1.0 and crit["a4"].passed is False and crit["a1"].passed is True


def test_answer_relevancy_and_the_refusal_rule(fake_server: Any) -> None:
    row = _run(fake_server, _judge(), [referee.judges.AnswerRelevancy()]).rows[0]
    assert row.score == pytest.approx(2 / 3)
    refusal = _case(output="I don't know.")
    row = _run(fake_server, _judge(), [referee.judges.AnswerRelevancy()], [refusal]).rows[0]
    assert row.status == "unscored" and "refusal" in (row.error or "")
    judge = _judge()
    row = _run(fake_server, judge, [referee.judges.AnswerRelevancy(refusal="zero")], [refusal]).rows[0]
    assert row.status == "scored" and row.score == 0.0 and 'refusal="zero"' in (row.rationale or "")
    assert judge.seen == []  # the rule needs no judge call


@pytest.mark.parametrize(("over", "metric", "why"), [
    ({"contexts": None}, referee.judges.Faithfulness, "no retrieved contexts"),
    ({"contexts": ["", "   \n"]}, referee.judges.Faithfulness, "every chunk is empty"),
    ({"reference": None}, referee.judges.ContextRecall, "no reference"),
    ({"reference": "  "}, referee.judges.ClaimF1, "no reference"),
    ({"output": ""}, referee.judges.Faithfulness, "no answer"),
    ({"input": None}, referee.judges.AnswerRelevancy, "no question"),
    ({"output": "Sorry, I cannot answer that."}, referee.judges.Hallucination, "refusal"),
])
def test_missing_inputs_are_unscored_with_the_reason(fake_server: Any, over: dict[str, Any], metric: Any,
                                                     why: str) -> None:
    case = {k: v for k, v in _case(**over).items() if v is not None}
    judge = _judge()
    row = _run(fake_server, judge, [metric()], [case]).rows[0]
    assert row.status == "unscored" and row.score is None
    assert why in (row.error or "")
    assert judge.seen == []


def test_context_utilization_with_no_reference_claim_in_the_contexts_is_unscored(fake_server: Any) -> None:
    row = _run(fake_server, _judge(supports={}), [referee.judges.ContextUtilization()]).rows[0]
    assert row.status == "unscored" and "nothing to divide by" in (row.error or "")


def test_five_metrics_extract_each_text_once(fake_server: Any) -> None:
    judge = _judge()
    metrics = [referee.judges.Faithfulness(), referee.judges.ContextRecall(), referee.judges.ContextPrecision(),
               referee.judges.AnswerRelevancy(), referee.judges.Hallucination()]
    r = _run(fake_server, judge, metrics, [_case(), _case(id="c2")])
    assert all(row.status == "scored" for row in r.rows)
    # per case: the answer and the reference extracted once; answer x chunks, reference x chunks, answer x reference
    # verified once; relevance once. The second case is the same text: shared too.
    assert judge.count("referee_claims") == 2
    assert judge.count("referee_claim_support") == 3
    assert judge.count("referee_claim_relevance") == 1
    # the metric that made a call carries its usage; the others (and the case sharing the texts) none
    assert sum(row.usage.calls for row in r.rows if row.usage is not None) == 6
    assert sum(c.details["judge_calls"] for row in r.rows for c in row.checks.values()) == 6
    assert r.manifest.totals.provider_calls == 6


def test_names_resolve_in_suites_and_refusals_are_detected() -> None:
    from referee.evaluators._plugins import build

    for name in ("faithfulness", "context_recall", "context_precision", "answer_relevancy", "claim_precision",
                 "claim_recall", "claim_f1", "context_utilization", "noise_sensitivity", "hallucination",
                 "self_knowledge"):
        assert build(name, {}).name == name
    assert is_refusal("I don't know.") and is_refusal("The context does not mention it.")
    assert not is_refusal("Paris. " * 50 + "I don't know everything, but the tower is in Paris.")
    assert not is_refusal("Refunds cannot be provided after 30 days; you cannot find them in Settings.")


def test_unbound_is_unscored() -> None:
    import asyncio

    from referee.cases import Case

    res = asyncio.run(referee.judges.Faithfulness().evaluate_async(Case("x", _case()), ANSWER))
    assert res.status == "unscored" and res.score is None


def test_repeat_measures_each_case_spread_and_flags_it_flaky(fake_server: Any, tmp_path: Any,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from tests.support.cli import run_cli

    supports_even = _judge().supports
    supports_odd = {k: v for k, v in supports_even.items() if k != ANSWER_CLAIMS[1]}

    def judge(req: Any) -> str:
        # A judge that changes its mind with the sampling seed: seed 0 and 2 support two claims, seed 1 one.
        j = _judge(supports=supports_odd if (req.body.get("seed") or 0) % 2 else supports_even)
        return j(req)

    fake_server.responder = judge
    (tmp_path / "cases.jsonl").write_text(json.dumps(_case()) + "\n", encoding="utf-8")
    (tmp_path / "suite.yaml").write_text("cases: cases.jsonl\nevaluators:\n  - faithfulness: {threshold: 0.5}\n",
                                         encoding="utf-8")
    out = tmp_path / "r.jsonl"
    code, _, err = run_cli(["run", str(tmp_path / "suite.yaml"), "--provider", "openai", "--model", "m",
                            "--base-url", fake_server.url + "/v1", "--repeat", "3", "--out", str(out),
                            "--no-gates"], capsys)
    assert code == 0, err
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert sorted(r["repeat"] for r in rows) == [0, 1, 2]
    assert sorted(r["score"] for r in rows) == pytest.approx([1 / 3, 2 / 3, 2 / 3])
    code, text, _ = run_cli(["score", str(out), "--threshold", "0.5"], capsys)
    assert "Flaky cases" in text and "3 repeats" in text
    manifest = json.loads((tmp_path / "r.manifest.json").read_text(encoding="utf-8"))
    assert manifest["judge"]["repeat"] == 3
    # the dry run counts every repeat's calls
    dry = ["run", str(tmp_path / "suite.yaml"), "--provider", "openai", "--model", "m", "--dry-run"]
    _, once, _ = run_cli(dry, capsys)
    _, thrice, _ = run_cli([*dry, "--repeat", "3"], capsys)
    calls = [int(re.search(r"(\d+) judge call", t).group(1)) for t in (once, thrice)]  # type: ignore[union-attr]
    assert calls[1] == 3 * calls[0] > 0 and "judged 3 times" in thrice


def test_dry_run_estimate_and_the_manifest_per_metric(fake_server: Any, tmp_path: Any,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from tests.support.cli import run_cli

    fake_server.responder = _judge(claims={ANSWER: ANSWER_CLAIMS, REF: REF_CLAIMS,
                                           "The tower is in Paris.": ["The tower is in Paris."]})
    cases = [_case(), _case(id="refusal", output="I don't know.", reference="The tower is in Paris.")]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    (tmp_path / "suite.yaml").write_text("cases: cases.jsonl\nevaluators:\n  - faithfulness\n  - context_precision\n"
                                         "  - context_recall\n  - answer_relevancy\n", encoding="utf-8")
    args = ["run", str(tmp_path / "suite.yaml"), "--provider", "openai", "--model", "m", "--base-url",
            fake_server.url + "/v1", "--no-gates", "--no-cache"]
    code, out, _ = run_cli([*args, "--dry-run"], capsys)
    # case 1: the answer's and the reference's claims, answer x chunks, reference x chunks, relevance = 5;
    # the refusal: its reference's claims and their check against the chunks = 2 (its answer metrics are unscored)
    assert code == 0 and "= 7 judge call(s)" in out
    assert fake_server.requests == []
    code, _, err = run_cli([*args, "--out", str(tmp_path / "r.jsonl")], capsys)
    assert code == 0, err
    manifest = json.loads((tmp_path / "r.manifest.json").read_text(encoding="utf-8"))
    assert manifest["totals"]["provider_calls"] == 7 == len(fake_server.requests)
    per = manifest["extra"]["per_evaluator"]
    assert sum(v["calls"] for v in per.values()) == 7
    assert sum(v["input_tokens"] for v in per.values()) == manifest["totals"]["input_tokens"]


_INVENTED = {"id": "sso", "input": "Which plans include single sign-on?",
             "output": "Single sign-on is included on every plan, including Free.",
             "reference": "Single sign-on is included in the Enterprise plan only.",
             "contexts": [{"id": "plans#2", "text": "Single sign-on is included in the Enterprise plan only."}]}
_GROUNDED = {**_INVENTED, "id": "ok", "output": "Single sign-on is included in the Enterprise plan only."}
_SUITE = ["context_precision", "context_recall", "answer_relevancy"]


def test_an_answer_with_invented_claims_fails_a_grounded_suite_by_default() -> None:
    """Faithfulness is critical by default beside other metrics: the invented claim (faithfulness 0, the other
    three 1: a weighted mean of 0.75) fails its case; a grounded answer still passes."""
    result = referee.evaluate([_INVENTED, _GROUNDED], ["faithfulness", *_SUITE], judge="standin", progress=False)
    bad, good = result.rows
    assert bad.check("faithfulness").score == 0.0
    assert [bad.check(n).score for n in _SUITE] == [1.0, 1.0, 1.0]
    assert bad.passed is False and bad.score == 0.0 and "critical_failed" in bad.flags
    assert good.passed is True and good.score == 1.0


def test_critical_false_keeps_the_weighted_mean_and_alone_faithfulness_keeps_its_score() -> None:
    result = referee.evaluate([_INVENTED], [{"faithfulness": {}, "critical": False}, *_SUITE], judge="standin",
                              progress=False)
    assert result.rows[0].score == 0.75 and result.rows[0].passed is True
    alone = referee.evaluate([{**_INVENTED, "output": "Single sign-on is included in the Enterprise plan only. "
                                                      "It is free on every plan."}],
                             ["faithfulness"], judge="standin", progress=False).rows[0]
    assert alone.score is not None and 0 < alone.score < 1 and "critical_failed" not in alone.flags   # its own fraction, not zeroed
