"""The ``tool_calls`` matcher: each of BFCL's rules by hand, agreement with BFCL's own checker on the data shipped
in ``bfcl-eval``, and the check through a suite."""

from __future__ import annotations

import copy
import importlib.util
import itertools
import json
import random
import sys
import types
from pathlib import Path
from typing import Any

import pytest

import referee
from referee.evaluators import match_tool_calls

WEATHER = [{
    "name": "get_weather",
    "parameters": {"type": "dict", "required": ["city"], "properties": {
        "city": {"type": "string"}, "unit": {"type": "string"}, "days": {"type": "integer"},
        "threshold": {"type": "float"}, "alerts": {"type": "boolean"},
        "hours": {"type": "array", "items": {"type": "integer"}},
        "filters": {"type": "dict", "properties": {"wind": {"type": "string"}, "rain": {"type": "boolean"}}},
    }},
}]
EXPECTED = [{"get_weather": {"city": ["San Francisco, CA", "SF"], "unit": ["celsius", "fahrenheit", ""],
                             "days": [3, ""], "threshold": [2.5, ""], "alerts": [True, ""], "hours": [[6, 12], ""],
                             "filters": [{"wind": ["strong"], "rain": [False, ""]}, ""]}}]


def grade(args: Any, expected: Any = EXPECTED, functions: Any = WEATHER, **kw: Any) -> referee.CheckResult:
    result: referee.CheckResult = match_tool_calls([{"get_weather": args}] if isinstance(args, dict) else args,
                                                   expected, functions, **kw)
    return result


def test_a_matching_call_passes_with_optional_parameters_absent() -> None:
    r = grade({"city": "SF"})
    assert (r.score, r.passed, r.details["failures"]) == (1.0, True, [])


def test_strings_are_standardised_as_bfcl_does() -> None:
    assert grade({"city": "san francisco ca"}).passed  # case, comma and spaces do not count
    assert grade({"city": "San-Francisco, CA."}).passed
    r = grade({"city": "Los Angeles"})
    assert not r.passed and "argument 'city': 'Los Angeles' is not one of ['San Francisco, CA', 'SF']" in r.reason


def test_a_value_outside_the_possible_answers_names_the_call_and_argument() -> None:
    r = grade({"city": "SF", "unit": "kelvin"})
    assert r.score == 0.0 and r.passed is False
    assert r.reason == "call 1 get_weather: argument 'unit': 'kelvin' is not one of ['celsius', 'fahrenheit']"
    assert r.details["failures"] == [r.reason]


def test_wrong_function_name() -> None:
    r = grade([{"get_forecast": {"city": "SF"}}])
    assert not r.passed and "function is get_forecast, expected get_weather" in r.reason


def test_missing_required_and_unexpected_arguments() -> None:
    assert "missing required argument 'city'" in grade({"unit": "celsius"}).reason
    assert "unexpected argument 'x'" in grade({"city": "SF", "x": 1}).reason


def test_an_expected_parameter_without_the_optional_marker_must_be_given() -> None:
    exp = [{"get_weather": {"city": ["SF"], "unit": ["celsius"]}}]  # unit not required by the docs, but expected
    r = grade({"city": "SF"}, exp)
    assert not r.passed and "missing argument 'unit'" in r.reason
    assert grade({"city": "SF", "unit": "Celsius"}, exp).passed


def test_types_int_for_float_is_accepted_bool_is_not_an_int() -> None:
    assert "wrong type for 'days': str, expected integer" in grade({"city": "SF", "days": "3"}).reason
    assert "wrong type for 'days': bool, expected integer" in grade({"city": "SF", "days": True}).reason
    assert "wrong type for 'days': float, expected integer" in grade({"city": "SF", "days": 3.0}).reason
    assert grade({"city": "SF", "days": 3}).passed
    exp = copy.deepcopy(EXPECTED)
    exp[0]["get_weather"]["threshold"] = [2.0, ""]
    assert grade({"city": "SF", "threshold": 2}, exp).passed  # an int where a float is documented
    assert "wrong type for 'alerts': int, expected boolean" in grade({"city": "SF", "alerts": 1}).reason


def test_array_items_have_the_documented_type_a_bool_is_never_an_int() -> None:
    """Items of the wrong type are refused, never compared with Python's equality (where True == 1 and 12 == 12.0),
    the optional marker "" included; an item of an answer's own item type is a variable, as in BFCL."""
    docs = [{"name": "f", "parameters": {"type": "dict", "required": ["ints", "floats"], "properties": {
        "ints": {"type": "array", "items": {"type": "integer"}}, "floats": {"type": "array", "items": {"type": "float"}},
        "flags": {"type": "array", "items": {"type": "boolean"}}}}}]
    exp = [{"f": {"ints": [[1, 2]], "floats": [[12.0, 15.0]], "flags": [[True, False], ""]}}]

    def call(**args: Any) -> referee.CheckResult:
        result: referee.CheckResult = match_tool_calls([{"f": {"ints": [1, 2], "floats": [12.0, 15.0], **args}}],
                                                       exp, docs)
        return result

    assert call().passed and call(flags=[True, False]).passed
    assert call(ints=[True, 2]).reason.endswith("wrong type for 'ints': an item is bool, expected array of int")
    assert "wrong type for 'floats': an item is int, expected array of float" in call(floats=[12, 15]).reason
    assert "an item is int, expected array of bool" in call(flags=[1, 0]).reason  # optional, and still refused
    assert "wrong type for 'hours': an item is bool" in grade({"city": "SF", "hours": [True, 12]}).reason
    assert not grade({"city": "SF", "hours": [6.0, 12.0]}).passed
    # Without documentation (or without a documented item type) the items are still not Python-equal across types.
    undocumented = [{"f": {"ints": [[1, 2]], "flags": [[True, False]]}}]
    assert match_tool_calls([{"f": {"ints": [1, 2], "flags": [True, False]}}], undocumented).passed
    assert not match_tool_calls([{"f": {"ints": [True, 2], "flags": [True, False]}}], undocumented).passed
    assert not match_tool_calls([{"f": {"ints": [1, 2], "flags": [1, 0]}}], undocumented).passed
    # An answer's own item type names a variable, item by item, and is then compared as it is.
    var = [{"f": {"ints": [[1, 2], ["n"]], "floats": [[12.0, 15.0]]}}]
    assert match_tool_calls([{"f": {"ints": ["n"], "floats": [12.0, 15.0]}}], var, docs).passed
    assert not match_tool_calls([{"f": {"ints": ["m"], "floats": [12.0, 15.0]}}], var, docs).passed


def test_strings_deeper_than_one_level_are_compared_exactly_as_bfcl_does() -> None:
    docs = [{"name": "deal", "parameters": {"type": "dict", "required": ["hands"], "properties": {
        "hands": {"type": "array", "items": {"type": "array"}}, "names": {"type": "array", "items": {"type": "string"}}}}}]
    exp = [{"deal": {"hands": [[["Ace", "King"]]], "names": [["Ann Lee"], ""]}}]
    assert match_tool_calls([{"deal": {"hands": [["Ace", "King"]], "names": ["ann-lee"]}}], exp, docs).passed
    r = match_tool_calls([{"deal": {"hands": [["ace", "king"]]}}], exp, docs)
    assert not r.passed and "argument 'hands'" in r.reason


def test_nested_lists_and_dicts() -> None:
    assert grade({"city": "SF", "hours": [6, 12]}).passed
    assert "argument 'hours'" in grade({"city": "SF", "hours": [12, 6]}).reason  # order matters in a list
    # An item of the wrong type is refused as a wrong type (BFCL, seeing the optional marker, refuses the value).
    assert "wrong type for 'hours': an item is str" in grade({"city": "SF", "hours": [6, "12"]}).reason
    assert grade({"city": "SF", "filters": {"wind": "Strong"}}).passed  # rain optional inside the dict
    assert "key 'wind'" in grade({"city": "SF", "filters": {"wind": "calm"}}).reason
    assert "unexpected key 'snow'" in grade({"city": "SF", "filters": {"wind": "strong", "snow": 1}}).reason
    assert "missing key 'wind'" in grade({"city": "SF", "filters": {"rain": False}}).reason


PARALLEL_DOCS = [WEATHER[0], {"name": "get_time", "parameters": {
    "type": "dict", "required": ["tz"], "properties": {"tz": {"type": "string"}}}}]
PARALLEL = [{"get_weather": {"city": ["Paris"]}}, {"get_weather": {"city": ["Rome"]}}, {"get_time": {"tz": ["CET"]}}]


def test_parallel_calls_match_in_any_order() -> None:
    calls = [{"get_time": {"tz": "cet"}}, {"get_weather": {"city": "Rome"}}, {"get_weather": {"city": "Paris"}}]
    r = match_tool_calls(calls, PARALLEL, PARALLEL_DOCS)
    assert r.passed and r.details["category"] == "parallel_multiple"
    r = match_tool_calls(calls[:2] + [{"get_weather": {"city": "Oslo"}}], PARALLEL, PARALLEL_DOCS)
    assert not r.passed and "(for expected call 1 get_weather): argument 'city': 'Oslo'" in r.reason
    assert "expected 3 calls, got 2" in match_tool_calls(calls[:2], PARALLEL, PARALLEL_DOCS).reason


def test_parallel_assignment_is_one_to_one() -> None:
    # Paris fits both expectations and Rome only the first: the assignment finds Rome -> 1, Paris -> 2, where
    # taking the first fit for each expectation in turn (BFCL's loop) would give Paris to 1 and fail.
    exp = [{"get_weather": {"city": ["Paris", "Rome"]}}, {"get_weather": {"city": ["Paris"]}}]
    assert match_tool_calls([{"get_weather": {"city": "Paris"}}, {"get_weather": {"city": "Rome"}}], exp,
                            WEATHER).passed
    # One call never serves two expectations.
    r = match_tool_calls([{"get_weather": {"city": "Rome"}}, {"get_weather": {"city": "Rome"}}], exp, WEATHER)
    assert not r.passed and len(r.details["failures"]) == 1
    assert "(for expected call 2 get_weather): argument 'city': 'Rome' is not one of ['Paris']" in r.reason


def test_1200_parallel_calls_pair_without_recursion_comparing_each_call_with_few(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """1,200 expected and 1,200 actual calls that match one to one, in another order: the pairing recursed once per
    call (a RecursionError, so an unscored row) after comparing all 1.44 million pairs (~57 s). Counted, not timed:
    calls are bucketed by function and narrowed by an argument's value before their arguments are compared."""
    from referee.evaluators import _tool_calls

    compared = [0]
    real = _tool_calls._call_problem

    def counting(*args: Any) -> Any:
        compared[0] += 1
        return real(*args)

    monkeypatch.setattr(_tool_calls, "_call_problem", counting)
    n = 1200
    expected = [{"get_weather" if i % 2 else "get_time": {"city": [f"City {i}", f"C{i}"], "days": [i % 7 + 1, ""]}}
                for i in range(n)]
    actual = [{"get_weather" if i % 2 else "get_time": {"city": f"city {i}", "days": i % 7 + 1}} for i in range(n)]
    random.Random(10).shuffle(actual)
    r = match_tool_calls(actual, expected)
    assert r.passed and r.reason == f"{n} calls match (parallel_multiple)"
    assert compared[0] <= 2 * n
    # A chain where every expected call fits two actual calls (i and i + 1) and the last fits only the first:
    # a greedy pass leaves the last unmatched, and the augmenting path through all 1,200 is found iteratively.
    compared[0] = 0  # list arguments are indexed too (a list's items, standardised, in order)
    hours = [{"f": {"hours": [[i, i + 1]]}} for i in range(n)]
    given = [{"f": {"hours": [i, i + 1.0]}} for i in range(n)]
    random.Random(12).shuffle(given)
    assert match_tool_calls(given, hours).passed and compared[0] <= 2 * n
    chain = [{"f": {"x": [i, i + 1] if i < n - 1 else [0]}} for i in range(n)]
    r = match_tool_calls([{"f": {"x": i}} for i in range(n)], chain)
    assert r.passed, r.reason
    one_short = match_tool_calls([{"f": {"x": i}} for i in range(1, n + 1)], chain)
    assert not one_short.passed and len(one_short.details["failures"]) == 1


def test_narrowing_the_candidates_never_changes_a_verdict() -> None:
    """Random parallel calls (strings that standardise alike, ints for floats, bools, lists, optional and
    missing arguments, wrong functions): the verdict with candidates narrowed is the verdict of comparing every
    actual call with every expected one."""
    from referee.evaluators import _tool_calls

    rng = random.Random(11)
    values = ["Paris", "paris", "PARIS ", "Rome", "", 1, 1.0, 2, True, False, 0, [1, 2], [1.0, 2], [True, 2], ["a"],
              ["A "], [], [["a"]], [{"k": 1}], None, 2.5]
    for _ in range(1500):
        n = rng.randint(1, 4)
        expected = [{rng.choice("fg"): {p: rng.sample(values, rng.randint(1, 3))
                                        for p in rng.sample("xyz", rng.randint(0, 2))}} for _ in range(n)]
        actual = [{rng.choice("fg"): {p: rng.choice(values) for p in rng.sample("xyz", rng.randint(0, 2))}}
                  for _ in range(n)]
        ours = match_tool_calls(actual, expected)
        calls = _tool_calls._calls(actual)
        parsed = _tool_calls._check_expected(expected)
        full = [[_tool_calls._call_problem(c.name, c.args, c.problem, w, p, None) is None for c in calls]
                for w, p in parsed]
        every = _tool_calls._assign([list(range(n))] * n, lambda e, a, full=full: full[e][a], n)
        assert ours.passed == all(a is not None for a in every), (expected, actual, ours.reason)


def test_multiple_picks_one_of_several_functions() -> None:
    exp = [{"get_time": {"tz": ["CET"]}}]
    r = match_tool_calls([{"get_time": {"tz": "CET"}}], exp, PARALLEL_DOCS)
    assert r.passed and r.details["category"] == "multiple"
    assert "function is get_weather, expected get_time" in \
        match_tool_calls([{"get_weather": {"city": "SF"}}], exp, PARALLEL_DOCS).reason
    assert "expected 1 call, got 2" in \
        match_tool_calls([{"get_time": {"tz": "CET"}}] * 2, exp, PARALLEL_DOCS).reason


def test_irrelevance_expects_no_call() -> None:
    ok = match_tool_calls([], [], WEATHER)
    assert ok.passed and ok.details["category"] == "irrelevance"
    assert match_tool_calls("I cannot help with that.", [], WEATHER, "irrelevance").passed
    r = match_tool_calls([{"get_weather": {"city": "SF"}}], [], WEATHER, "irrelevance")
    assert not r.passed and r.reason == "expected no call (irrelevance), got 1"


def test_arguments_that_are_not_json_are_a_failed_match() -> None:
    r = match_tool_calls([{"name": "get_weather", "arguments": "{city: SF"}], EXPECTED, WEATHER)
    assert r.score == 0.0 and "call 1 get_weather: arguments are not JSON" in r.reason
    r = match_tool_calls([{"function": {"name": "get_weather", "arguments": "[1]"}}], EXPECTED, WEATHER)
    assert "arguments must be a JSON object, got list" in r.reason
    deep = "[" * 5000 + "]" * 5000  # parses, but nested past the bound every read of users' JSON keeps
    assert "arguments refused" in match_tool_calls([{"name": "get_weather", "arguments": deep}], EXPECTED).reason
    assert "tool calls refused" in match_tool_calls(deep, [], category="irrelevance").reason
    ok = match_tool_calls([{"function": {"name": "get_weather", "arguments": '{"city": "SF"}'}}], EXPECTED, WEATHER)
    assert ok.passed  # OpenAI's shape, arguments as JSON text


def test_bad_expectations_are_refused() -> None:
    with pytest.raises(referee.errors.OptionError, match="possible values"):
        match_tool_calls([], [{"f": {"x": 1}}])
    with pytest.raises(referee.errors.OptionError, match="category"):
        match_tool_calls([], [], category="sometimes")


# -- through a suite -------------------------------------------------------------------------------------

def test_through_a_suite_on_trajectories(tmp_path: Path) -> None:
    cases = [
        {"id": "good", "input": "weather?", "output": "Sunny.",
         "trajectory": [{"tool": "get_weather", "args": {"city": "sf", "unit": "celsius"}}]},
        {"id": "bad", "input": "weather?", "output": "Sunny.",
         "trajectory": [{"tool": "get_weather", "args": {"city": "SF", "unit": "kelvin"}}]},
        {"id": "text", "input": "weather?", "output": "Sunny.",
         "trajectory": [{"tool": "get_weather", "args": "{not json"}]},
        {"id": "per-case", "input": "time?", "output": "12:00", "functions": PARALLEL_DOCS,
         "expect": {"tool_calls": [{"get_time": {"tz": ["CET"]}}]},
         "trajectory": [{"tool": "get_time", "args": {"tz": "CET"}}]},
    ]
    entry = {"tool_calls": {"expected": EXPECTED, "functions": WEATHER}}
    res = referee.evaluate(cases[:3], [entry], out=tmp_path / "r.jsonl")
    rows = {r.id: r for r in res.rows}
    assert rows["good"].status == "scored" and rows["good"].score == 1.0
    assert rows["bad"].score == 0.0 and "'kelvin' is not one of" in (rows["bad"].rationale or "")
    assert rows["text"].status == "scored" and rows["text"].score == 0.0
    assert "arguments are not JSON" in (rows["text"].rationale or "")
    res2 = referee.evaluate(cases[3:], ["tool_calls"], out=tmp_path / "r2.jsonl")
    assert [(r.status, r.score) for r in res2.rows] == [("scored", 1.0)]


def test_calls_from_a_tool_loop_the_output_or_a_field(tmp_path: Path) -> None:
    turn = {"content": None, "tool_calls": [{"id": "c1", "name": "get_weather", "arguments": {"city": "SF"}}]}
    cases = [
        # A target's tool loop records arguments that are not JSON like this (the raw text kept beside).
        {"id": "loop", "input": "q", "output": "ok",
         "trajectory": [{"tool": "get_weather", "args": {}, "raw_arguments": "{city: SF"}]},
        {"id": "turn", "input": "q", "output": json.dumps(turn)},
        {"id": "field", "input": "q", "output": "Sunny.", "calls": [{"get_weather": {"city": "Paris"}}]},
        {"id": "text", "input": "q", "output": "Sunny."},
        {"id": "nothing", "input": "q"},
    ]
    res = referee.evaluate(cases, [{"tool_calls": {"expected": EXPECTED, "functions": WEATHER}}],
                           out=tmp_path / "r.jsonl")
    rows = {r.id: r for r in res.rows}
    assert rows["loop"].score == 0.0 and "arguments are not JSON: '{city: SF'" in (rows["loop"].rationale or "")
    assert rows["turn"].score == 1.0
    assert rows["field"].score == 0.0 and "'Paris' is not one of" in (rows["field"].rationale or "")
    assert rows["text"].score == 0.0 and "expected 1 call, got 0" in (rows["text"].rationale or "")
    assert rows["nothing"].status == "unscored" and rows["nothing"].score is None


def test_a_model_targets_tool_loop_through_the_local_server(fake_server: Any) -> None:
    from referee.targets import generate_outputs
    from referee.testing import Reply

    tools = [{"name": "lookup_order", "parameters": {"type": "object", "required": ["order_id"],
                                                      "properties": {"order_id": {"type": "string"}}}}]
    expected = [{"lookup_order": {"order_id": ["A1"]}}, {"lookup_order": {"order_id": ["B2"]}}]
    spec = {"id": "agent", "provider": "openai", "model": "m", "base_url": fake_server.openai_base_url,
            "template": "{input}", "tools": tools}
    evaluator = referee.evaluators.build("tool_calls", {"expected": expected, "functions": tools})
    fake_server.script(Reply(tool_calls=[{"name": "lookup_order", "arguments": {"order_id": "b-2"}},
                                         {"name": "lookup_order", "arguments": {"order_id": "a1"}}]),
                       Reply(text="Both shipped."))
    [(case, gen)] = generate_outputs(spec, [{"id": "o", "input": "Orders A1 and B2?"}])
    assert gen.error is None
    r = evaluator.evaluate(case, case.output)
    assert r.passed and r.score == 1.0, r.reason
    # The model writes arguments that are not JSON: the loop keeps the text, the match fails naming the call.
    fake_server.script(Reply(tool_calls=[{"name": "lookup_order", "arguments": {"order_id": "A1"}},
                                         {"name": "lookup_order", "arguments": "{order_id: B2"}]),
                       Reply(text="One shipped."))
    [(case, gen)] = generate_outputs(spec, [{"id": "o2", "input": "Where are orders A1 and B2?"}])
    r = evaluator.evaluate(case, case.output)
    assert r.score == 0.0 and "call 2 lookup_order" in r.reason and "arguments are not JSON" in r.reason, r.reason


def test_suite_options_are_validated() -> None:
    from referee.evaluators import build

    with pytest.raises(referee.errors.UserError, match="category"):
        build("tool_calls", {"expected": [], "category": "sometimes"})
    with pytest.raises(referee.errors.UserError, match=r"expected\.0\.f\.x: Input should be a valid list"):
        build("tool_calls", {"expected": [{"f": {"x": 1}}]})


# -- agreement with BFCL's own checker ------------------------------------------------------------------

def _bfcl() -> tuple[Any, Any, Any, Path]:
    if importlib.util.find_spec("bfcl_eval") is None:
        pytest.skip("bfcl-eval is not installed (scripts/test installs it: pip install --no-deps bfcl-eval)")
    # The checker imports the model table only to rename dotted function names for some providers; that table
    # imports every model handler's SDK, which the checker does not need.
    name = "bfcl_eval.constants.model_config"
    if name not in sys.modules:
        stub = types.ModuleType(name)
        # As for the providers that keep dots in function names (no renaming).
        stub.MODEL_CONFIG_MAPPING = {"referee": types.SimpleNamespace(underscore_to_dot=False)}  # type: ignore[attr-defined]
        sys.modules[name] = stub
    from bfcl_eval.constants.enums import Language
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker
    from bfcl_eval.utils import is_empty_output

    spec = importlib.util.find_spec("bfcl_eval")
    assert spec is not None and spec.origin is not None
    return ast_checker, Language.PYTHON, is_empty_output, Path(spec.origin).parent / "data"


CATEGORIES = {"simple_python": "simple", "multiple": "multiple", "parallel": "parallel",
              "parallel_multiple": "parallel_multiple", "live_simple": "simple", "live_multiple": "multiple",
              "live_parallel": "parallel", "live_parallel_multiple": "parallel_multiple"}


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _first(options: list[Any]) -> Any:
    return next(v for v in options if v != "")


def _first_answer(possible: dict[str, list[Any]], doc: dict[str, Any]) -> dict[str, Any]:
    """A call from the possible answers: the first of each parameter's (``""``, the optional marker, skipped);
    a dict argument's possible answers hold each key's possible values, so its keys take their first too."""
    props = doc["parameters"]["properties"]
    out = {}
    for p, opts in possible.items():
        if not any(v != "" for v in opts) or (p not in props and "" in opts):
            continue  # optional, or an optional answer the documentation does not list (a slip in the data)
        value = _first(opts)
        spec = props.get(p, {})
        if spec.get("type") == "dict" and isinstance(value, dict):
            value = {k: _first(v) for k, v in value.items() if any(x != "" for x in v)}
        elif spec.get("items", {}).get("type") == "dict" and isinstance(value, list):
            value = [{k: _first(v) for k, v in d.items() if any(x != "" for x in v)} for d in value]
        out[p] = value
    return out


def _perturbations(calls: list[dict[str, Any]], docs: list[dict[str, Any]],
                   ground: list[dict[str, Any]], rng: random.Random) -> list[tuple[str, list[dict[str, Any]]]]:
    out: list[tuple[str, list[dict[str, Any]]]] = []
    i = rng.randrange(len(calls))
    (fname, args), = calls[i].items()
    doc = next(d for d in docs if d["name"] == fname)
    props = doc["parameters"]["properties"]

    def with_args(new: dict[str, Any]) -> list[dict[str, Any]]:
        changed = copy.deepcopy(calls)
        changed[i] = {fname: new}
        return changed

    possible = ground[i][fname]
    for p in sorted(args):
        t = props.get(p, {}).get("type")
        if t == "string":
            out.append(("wrong value", with_args({**args, p: "zz referee not an answer"})))
            if isinstance(args[p], str):
                out.append(("standardised variant", with_args({**args, p: f" {args[p].upper()}."})))
            out.append(("wrong type", with_args({**args, p: 12345})))
        elif t == "integer":
            out.append(("wrong value", with_args({**args, p: max([v for v in possible[p] if isinstance(v, int)]
                                                                  + [0]) + 7919})))
            out.append(("wrong type", with_args({**args, p: str(args[p])})))
        elif t == "float":
            out.append(("wrong type", with_args({**args, p: str(args[p])})))
            if isinstance(args[p], int | float):
                out.append(("wrong value", with_args({**args, p: float(args[p]) + 7919.5})))
            if isinstance(args[p], float) and args[p].is_integer():
                out.append(("int for float", with_args({**args, p: int(args[p])})))
        elif t == "boolean":
            out.append(("wrong value", with_args({**args, p: not args[p]})))
            out.append(("wrong type", with_args({**args, p: int(args[p])})))
        elif t == "array" and isinstance(args[p], list):
            out.append(("wrong value", with_args({**args, p: [*args[p], *args[p][:1]] or ["zz"]})))
            item = props[p].get("items", {}).get("type")
            if item == "integer" and args[p] and type(args[p][0]) is int:  # a bool is never an int
                out.append(("bool for an int item", with_args({**args, p: [bool(args[p][0]), *args[p][1:]]})))
            elif item == "float" and args[p] and all(isinstance(v, int | float) for v in args[p]):
                out.append(("ints for float items", with_args({**args, p: [int(v) for v in args[p]]})))
            elif item == "boolean" and args[p] and type(args[p][0]) is bool:
                out.append(("int for a bool item", with_args({**args, p: [int(args[p][0]), *args[p][1:]]})))
        if len([k for k, _ in out if k == "wrong value"]) >= 1 and len(out) >= 2:
            break
    optional = [p for p in args if "" in possible.get(p, [])]
    if optional:
        out.append(("optional left out", with_args({k: v for k, v in args.items() if k != optional[0]})))
    required = [p for p in doc["parameters"].get("required", []) if p in args]
    if required:
        out.append(("missing required", with_args({k: v for k, v in args.items() if k != required[0]})))
    out.append(("extra argument", with_args({**args, "referee_extra_argument": 1})))
    if len(calls) > 1:
        out.append(("swapped order", list(reversed(calls))))
    return out


def _unanswerable(ground: list[dict[str, Any]], docs: dict[str, Any]) -> bool:
    """A slip in the shipped answers no call can satisfy: a parameter with no possible value at all, a required
    one whose only possible value is the optional marker, or one the documentation does not list."""
    for g in ground:
        for name, possible in g.items():
            params = docs[name]["parameters"]
            for p, opts in possible.items():
                if opts == [] or (p in params.get("required", []) and all(v == "" for v in opts)) \
                        or (p not in params["properties"] and "" not in opts):
                    return True
    return False


def _bfcl_accepts_some_order(ast_checker: Any, docs: Any, calls: list[Any], ground: Any, language: Any,
                             category: str) -> bool:
    orders = itertools.islice(itertools.permutations(calls), 5040)
    return any(ast_checker(docs, copy.deepcopy(list(order)), ground, language, category, "referee")["valid"]
               for order in orders)


def test_agrees_with_bfcls_checker_on_the_shipped_data() -> None:
    ast_checker, python, _, data = _bfcl()
    rng = random.Random(27)
    compared = {c: 0 for c in CATEGORIES}
    kinds: dict[str, int] = {}
    disagreements: list[str] = []
    order_dependent: list[str] = []
    unanswerable: list[str] = []
    entries = 0
    for file_cat, cat in CATEGORIES.items():
        questions = {q["id"]: q for q in _read(data / f"BFCL_v4_{file_cat}.json")}
        answers = _read(data / "possible_answer" / f"BFCL_v4_{file_cat}.json")
        for entry in answers:  # all of them: the whole comparison takes about a second
            entries += 1
            docs = questions[entry["id"]]["function"]
            ground = entry["ground_truth"]
            by_name = {d["name"]: d for d in docs}
            calls = [{name: _first_answer(possible, by_name[name])} for g in ground for name, possible in g.items()]
            trials = [("first possible answer", calls), *_perturbations(calls, docs, ground, rng)]
            for kind, trial in trials:
                theirs = ast_checker(docs, copy.deepcopy(trial), ground, python, file_cat, "referee")["valid"]
                ours = match_tool_calls(trial, ground, docs, cat)
                if kind == "first possible answer":
                    if _unanswerable(ground, by_name):
                        unanswerable.append(entry["id"])
                    else:
                        assert theirs and ours.passed, f"{entry['id']}: {ours.reason}"
                if bool(theirs) != ours.passed:
                    if ours.passed and _bfcl_accepts_some_order(ast_checker, docs, trial, ground, python, file_cat):
                        # BFCL assigns each expected call the first unused call that fits, so it can miss an
                        # assignment that exists; referee finds one. Same calls, BFCL accepts another order.
                        order_dependent.append(f"{entry['id']} {kind}")
                    else:
                        disagreements.append(f"{entry['id']} {kind}: bfcl {theirs}, referee {ours.passed} "
                                             f"({ours.reason})")
                compared[file_cat] += 1
                kinds[kind] = kinds.get(kind, 0) + 1
    assert not disagreements, "\n".join(disagreements[:20])
    # Only where the shipped answers let one call fit two expectations, in the entries docs/agents.md names (BFCL
    # pairs greedily, in order), and the few slips in the shipped answers (5 of 2351 in bfcl-eval 2026.3.23).
    assert {o.split()[0] for o in order_dependent} <= set(GREEDY_PAIRING), order_dependent
    assert len(unanswerable) <= entries // 100, unanswerable
    assert all(n > 0 for n in compared.values()), compared
    for kind in ("wrong value", "missing required", "extra argument", "wrong type", "swapped order",
                 "standardised variant", "int for float", "optional left out", "bool for an int item",
                 "ints for float items"):
        assert kinds.get(kind, 0) > 0, kinds


GREEDY_PAIRING = {
    # One expected call accepts either company, so a Microsoft call can take the Apple call's place.
    "parallel_178": (0, None),
    # data_type is optional in every expected call, so a call that leaves it out fits all four of its company.
    "parallel_180": (1, "data_type"),
}
"""The shipped entries where BFCL's greedy pairing makes a verdict depend on the calls' order (docs/agents.md):
which call to change (its position among the first possible answers) and the optional argument it leaves out."""


@pytest.mark.parametrize("entry_id", sorted(GREEDY_PAIRING))
def test_the_documented_pairing_differences_are_real(entry_id: str) -> None:
    """Calls BFCL rejects in one order and accepts in another; tool_calls accepts them in every order."""
    ast_checker, python, _, data = _bfcl()
    questions = {q["id"]: q for q in _read(data / "BFCL_v4_parallel.json")}
    entry = next(e for e in _read(data / "possible_answer" / "BFCL_v4_parallel.json") if e["id"] == entry_id)
    docs, ground = questions[entry_id]["function"], entry["ground_truth"]
    by_name = {d["name"]: d for d in docs}
    calls = [{name: _first_answer(possible, by_name[name])} for g in ground for name, possible in g.items()]
    changed, left_out = GREEDY_PAIRING[entry_id]
    if left_out is not None:
        (name, args), = calls[changed].items()
        calls[changed] = {name: {k: v for k, v in args.items() if k != left_out}}
    verdicts = set()
    for order in itertools.permutations(range(len(calls)), 4):
        trial = [calls[i] for i in order] + [c for i, c in enumerate(calls) if i not in order]
        verdicts.add(bool(ast_checker(docs, copy.deepcopy(trial), ground, python, "parallel", "referee")["valid"]))
        assert match_tool_calls(trial, ground, docs, "parallel").passed, trial
        if verdicts == {True, False}:
            break
    assert verdicts == {True, False}, f"{entry_id}: BFCL's verdict does not depend on the order"


def test_agrees_with_bfcl_on_irrelevance() -> None:
    _, _, is_empty_output, data = _bfcl()
    questions = _read(data / "BFCL_v4_irrelevance.json") + _read(data / "BFCL_v4_live_irrelevance.json")
    compared = 0
    for q in questions:
        fn: dict[str, Any] = (q["function"][0] if q["function"]
                              else {"name": "lookup", "parameters": {"required": ["q"]}})
        some_call = [{fn["name"]: {p: 1 for p in fn["parameters"].get("required", [])}}]
        for trial in ([], some_call):
            # BFCL's irrelevance rule: right when the decoded output holds no function call.
            theirs = is_empty_output(trial)
            ours = match_tool_calls(trial, [], q["function"], "irrelevance")
            assert ours.passed == theirs, f"{q['id']}: {ours.reason}"
            compared += 1
    assert compared > 100


def test_referee_validate_and_run_a_suite_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.support.cli import run_cli

    cases = [{"id": "c1", "input": "weather?", "output": "Sunny.",
              "trajectory": [{"tool": "get_weather", "args": {"city": "SF", "unit": "Celsius"}}]}]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    entry = {"tool_calls": {"expected": EXPECTED, "functions": WEATHER, "category": "simple"}}
    suite = tmp_path / "suite.yaml"
    suite.write_text(json.dumps({"name": "calls", "cases": "cases.jsonl", "evaluators": [entry]}), encoding="utf-8")
    code, out, err = run_cli(["validate", str(suite)], capsys)
    assert code == 0, err
    code, out, err = run_cli(["run", str(suite), "--out", str(tmp_path / "r.jsonl")], capsys)
    assert code == 0, err
    from referee.results import read_results

    rows = read_results(tmp_path / "r.jsonl", strict=True).rows
    assert [(r.id, r.status, r.score) for r in rows] == [("c1", "scored", 1.0)]
    entry["tool_calls"]["category"] = "sometimes"
    suite.write_text(json.dumps({"name": "calls", "cases": "cases.jsonl", "evaluators": [entry]}), encoding="utf-8")
    code, out, err = run_cli(["validate", str(suite)], capsys)
    assert code == 2 and "category" in err and "suite.yaml" in err
