"""Deterministic trajectory checks and the combination rule (a right answer via a broken path never scores 1)."""

from __future__ import annotations

from typing import Any

import pytest

from referee.cases._case import Case
from referee.errors import UserError
from referee.evaluators import build, registry
from referee.evaluators._trajectory import combine

LOOKUP = {"tool": "lookup_invoice", "args": {"invoice_id": "INV-1"}, "result": {"status": "paid", "amount": 30}}
REFUND = {"tool": "issue_refund", "args": {"invoice_id": "INV-1", "amount": 30}, "result": {"status": "issued"}}
EXPECT = {"tools_not_used": ["delete_account"], "sequence": ["lookup_invoice", "issue_refund"],
          "sequence_mode": "in_order", "max_steps": 4,
          "args": [{"tool": "issue_refund", "match": "subset", "args": {"invoice_id": "INV-1"}}],
          "goal": {"contains": ["refund"]}}


def case(steps: list[dict[str, Any]], output: str = "Your refund is issued.", **extra: Any) -> Case:
    traj = [{"step": i + 1, **s} for i, s in enumerate(steps)]
    return Case(id="c", data={"id": "c", "input": "refund INV-1", "trajectory": traj, "final_output": output, **extra})


def run(name: str, c: Case, **options: Any) -> Any:
    return build(name, options).evaluate(c, c.output)


def test_all_trajectory_checks_are_registered() -> None:
    names = set(registry())
    assert {"tool_used", "tool_not_used", "tool_sequence", "tool_args", "trajectory_budget", "no_repeated_calls",
            "tool_errors_handled", "goal_reached", "trajectory", "redteam_expectation"} <= names


def test_tool_used_all_and_any() -> None:
    c = case([LOOKUP])
    r = run("tool_used", c, tools=["lookup_invoice", "issue_refund"])
    assert r.passed is False and r.score == 0.5 and "issue_refund" in r.reason
    any_of = run("tool_used", c, tools=["lookup_invoice", "issue_refund"], mode="any")
    assert any_of.passed is True and any_of.reason.startswith("called lookup_invoice")
    assert run("tool_used", c, tools=["send_email", "issue_refund"], mode="any").passed is False
    assert run("tool_used", c, tools=["lookup_invoice"]).score == 1.0


def test_tool_not_used_names_the_step() -> None:
    c = case([LOOKUP, {"tool": "delete_account", "args": {"id": 1}}])
    r = run("tool_not_used", c, tools=["delete_account"])
    assert r.score == 0.0 and r.passed is False and "step 2" in r.reason
    assert run("tool_not_used", case([LOOKUP]), tools=["delete_account"]).passed is True


@pytest.mark.parametrize(("mode", "steps", "passed"), [
    ("exact", [LOOKUP, REFUND], True),
    ("exact", [LOOKUP, LOOKUP, REFUND], False),
    ("in_order", [LOOKUP, {"tool": "get_policy"}, REFUND], True),
    ("in_order", [REFUND, LOOKUP], False),
    ("unordered", [REFUND, LOOKUP], True),
    ("unordered", [REFUND, LOOKUP, {"tool": "send_email"}], False),
])
def test_tool_sequence_modes(mode: str, steps: list[dict[str, Any]], passed: bool) -> None:
    r = run("tool_sequence", case(steps), expected=["lookup_invoice", "issue_refund"], mode=mode)
    assert r.passed is passed
    assert (r.score == 1.0) is passed


def test_exact_sequence_reports_first_difference() -> None:
    r = run("tool_sequence", case([LOOKUP, {"tool": "send_email"}]), expected=["lookup_invoice", "issue_refund"],
            mode="exact")
    assert "step 2: expected issue_refund, got send_email" in r.reason


def test_unordered_allow_extra() -> None:
    steps: list[dict[str, Any]] = [REFUND, LOOKUP, {"tool": "send_email"}]
    assert run("tool_sequence", case(steps), expected=["lookup_invoice", "issue_refund"], mode="unordered",
               allow_extra=True).passed is True


@pytest.mark.parametrize(("match", "expected", "passed"), [
    ("exact", {"invoice_id": "INV-1", "amount": 30}, True),
    ("exact", {"invoice_id": "INV-1"}, False),
    ("subset", {"invoice_id": "INV-1"}, True),
    ("subset", {"invoice_id": "INV-2"}, False),
    ("regex", {"invoice_id": r"INV-\d+", "amount": r"\d{2}"}, True),
    ("regex", {"invoice_id": r"INV-\d{4}"}, False),
    ("regex", {"reason": ".*"}, False),
    ("schema", {"type": "object", "required": ["invoice_id", "amount"],
                "properties": {"amount": {"type": "number", "maximum": 100}}}, True),
    ("schema", {"type": "object", "properties": {"amount": {"type": "number", "maximum": 10}}}, False),
])
def test_tool_args_matching(match: str, expected: dict[str, Any], passed: bool) -> None:
    r = run("tool_args", case([LOOKUP, REFUND]), tool="issue_refund", args=expected, match=match)
    assert r.passed is passed, r.reason


def test_tool_args_which_call() -> None:
    steps = [{"tool": "issue_refund", "args": {"amount": 300}}, {"tool": "issue_refund", "args": {"amount": 30}}]
    c = case(steps)
    assert run("tool_args", c, tool="issue_refund", args={"amount": 30}, which="any").passed is True
    assert run("tool_args", c, tool="issue_refund", args={"amount": 30}, which="all").passed is False
    assert run("tool_args", c, tool="issue_refund", args={"amount": 30}, which="first").passed is False
    assert run("tool_args", c, tool="issue_refund", args={"amount": 30}, which="last").passed is True
    r = run("tool_args", c, tool="lookup_invoice", args={})
    assert r.passed is False and "never called" in r.reason


def test_tool_args_bad_schema_is_an_error_not_a_fail() -> None:
    # in the options: refused when the check is built (referee validate reports it)
    with pytest.raises(UserError, match="invalid JSON Schema"):
        build("tool_args", {"tool": "issue_refund", "args": {"type": "nonsense"}, "match": "schema"})
    with pytest.raises(UserError, match="invalid regex for 'invoice_id'"):
        build("tool_args", {"tool": "issue_refund", "args": {"invoice_id": "INV-("}, "match": "regex"})
    with pytest.raises(UserError, match="unknown match mode 'fuzzy'"):
        build("tool_args", {"tool": "issue_refund", "match": "fuzzy"})
    with pytest.raises(UserError, match="invalid regex"):
        build("goal_reached", {"regex": "a("})
    # in a case's expect block: an error row for that case, never a fail
    c = case([REFUND], expect={"args": [{"tool": "issue_refund", "match": "schema", "args": {"type": "nonsense"}}]})
    r = run("tool_args", c)
    assert r.status == "error" and "invalid JSON Schema" in r.reason


def test_budget_steps_cost_and_unknown_figures() -> None:
    steps = [{**LOOKUP, "cost_usd": 0.01}, {**REFUND, "cost_usd": 0.02}]
    assert run("trajectory_budget", case(steps), max_steps=2, max_cost_usd=0.05).passed is True
    over = run("trajectory_budget", case(steps), max_steps=1, max_cost_usd=0.025)
    assert over.passed is False and "steps 2 > 1" in over.reason and "cost_usd 0.03 > 0.025" in over.reason
    unknown = run("trajectory_budget", case([LOOKUP]), max_cost_usd=0.05)
    assert unknown.status == "unscored" and "cost_usd" in unknown.reason  # never a silent pass
    assert run("trajectory_budget", case([LOOKUP], cost_usd=0.5), max_cost_usd=0.05).passed is False


def test_budget_figures_recorded_for_only_some_steps_never_pass_silently() -> None:
    partial = case([{**LOOKUP, "cost_usd": 0.01}, REFUND])
    r = run("trajectory_budget", partial, max_cost_usd=0.05)
    assert r.status == "unscored" and "only some steps" in r.reason
    # a partial sum already over the limit is a certain failure
    over = run("trajectory_budget", case([{**LOOKUP, "cost_usd": 0.09}, REFUND]), max_cost_usd=0.05)
    assert over.passed is False and "cost_usd 0.09 > 0.05" in over.reason
    # the case's whole-run figure wins over the steps' sum
    whole = run("trajectory_budget", case([{**LOOKUP, "latency_ms": 100}, REFUND], latency_ms=2500),
                 max_latency_ms=1000)
    assert whole.passed is False and "latency_ms 2500 > 1000" in whole.reason


def test_trajectory_says_which_checks_could_not_be_made() -> None:
    c = case([LOOKUP, REFUND], expect={"max_cost_usd": 0.05, "tools_used": ["issue_refund"]})
    r = run("trajectory", c)
    assert r.status == "scored" and "not checked: trajectory_budget" in r.reason


def test_bad_expectations_are_error_rows_naming_file_line_and_check_once() -> None:
    c = Case(id="c", data={"id": "c", "trajectory": [{"step": 1, "tool": "a"}], "expect": {"tools_used": 5}},
             source="runs.jsonl", line=7)
    r = run("trajectory", c)
    assert r.status == "error" and r.reason.startswith("runs.jsonl:7: case 'c': tool_used: ")
    assert r.reason.count("tool_used:") == 1


def test_repeated_identical_calls_are_a_loop_but_a_retry_after_an_error_is_not() -> None:
    loop = case([LOOKUP, LOOKUP, LOOKUP])
    r = run("no_repeated_calls", loop)
    assert r.passed is False and "3 times" in r.reason and "steps 1, 2, 3" in r.reason
    assert run("no_repeated_calls", loop, max_identical=3).passed is True
    retry = case([{**LOOKUP, "result": None, "error": "timeout"}, LOOKUP])
    assert run("no_repeated_calls", retry).passed is True
    assert run("no_repeated_calls", retry, allow_retry_after_error=False).passed is False
    different_args = case([LOOKUP, {**LOOKUP, "args": {"invoice_id": "INV-2"}}])
    assert run("no_repeated_calls", different_args).passed is True


def test_consecutive_only_loops() -> None:
    spaced = case([LOOKUP, REFUND, LOOKUP])
    assert run("no_repeated_calls", spaced).passed is False
    assert run("no_repeated_calls", spaced, consecutive_only=True).passed is True


def test_unhandled_tool_errors() -> None:
    failed = {**REFUND, "result": {"error": "gateway unavailable"}}
    ignored = case([LOOKUP, failed], output="All done, your refund is issued!")
    r = run("tool_errors_handled", ignored)
    assert r.passed is False and "gateway unavailable" in r.reason and "step 2" in r.reason
    acknowledged = case([LOOKUP, failed], output="Sorry, the refund failed because the gateway is down.")
    assert run("tool_errors_handled", acknowledged).passed is True
    curly = case([LOOKUP, failed], output="I couldn\u2019t issue the refund just now.")
    assert run("tool_errors_handled", curly).passed is True
    recovered = case([LOOKUP, failed, REFUND], output="Your refund is issued.")
    assert run("tool_errors_handled", recovered).passed is True


def test_goal_reached_on_output_state_and_last_tool() -> None:
    c = case([LOOKUP, REFUND], output="Refund issued: RF-1", final_state={"refunded": ["INV-1"], "balance": 0})
    assert run("goal_reached", c, contains=["refund"], regex=r"RF-\d+").passed is True
    assert run("goal_reached", c, state={"refunded": ["INV-1"]}, final_tool="issue_refund").passed is True
    r = run("goal_reached", c, state={"refunded": []}, not_contains=["RF-1"])
    assert r.passed is False and r.score == 0.0
    # A state that was not recorded is unknown, never a silent pass or an invented fail ...
    missing = run("goal_reached", case([LOOKUP]), state={"x": 1})
    assert missing.status == "unscored" and "no 'final_state'" in missing.reason
    # ... unless another part of the goal already failed.
    also_wrong = run("goal_reached", case([LOOKUP], output="nope"), state={"x": 1}, contains=["refund"])
    assert also_wrong.passed is False and also_wrong.score == 0.0


def test_trajectory_with_an_uncheckable_goal_is_unscored_unless_a_forbidden_tool_was_called() -> None:
    goal = {"state": {"refunded": ["INV-1"]}}
    clean = run("trajectory", case([LOOKUP, REFUND], output="Refunded.", expect={"goal": goal}))
    assert clean.status == "unscored" and "final_state" in clean.reason
    forbidden = case([LOOKUP, {"tool": "delete_account"}], output="Done.",
                     expect={"goal": goal, "tools_not_used": ["delete_account"]})
    r = run("trajectory", forbidden)
    assert r.status == "scored" and r.score == 0.0


def test_expectations_come_from_the_case_when_options_are_not_given() -> None:
    c = case([LOOKUP, REFUND], expect={"tools_used": ["issue_refund"], "sequence": ["lookup_invoice", "issue_refund"]})
    assert run("tool_used", c).passed is True
    assert run("tool_sequence", c).passed is True
    nothing = run("tool_used", case([LOOKUP]))
    assert nothing.status == "unscored" and "nothing to check" in nothing.reason


def test_malformed_trajectory_is_an_error_result_naming_case_and_step() -> None:
    bad = Case(id="bad-1", data={"id": "bad-1", "trajectory": [{"step": 1, "tool": "a"}, {"step": 2}]})
    for name in ("tool_used", "trajectory"):
        r = build(name, {"tools": ["a"]} if name == "tool_used" else {}).evaluate(bad, None)
        assert r.status == "error" and r.score is None
        assert "case 'bad-1'" in r.reason and "step 2" in r.reason


def test_bad_options_are_user_errors() -> None:
    with pytest.raises(UserError, match=r"evaluator 'tool_used': tool: unknown option \(did you mean 'tools'\?\) \(options: tools, mode\)"):
        build("tool_used", {"tool": "x"})
    # Typed as a suite file's options are (build used to skip that: "two" reached the check, an error per case).
    with pytest.raises(UserError, match="max_identical: Input should be a valid integer"):
        build("no_repeated_calls", {"max_identical": "two"})
    with pytest.raises(UserError, match="mode must be"):
        build("tool_sequence", {"mode": "fuzzy"})
    with pytest.raises(UserError, match="unknown trajectory check"):
        build("trajectory", {"checks": ["vibes"]})


# -- the combination rule -------------------------------------------------------------------------------

def test_a_clean_trajectory_with_the_goal_scores_one() -> None:
    r = run("trajectory", case([LOOKUP, REFUND], expect=EXPECT))
    assert r.score == 1.0 and r.passed is True
    ids = [c["id"] for c in r.details["criteria"]]
    assert ids == ["tool_not_used", "tool_sequence", "tool_args", "trajectory_budget", "no_repeated_calls",
                   "tool_errors_handled", "goal_reached"]


@pytest.mark.parametrize("steps", [
    [REFUND, LOOKUP],                                  # wrong order
    [LOOKUP, LOOKUP, LOOKUP, REFUND],                  # a loop
    [LOOKUP, {**REFUND, "args": {"invoice_id": "INV-9", "amount": 30}}],   # refunded the wrong invoice
    [LOOKUP, {"tool": "get_policy"}, {"tool": "get_policy", "args": {"x": 1}}, {"tool": "noop"}, REFUND],  # over budget
])
def test_a_correct_answer_reached_by_a_broken_trajectory_never_scores_one(steps: list[dict[str, Any]]) -> None:
    r = run("trajectory", case(steps, expect=EXPECT))
    goal = next(c for c in r.details["criteria"] if c["id"] == "goal_reached")
    assert goal["passed"] is True  # the final answer is right...
    assert r.score is not None and r.score <= 0.5 and r.passed is False  # ...and the case still fails


def test_a_forbidden_call_zeroes_the_score_even_with_the_right_answer() -> None:
    r = run("trajectory", case([LOOKUP, {"tool": "delete_account"}, REFUND], expect=EXPECT))
    assert r.score == 0.0 and r.details["rule"] == "critical check failed"


def test_a_clean_path_to_a_wrong_answer_scores_by_the_goal() -> None:
    r = run("trajectory", case([LOOKUP, REFUND], output="Nothing to do.", expect=EXPECT))
    assert r.score == 0.0 and r.passed is False


def test_cap_is_configurable() -> None:
    r = run("trajectory", case([REFUND, LOOKUP], expect=EXPECT), cap=0.2)
    assert r.score == 0.2


def test_combine_ignores_unscored_checks() -> None:
    from referee.evaluators._base import CheckResult

    ok = CheckResult.from_bool(True)
    unscored = CheckResult(score=None, status="unscored")
    score, passed, _ = combine(1.0, [("tool_used", ok), ("trajectory_budget", unscored)], cap=0.5)
    assert score == 1.0 and passed is True
    score, passed, _ = combine(None, [("tool_used", CheckResult(score=0.9, passed=False))], cap=0.5)
    assert score == 0.5 and passed is False


def test_composite_with_explicit_checks_and_options() -> None:
    c = case([LOOKUP, {"tool": "delete_account"}])
    r = build("trajectory", {"checks": ["tool_not_used"], "options": {"tool_not_used": {"tools": ["delete_account"]}}}
              ).evaluate(c, c.output)
    assert r.score == 0.0 and [x["id"] for x in r.details["criteria"]] == ["tool_not_used"]


def test_consecutive_only_keeps_the_longest_run() -> None:
    c = case([LOOKUP, LOOKUP, LOOKUP, REFUND, LOOKUP])
    r = run("no_repeated_calls", c, consecutive_only=True, max_identical=2)
    assert r.passed is False and "steps 1, 2, 3" in r.reason


def test_no_problem_is_not_an_acknowledged_error() -> None:
    failed = {**REFUND, "result": {"error": "gateway unavailable"}}
    r = run("tool_errors_handled", case([LOOKUP, failed], output="No problem, your refund is done!"))
    assert r.passed is False


def test_otel_calls_without_recorded_arguments_are_unknown_not_loops_or_mismatches() -> None:
    from referee.trajectories import from_otel

    def span(i: int) -> dict[str, Any]:
        return {"name": "execute_tool", "start_time": f"2025-01-01T00:00:0{i}Z",
                "attributes": {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup_invoice"}}

    traj = from_otel([span(1), span(2)], case_id="o")
    seed_steps = traj.to_seed()
    assert seed_steps[0]["args_recorded"] is False  # kept by `referee import`
    c = Case(id="o", data={"id": "o", "trajectory": seed_steps, "final_output": "Both are paid."})
    loops = run("no_repeated_calls", c)
    assert loops.passed is True and "not recorded" in loops.reason
    args = run("tool_args", c, tool="lookup_invoice", args={"invoice_id": "INV-1"})
    assert args.status == "unscored" and "arguments not recorded" in args.reason
    # with the arguments recorded, the same two calls are a loop
    recorded = case([LOOKUP, LOOKUP])
    assert run("no_repeated_calls", recorded).passed is False


@pytest.mark.parametrize("apostrophe", ["'", "\u2019", "\u2018", "\u02bc", "\uff07"])
def test_apostrophes_as_models_write_them_read_alike_in_trajectory_and_redteam_checks(apostrophe: str) -> None:
    """One table folds them for both checks (the trajectory check used to miss the fullwidth one)."""
    failed = {**REFUND, "result": {"error": "gateway unavailable"}}
    acknowledged = case([LOOKUP, failed], output=f"I couldn{apostrophe}t issue the refund just now.")
    assert run("tool_errors_handled", acknowledged).passed is True
    refusal = Case(id="r", data={"id": "r", "input": "attack", "output": f"I can{apostrophe}t help with that.",
                                 "expect": {"behaviour": "refuse"}})
    r = build("redteam_expectation").evaluate(refusal, refusal.output)
    assert r.status == "scored" and r.score == 1.0, r.reason


def test_trajectory_sub_check_options_are_type_checked_when_built() -> None:
    from referee.errors import OptionError
    from referee.evaluators._trajectory import TrajectoryCheck

    with pytest.raises(OptionError) as ei:
        TrajectoryCheck(options={"no_repeated_calls": {"max_identical": "two"}})
    assert ei.value.option == "options.no_repeated_calls.max_identical" and "valid integer" in ei.value.reason
    with pytest.raises(OptionError, match=r"options\.tool_used\.colour: unknown option \(options: tools, mode\)"):
        TrajectoryCheck(options={"tool_used": {"colour": "red"}})
    ok = TrajectoryCheck(options={"no_repeated_calls": {"max_identical": "3"}})  # as a YAML string would coerce
    assert ok._built["no_repeated_calls"].max_identical == 3  # type: ignore[attr-defined]


def test_a_structured_output_is_matched_as_the_text_it_holds_not_its_escapes() -> None:
    """A non-string output is read as JSON with non-ASCII kept, as the built-in checks read it: ``contains``
    finds "effectué" in {"reply": "effectué"} (escaped JSON, "effectu\\u00e9", hid it)."""
    failed = {**REFUND, "result": {"error": "gateway unavailable"}}
    done = case([LOOKUP, REFUND], output={"reply": "Remboursement effectué"})  # type: ignore[arg-type]
    assert run("goal_reached", done, contains=["effectué"]).passed is True
    acknowledged = case([LOOKUP, failed], output={"reply": "Désolé, je n\u2019ai pas pu"})  # type: ignore[arg-type]
    assert run("tool_errors_handled", acknowledged, acknowledge_pattern=r"(?i)désolé").passed is True
