"""The per-case combination rules (``results/_combine.py``), each against values worked out by hand, and each
shown to be the rule its evaluator applies."""

from __future__ import annotations

import pytest

from referee.results._combine import (
    composite,
    composite_normalised,
    goal_times_process,
    gold_totals,
    lower_of,
    mean_of_turns,
    reward_product,
    suite_score,
)


def test_suite_score_by_rule() -> None:
    scores, weights = [1.0, 0.4], [3.0, 1.0]
    assert suite_score("weighted_mean", scores, weights, all_passed=False, critical_failed=False) == pytest.approx(
        (3 * 1.0 + 1 * 0.4) / 4)
    # all weights 0: the plain mean, not a division by zero
    assert suite_score("weighted_mean", scores, [0.0, 0.0], all_passed=False, critical_failed=False) == \
        pytest.approx(0.7)
    assert suite_score("min", scores, weights, all_passed=False, critical_failed=False) == 0.4
    assert suite_score("all_pass", scores, weights, all_passed=False, critical_failed=False) == 0.0
    assert suite_score("all_pass", scores, weights, all_passed=True, critical_failed=False) == 1.0
    assert suite_score("weighted_mean", [1.0, 1.0], [1.0, 1.0], all_passed=True, critical_failed=True) == 0.0
    # one score under weight 1 is that score, bit for bit (a one-evaluator suite keeps its evaluator's score)
    assert suite_score("weighted_mean", [0.7], [1.0], all_passed=True, critical_failed=False) == 0.7


def test_goal_times_process_caps_a_broken_trajectory() -> None:
    assert goal_times_process(1.0, [1.0, 0.5], process_failed=False, critical_failed=False, cap=0.5) == (
        0.75, "product")
    # a correct answer reached by a broken trajectory: capped at 0.5 and says so
    assert goal_times_process(1.0, [1.0, 0.8], process_failed=True, critical_failed=False, cap=0.5) == (
        0.5, "capped")
    # already below the cap: the product stands, and it is not called capped
    assert goal_times_process(0.5, [0.6], process_failed=True, critical_failed=False, cap=0.5) == (
        pytest.approx(0.3), "product")
    assert goal_times_process(None, [], process_failed=False, critical_failed=False, cap=0.5) == (1.0, "product")
    assert goal_times_process(1.0, [1.0], process_failed=True, critical_failed=True, cap=0.5) == (0.0, "critical")


def test_mean_of_turns_passes_only_when_every_turn_does() -> None:
    assert mean_of_turns([1.0, 0.5, 0.6], [True, False, True]) == (0.7, False)
    assert mean_of_turns([0.9, 0.8], [True, True]) == (0.85, True)
    assert mean_of_turns([1.0], [None]) == (1.0, False)  # a turn with no pass decision is not a pass


def test_gold_totals_and_grades() -> None:
    # 7 criteria of 0-2: total 12 of 14 = 85.7%, 6 passed: PASS at threshold 6, grade B
    scores, passed = [2, 2, 2, 2, 2, 1, 1], [True] * 6 + [False]
    assert gold_totals(scores, passed, [False] * 7, pass_threshold=6, fail_on_critical=True) == (
        12, 14, pytest.approx(12 / 14), 6, True, "B")
    # the failed criterion is critical: FAIL, and no A or B whatever the percentage
    critical = [False] * 6 + [True]
    assert gold_totals(scores, passed, critical, pass_threshold=6, fail_on_critical=True)[4:] == (False, "C")
    assert gold_totals(scores, passed, critical, pass_threshold=6, fail_on_critical=False)[4] is True
    assert gold_totals([2] * 7, [True] * 7, [False] * 7, pass_threshold=6, fail_on_critical=True)[5] == "A"
    assert gold_totals([1] * 7, [False] * 7, [False] * 7, pass_threshold=6, fail_on_critical=True)[5] == "D"


def test_the_red_team_rule_takes_the_lower_score() -> None:
    assert lower_of(None, 0.8) == 0.8
    assert lower_of(0.5, 0.8) == 0.5
    assert lower_of(1.0, 0.2) == 0.2


def test_the_reward_of_a_conversation_is_the_product_of_its_basis() -> None:
    assert reward_product([1.0, 1.0, 1.0]) == 1.0
    assert reward_product([1.0, 0.0, 1.0]) == 0.0
    assert reward_product([]) == 1.0  # an empty basis is refused when the scenario loads; the product's identity


def test_rubric_composites() -> None:
    parts = [(0.3, 4.0), (0.3, 4.0), (0.4, 4.0)]
    assert composite("weighted_sum", parts) == 4.0  # rounded: float noise does not cross a band edge
    assert composite("weighted_mean", [(2.0, 5.0), (1.0, 2.0)]) == 4.0
    assert composite("sum", [(2.0, 5.0), (1.0, 2.0)]) == 7.0
    assert composite("mean", [(2.0, 5.0), (1.0, 2.0)]) == 3.5
    assert composite_normalised("weighted_mean", [(2.0, 1.0), (1.0, 0.25)]) == pytest.approx(0.75)
    assert composite_normalised("mean", [(2.0, 1.0), (1.0, 0.25)]) == pytest.approx(0.625)


def test_each_evaluator_applies_its_rule_from_here() -> None:
    from referee.evaluators._trajectory_combine import combine
    from referee.evaluators._trajectory_judge import combine_criteria
    from referee.results import CriterionScore
    from referee.results._check import CheckResult

    process = [("tool_used", CheckResult(score=1.0, passed=True)), ("tool_args", CheckResult(score=0.0,
                                                                                             passed=False))]
    assert combine(1.0, process, cap=0.5) == (0.5, False, "goal x process")  # 1 x 0.5, not above the cap
    crit = [CriterionScore(id="outcome", score=1.0), CriterionScore(id="args", score=0.9),
            CriterionScore(id="tools", score=0.4)]
    assert combine_criteria(crit, "outcome", cap=0.5) == (0.5, "capped at 0.5: a process criterion is below 0.5")
