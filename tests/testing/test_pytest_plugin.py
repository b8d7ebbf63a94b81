"""The pytest plugin, exercised in a separate pytest run (pytester): fixtures, assert_eval, gates."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow  # subprocesses: `pytest -m 'not slow'` skips them in a quick loop


def test_assert_eval_passes_and_fails_with_the_reasons(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_evals="""
        import pytest
        from referee.testing.pytest_plugin import EvalFailed

        CASES = [{"id": "ok", "output": "Refunds take 5 business days."},
                 {"id": "bad", "output": "Refunds happen immediately."}]

        def test_all_good(assert_eval):
            rows = assert_eval(cases=CASES[:1], evaluators=[{"contains": {"value": "business days"}}])
            assert rows[0].status == "scored" and rows[0].score == 1.0

        def test_every_case_must_pass_when_asked(assert_eval):
            with pytest.raises(EvalFailed) as exc:
                assert_eval(cases=CASES, evaluators=[{"not_contains": ["immediately"]}], fail_under=1.0)
            assert "bad" in str(exc.value) and "--fail-under" in str(exc.value)
            assert {r.id for r in exc.value.rows} == {"ok", "bad"}

        def test_fail_under_gate(assert_eval):
            rows = assert_eval(cases=CASES, evaluators=[{"not_contains": ["immediately"]}], fail_under=0.5)
            assert sorted(r.passed for r in rows) == [False, True]

        def test_fake_judge(assert_eval, fake_judge):
            judge = fake_judge(['{"overall_score": 0.9}'])
            rows = assert_eval(cases=CASES[:1], evaluators=["llm_judge"], judge=judge)
            assert rows[0].score == 0.9 and rows[0].judge.model == "fake-judge"

        def test_suite_fixture(referee_suite, tmp_path):
            (tmp_path / "s.yaml").write_text("cases:\\n  - {id: a, output: x}\\nevaluators: [is_json]\\n")
            suite = referee_suite(tmp_path / "s.yaml")
            assert [s.name for s in suite.specs] == ["is_json"]

        @pytest.mark.asyncio
        async def test_from_an_async_test(assert_eval):
            rows = assert_eval(cases=CASES[:1], evaluators=["is_json"], fail_under=0.0)
            assert rows[0].passed is False

        def test_deliberately_failing(assert_eval):
            assert_eval(cases=CASES, evaluators=[{"not_contains": ["immediately"]}], fail_under=1.0)
    """)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=6, failed=1)
    result.stdout.fnmatch_lines(["*EvalFailed*", "*case bad*immediately*"])


def test_assert_eval_on_a_suite_file_fails_the_test_with_the_failing_cases(pytester: pytest.Pytester) -> None:
    """The suite's own gates decide; the failure message names the failed gate and the failing cases."""
    pytester.makefile(".jsonl", cases='{"id": "good-1", "output": "Refunds take 5 business days."}\n'
                                      '{"id": "bad-7", "output": "Refunds happen immediately."}\n')
    pytester.makefile(".yaml", suite="cases: cases.jsonl\nevaluators:\n  - not_contains: [immediately]\n"
                                     "gates:\n  fail_under: 0.9\n",
                      lenient="cases: cases.jsonl\nevaluators:\n  - not_contains: [immediately]\n"
                              "gates:\n  fail_under: 0.5\n")
    pytester.makepyfile(test_suite_gate="""
        def test_strict_suite(assert_eval):
            assert_eval("suite.yaml")

        def test_lenient_suite(assert_eval):
            rows = assert_eval("lenient.yaml")
            assert {r.id: r.passed for r in rows} == {"good-1": True, "bad-7": False}
    """)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*EvalFailed: suite: 1 gate(s) failed*", "*--fail-under: pass rate 50.0% < 90.0%*",
                                 "*case bad-7 (scored, score 0.0)*immediately*"])
    assert not any("case good-1" in line for line in result.stdout.lines)
