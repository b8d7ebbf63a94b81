"""``tool_calls``: function calls graded by the Berkeley Function Calling Leaderboard's rules (its AST checker).

A call matches an expected one when the function name is the same, every required parameter is there, no
parameter is unexpected (neither in the function's documentation nor among the expected ones), each value has
the documented type (an int is accepted where a float is documented, a bool is never an int) and is one of the
possible answers: strings after standardisation (lowercased, spaces and ``,./-_*^`` removed, ``'`` read as
``"``), lists and dicts compared element by element, an expected parameter whose possible answers hold ``""``
optional. Categories: ``simple`` and ``multiple`` (exactly one call, of the expected function among several
offered), ``parallel`` and ``parallel_multiple`` (the calls match the expected ones in any order, one to one),
``irrelevance`` (no call at all is the right answer).

Expected calls are BFCL's possible-answer format, ``[{function_name: {param: [possible values...]}}]``, and the
function documentation its ``function`` field (``{name, parameters: {properties: {p: {type, items?}},
required}}``). Each failure names the call, the argument and why.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from .._util import _data
from ..cases._case import Case
from ..errors import OptionError
from ..trajectories import TrajectoryError, trajectory_of
from ._base import CheckResult, Evaluator, register

__all__ = ["CATEGORIES", "ToolCalls", "match_tool_calls", "standardize"]

CATEGORIES = ("simple", "multiple", "parallel", "parallel_multiple", "irrelevance")
Category = Literal["simple", "multiple", "parallel", "parallel_multiple", "irrelevance"]

# BFCL's Python type names (and the JSON Schema spellings tools are usually documented with).
_TYPES: dict[str, type] = {
    "string": str, "integer": int, "float": float, "boolean": bool, "array": list, "tuple": list,
    "dict": dict, "any": str, "number": float, "object": dict,
}
_TYPE_WORDS = {str: "str", int: "int", float: "float", bool: "bool", list: "list", dict: "dict"}
_STRIP = re.compile(r"[ ,./\-_*^]")


def standardize(text: str) -> str:
    """BFCL's string standardisation: spaces and ``,./-_*^`` removed, lowercased, ``'`` read as ``"`` (so
    "April 1, 2024" and "april 1 2024" are one answer)."""
    return _STRIP.sub("", text).lower().replace("'", '"')


def _std(value: Any) -> Any:
    """``value`` standardised as BFCL compares it: a string, or the strings directly inside a list (deeper ones,
    as in a list of lists, are compared exactly, as BFCL compares them)."""
    if isinstance(value, str):
        return standardize(value)
    if isinstance(value, list):
        return [standardize(v) if isinstance(v, str) else v for v in value]
    return value


def _bools_apart(value: Any) -> Any:
    """``value`` with every bool tagged, so that comparing it never finds ``True == 1`` or ``False == 0.0``."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, list):
        return [_bools_apart(v) for v in value]
    return value


def _one(value: Any) -> Any:
    return standardize(value) if isinstance(value, str) else value


def _shown(possible: Sequence[Any]) -> str:
    return repr([p for p in possible if p != ""])


def _word(value: Any) -> str:
    return _TYPE_WORDS.get(type(value), type(value).__name__)


def _answer_type(possible: Sequence[Any]) -> type | None:
    """The type of the first possible answer that is not the optional marker ``""``."""
    return next((type(p) for p in possible if p != ""), None)


def _type_ok(value: Any, possible: Sequence[Any], want: type, item_type: type | None) -> tuple[bool, bool]:
    """``(type accepted, value is a "variable")`` as BFCL's type checker decides it: a value of the possible
    answers' own type is accepted even when the documented type differs (the answer names a variable), and is
    then compared as it is, without standardisation.

    A value of the documented type is judged by that type alone: an array whose items do not have the documented
    item type (``[true, 2]`` for integers, ``[12, 15]`` for floats: a bool is never an int, and an int is a float
    only at the top level) is refused, never passed on to the variable rule, where Python's ``True == 1`` would
    accept it. An item may have the type of the items of one possible answer (a variable, item by item, as in
    BFCL). Unlike BFCL, the optional marker ``""`` is not an answer whose items fit any type."""
    answer_type = _answer_type(possible)
    variable = answer_type is not None and answer_type is not want
    if type(value) is want:
        if item_type is None:
            return True, variable
        items: list[Any] = value if isinstance(value, list) else []
        answers = [a for a in possible if isinstance(a, list)] or [[]]
        if any(all(_type_ok(v, answer, item_type, None)[0] for v in items) for answer in answers):
            return True, variable
        return False, False
    if answer_type is not None and type(value) is answer_type:
        return True, True
    return False, False


def _dict_value(param: str, value: dict[str, Any], possible: Sequence[Any]) -> str | None:
    """A dict argument against possible dicts, each of whose keys holds a list of possible values."""
    why = f"argument '{param}': {value!r} is not one of {_shown(possible)}"
    for answer in possible:
        if answer == "" or not isinstance(answer, dict):
            continue
        why = ""
        for key, v in value.items():
            if key not in answer:
                why = f"argument '{param}': unexpected key '{key}'"
                break
            options = answer[key] if isinstance(answer[key], list) else [answer[key]]
            if _one(v) not in [_one(o) for o in options]:
                why = f"argument '{param}': key '{key}': {v!r} is not one of {_shown(options)}"
                break
        if not why:
            missing = [k for k, opts in answer.items() if k not in value and not (isinstance(opts, list) and "" in opts)]
            if missing:
                why = f"argument '{param}': missing key '{missing[0]}'"
        if not why:
            return None
    return why


def _list_of_dicts(param: str, value: list[Any], possible: Sequence[Any]) -> str | None:
    why = f"argument '{param}': {value!r} is not one of {_shown(possible)}"
    for answer in possible:
        answer = [] if answer == "" else answer  # as BFCL reads the optional marker here: an empty list
        if not isinstance(answer, list):
            continue
        if len(answer) != len(value):
            why = f"argument '{param}': {len(value)} items, expected {len(answer)}"
            continue
        fails = [_dict_value(f"{param}[{i}]", v, [a]) if isinstance(v, dict) else f"argument '{param}[{i}]': not a dict"
                 for i, (v, a) in enumerate(zip(value, answer, strict=True))]
        first = next((f for f in fails if f), None)
        if first is None:
            return None
        why = first
    return why


def _param_type(doc: dict[str, Any] | None, param: str) -> tuple[str | None, type | None, type | None]:
    """(documented type name, Python type, item type of an array) of ``param``; Nones without documentation."""
    if doc is None:
        return None, None, None
    spec = doc["properties"].get(param) or {}
    name = spec.get("type") if isinstance(spec, dict) else None
    if not isinstance(name, str) or name not in _TYPES:
        return name if isinstance(name, str) else None, None, None
    item_type = None
    if name in ("array", "tuple"):
        items = spec.get("items")
        item_name = items.get("type") if isinstance(items, dict) else None
        item_type = _TYPES.get(item_name) if isinstance(item_name, str) else None
    return name, _TYPES[name], item_type


def _check_value(param: str, value: Any, possible: Sequence[Any], doc: dict[str, Any] | None) -> str | None:
    type_name, want, item_type = _param_type(doc, param)
    if want is None:
        # Undocumented: the possible answers' own type is the expected one (ints still count as floats).
        want = _answer_type(possible)
        type_name = {v: k for k, v in reversed(_TYPES.items())}.get(want) if want else None
        item_type = None
    if want is float and type(value) is int:
        value = float(value)  # BFCL accepts an int where a float is expected
    variable = False
    if want is not None:
        ok, variable = _type_ok(value, possible, want, item_type)
        if not ok:
            if isinstance(value, list) and item_type is not None:
                bad = next((v for v in value if type(v) is not item_type), None)
                return (f"wrong type for '{param}': an item is {_word(bad)}, expected "
                        f"{type_name} of {_TYPE_WORDS.get(item_type, item_type.__name__)}")
            return f"wrong type for '{param}': {_word(value)}, expected {type_name}"
    if not variable:
        if want is dict and isinstance(value, dict):
            return _dict_value(param, value, possible)
        if want is list and item_type is dict and isinstance(value, list):
            return _list_of_dicts(param, value, possible)
        if want is str and isinstance(value, str):
            if standardize(value) in [standardize(p) for p in possible if isinstance(p, str)]:
                return None
            return f"argument '{param}': {value!r} is not one of {_shown(possible)}"
        if want is list and isinstance(value, list):
            options = [[] if p == "" else p for p in possible]  # BFCL reads "" here as the empty list
            # Without a documented item type nothing checked the items: a bool must still not equal an int.
            key = _std if item_type is not None else (lambda v: _bools_apart(_std(v)))
            if key(value) in [key(p) for p in options if isinstance(p, list)]:
                return None
            return f"argument '{param}': {value!r} is not one of {_shown(possible)}"
    if value in possible:
        return None
    return f"argument '{param}': {value!r} is not one of {_shown(possible)}"


@dataclass(frozen=True)
class _Call:
    name: str
    args: dict[str, Any] | None
    problem: str | None = None
    """Why the call cannot be matched at all (arguments that are not a JSON object)."""


def _call_problem(name: str, args: dict[str, Any] | None, problem: str | None, want: str,
                  possible: dict[str, list[Any]], doc: dict[str, Any] | None) -> str | None:
    """Why the actual call does not match the expected ``{want: possible}``, or None."""
    if name != want:
        return f"function is {name}, expected {want}"
    if problem is not None or args is None:
        return problem or "arguments missing"
    required = doc["required"] if doc is not None else [p for p, opts in possible.items() if "" not in opts]
    for param in required:
        if param not in args:
            return f"missing required argument '{param}'"
    for param, value in args.items():
        if (doc is not None and param not in doc["properties"]) or param not in possible:
            return f"unexpected argument '{param}'"
        why = _check_value(param, value, possible[param], doc)
        if why is not None:
            return why
    for param, opts in possible.items():
        if param not in args and "" not in opts:
            return f"missing argument '{param}' (its possible answers do not include \"\", so it is not optional)"
    return None


def _parse_args(raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    if raw is None or raw == "":
        return {}, None
    value = raw
    if isinstance(raw, str):
        shown = raw if len(raw) <= 60 else raw[:60] + "..."
        try:
            value = _data.loads(raw)
        except _data.UnsafeData as exc:  # parses, but too deep or with numbers too large to use
            return None, f"arguments refused ({exc}): {shown!r}"
        except json.JSONDecodeError as exc:
            return None, f"arguments are not JSON ({exc.msg}): {shown!r}"
    if not isinstance(value, dict):
        return None, f"arguments must be a JSON object, got {_word(value)}"
    return value, None


def _one_call(raw: Any, i: int) -> _Call:
    """A call in any of the shapes agents record: BFCL's ``{name: args}``, ``{name, arguments}``, OpenAI's
    ``{function: {name, arguments}}``, Anthropic's ``{name, input}``, referee's ``{tool, args}``."""
    if not isinstance(raw, dict):
        raise ValueError(f"call {i}: must be an object, got {_word(raw)}")
    fn = raw.get("function")
    if isinstance(fn, dict) and isinstance(fn.get("name"), str):
        name, args = fn["name"], fn.get("arguments")
    elif isinstance(raw.get("name"), str):  # BFCL's form has the arguments object under the name
        name = raw["name"]
        args = raw.get("arguments", raw.get("input", raw.get("args")))
    elif isinstance(raw.get("tool"), str):
        name, args = raw["tool"], raw.get("args", raw.get("arguments"))
    elif len(raw) == 1:
        name, args = next(iter(raw.items()))
    else:
        raise ValueError(f"call {i}: not a tool call (expected {{name: arguments}}, {{name, arguments}} or "
                         f"{{tool, args}}), got keys {sorted(raw)}")
    parsed, problem = _parse_args(args)
    return _Call(str(name), parsed, problem)


def _calls(actual: Any) -> list[_Call]:
    if isinstance(actual, str):
        try:
            actual = _data.loads(actual)
        except _data.UnsafeData as exc:
            raise ValueError(f"tool calls refused: {exc}") from None
        except json.JSONDecodeError:  # a text answer: no call
            return []
    if isinstance(actual, dict):
        if "tool_calls" not in actual:
            actual = [actual]
        else:
            actual = actual.get("tool_calls") or []
    if actual is None:
        return []
    if not isinstance(actual, list):
        raise ValueError(f"tool calls must be a list, got {_word(actual)}")
    return [c if isinstance(c, _Call) else _one_call(c, i + 1) for i, c in enumerate(actual)]


def _check_expected(expected: Any, option: str = "expected") -> list[tuple[str, dict[str, list[Any]]]]:
    if not isinstance(expected, list):
        raise OptionError(option, "must be a list of {function_name: {parameter: [possible values]}}")
    out = []
    for i, item in enumerate(expected):
        if not isinstance(item, dict) or len(item) != 1:
            raise OptionError(f"{option}[{i}]", "must be one {function_name: {parameter: [possible values]}}")
        name, params = next(iter(item.items()))
        if not isinstance(params, dict) or not all(isinstance(v, list) for v in params.values()):
            raise OptionError(f"{option}[{i}].{name}", "must map each parameter to a list of possible values")
        out.append((str(name), params))
    return out


def _check_functions(functions: Any, option: str = "functions") -> dict[str, dict[str, Any]]:
    """Function documentation by name: ``{properties, required}`` of each (BFCL's ``function`` field)."""
    if isinstance(functions, dict):
        functions = [functions]
    if not isinstance(functions, list):
        raise OptionError(option, "must be a list of function documentation ({name, parameters})")
    docs = {}
    for i, fn in enumerate(functions):
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise OptionError(f"{option}[{i}]", "needs a 'name'")
        params = fn.get("parameters") or fn.get("input_schema") or {}
        props = params.get("properties") if isinstance(params, dict) else None
        required = params.get("required", []) if isinstance(params, dict) else []
        if not isinstance(props, dict) or not isinstance(required, list):
            raise OptionError(f"{option}[{i}].parameters", "needs 'properties' (an object) and 'required' (a list)")
        docs[fn["name"]] = {"properties": props, "required": [str(r) for r in required]}
    return docs


def _infer(expected: list[tuple[str, dict[str, list[Any]]]], docs: dict[str, Any] | None) -> str:
    if not expected:
        return "irrelevance"
    if len(expected) == 1:
        return "multiple" if docs is not None and len(docs) > 1 else "simple"
    return "parallel_multiple" if len({n for n, _ in expected}) > 1 else "parallel"


def _assign(candidates: list[list[int]], ok: Any, n_actual: int) -> list[int | None]:
    """A one-to-one assignment of actual calls to expected ones, as large as possible: ``match[e]`` is the actual
    call of expected call ``e``, or None. ``candidates[e]``: the actual calls that may match ``e`` (the rest
    cannot); ``ok(e, a)``: whether they do, asked at most once per pair and only when needed. Augmenting paths
    followed with an explicit stack, never recursion: 1,200 calls are 1,200 levels deep at worst."""
    owner: list[int | None] = [None] * n_actual
    match: list[int | None] = [None] * len(candidates)
    for e, cands in enumerate(candidates):  # most calls match the first free candidate that fits
        a = next((a for a in cands if owner[a] is None and ok(e, a)), None)
        if a is not None:
            owner[a], match[e] = e, a
    for e in range(len(candidates)):
        if match[e] is not None:
            continue
        parent: dict[int, int] = {}
        stack = [(e, iter(candidates[e]))]
        free = None
        while stack and free is None:
            u, rest = stack[-1]
            for a in rest:
                if a in parent or not ok(u, a):
                    continue
                parent[a] = u
                held = owner[a]
                if held is None:
                    free = a
                else:
                    stack.append((held, iter(candidates[held])))
                break
            else:
                stack.pop()
        at = free
        while at is not None:  # flip the path: each expected call on it takes the actual call it reached
            u = parent[at]
            before = match[u]
            match[u], owner[at] = at, u
            at = before
    return match


def _key(value: Any, depth: int = 0) -> tuple[str, Any] | None:
    """What any answer a value can be accepted as shares with it: its standardised text, its number (a bool as 0
    or 1, an int as the float it equals), or a list's items' keys in order; None for a value no key describes
    (dicts, NaN, a list holding one of those)."""
    if isinstance(value, str):
        return "s", standardize(value)
    if isinstance(value, bool | int | float) and value == value:
        return "n", float(value)
    if isinstance(value, list) and depth < 4:
        items = tuple(_key(v, depth + 1) for v in value)
        return None if None in items else ("l", items)
    return None


def _answer_keys(answers: list[Any]) -> set[tuple[str, Any]]:
    """The keys of a parameter's possible answers (``""``, the optional marker, also stands for the empty list,
    as the checker reads it for a list)."""
    keys = {k for k in map(_key, answers) if k is not None}
    if "" in answers:
        keys.add(("l", ()))
    return keys


def _candidates(calls: list[_Call], want: list[str], possible: list[dict[str, list[Any]]]) -> list[list[int]]:
    """Per expected call, the actual calls that could match it, found by index rather than compared one by one:
    the calls of the same function (bucketed by name), narrowed by one argument whose value must be among the
    expected call's possible answers. Only a call that cannot match is left out: an argument value matches a
    possible answer only when they share a :func:`_key` (strings standardised alike, numbers equal), and a
    value without a key, or an argument left out, is kept for the full check to decide."""
    by_name: dict[str, list[int]] = {}
    for a, c in enumerate(calls):
        by_name.setdefault(c.name, []).append(a)
    index: dict[tuple[str, str], tuple[dict[tuple[str, Any], list[int]], list[int]]] = {}

    def indexed(name: str, param: str) -> tuple[dict[tuple[str, Any], list[int]], list[int]]:
        got = index.get((name, param))
        if got is None:
            keyed: dict[tuple[str, Any], list[int]] = {}
            unkeyed: list[int] = []
            for a in by_name.get(name, []):
                args = calls[a].args
                k = _key(args[param]) if args is not None and param in args else None
                if k is None:
                    unkeyed.append(a)
                else:
                    keyed.setdefault(k, []).append(a)
            got = index[(name, param)] = (keyed, unkeyed)
        return got

    out = []
    for name, params in zip(want, possible, strict=True):
        best = by_name.get(name, [])
        for param, answers in params.items():
            if len(best) <= 1 or not isinstance(answers, list):
                break
            keyed, unkeyed = indexed(name, param)
            keys = _answer_keys(answers)
            narrowed = sorted({a for k in keys for a in keyed.get(k, ())}.union(unkeyed))
            if len(narrowed) < len(best):
                best = narrowed
        out.append(best)
    return out


def _grade(calls: list[_Call], expected: list[tuple[str, dict[str, list[Any]]]],
           docs: dict[str, dict[str, Any]] | None, category: str | None, underscore_to_dot: bool) -> CheckResult:
    cat = category or _infer(expected, docs)
    details: dict[str, Any] = {"category": cat, "calls": len(calls), "expected_calls": len(expected)}

    def failed(failures: list[str]) -> CheckResult:
        more = f" (+{len(failures) - 1} more)" if len(failures) > 1 else ""
        return CheckResult(score=0.0, passed=False, reason=failures[0] + more, evidence=failures[:5],
                           details={**details, "failures": failures})

    if cat == "irrelevance":
        if calls:
            return failed([f"expected no call (irrelevance), got {len(calls)}"])
        return CheckResult(score=1.0, passed=True, reason="no call, as expected (irrelevance)",
                           details={**details, "failures": []})
    if not expected:
        raise ValueError(f"category {cat} needs at least one expected call")
    if cat in ("simple", "multiple") and len(expected) != 1:
        raise ValueError(f"category {cat} takes one expected call, got {len(expected)}")
    if len(calls) != len(expected):
        return failed([f"expected {len(expected)} call{'s' if len(expected) != 1 else ''}, got {len(calls)}"])

    def name_of(name: str) -> str:
        return name.replace(".", "_") if underscore_to_dot else name

    def doc_of(name: str) -> dict[str, Any] | None:
        if docs is None:
            return None
        if name not in docs:
            raise ValueError(f"no function documentation for '{name}' (functions: {', '.join(docs) or 'none'})")
        return docs[name]

    for w, _ in expected:
        doc_of(w)  # every expected function documented, before any pairing
    known: dict[tuple[int, int], str | None] = {}

    def why(e: int, a: int) -> str | None:
        if (e, a) not in known:
            w, p = expected[e]
            c = calls[a]
            known[(e, a)] = _call_problem(c.name, c.args, c.problem, name_of(w), p, doc_of(w))
        return known[(e, a)]

    # Bucketed by function name and narrowed by an argument's value before any arguments are compared: 1,200
    # expected and 1,200 actual calls are not 1.44 million comparisons.
    cands = _candidates(calls, [name_of(w) for w, _ in expected], [p for _, p in expected])
    match = _assign(cands, lambda e, a: why(e, a) is None, len(calls))
    failures = []
    taken = {a for a in match if a is not None}
    for e, a in enumerate(match):
        if a is not None:
            continue
        want = expected[e][0]
        free = [i for i in range(len(calls)) if i not in taken]
        # The closest candidate: a free call of the same function, else the free call in its place.
        best = next((i for i in free if calls[i].name == name_of(want)), e if e in free else free[0])
        label = f"call {best + 1} {calls[best].name}"
        if len(expected) > 1:
            label += f" (for expected call {e + 1} {want})"
        failures.append(f"{label}: {why(e, best)}")
    if failures:
        return failed(failures)
    return CheckResult(score=1.0, passed=True,
                       reason=f"{len(calls)} call{'s' if len(calls) != 1 else ''} match ({cat})",
                       details={**details, "failures": []})


def match_tool_calls(actual: Any, expected: Sequence[Mapping[str, Any]],
                     functions: list[dict[str, Any]] | None = None, category: str | None = None, *,
                     underscore_to_dot: bool = False) -> CheckResult:
    """Grade ``actual`` tool calls against BFCL-style possible answers, by the leaderboard's rules.

    ``actual``: a list of calls (``{name: args}``, ``{name, arguments}``, OpenAI ``{function: {...}}``,
    ``{tool, args}``; arguments as objects or JSON text), an assistant turn ``{"content", "tool_calls"}``, or
    its JSON text. ``expected``: ``[{function_name: {param: [possible values]}}]`` (``""`` among the values
    marks an optional parameter; ``[]`` means no call is right). ``functions``: the function documentation
    (BFCL's ``function`` field: ``{name, parameters: {properties, required}}``) giving types and required
    parameters; without it the possible answers' own types are expected and every parameter without ``""``
    is required. ``category``: simple, multiple, parallel, parallel_multiple or irrelevance (inferred from
    ``expected`` when not given). ``underscore_to_dot``: accept ``a_b`` for a function named ``a.b`` (APIs that
    refuse dots in tool names).

    Returns a :class:`CheckResult`: score 1.0 and passed, or 0.0 with a reason naming the call, the argument
    and why, every failure listed in ``details["failures"]``. A call whose arguments are not JSON is a failed
    match, never an exception; malformed ``expected`` / ``functions`` raise :class:`~referee.errors.OptionError`.
    """
    if category is not None and category not in CATEGORIES:
        raise OptionError("category", f"unknown category {category!r} ({', '.join(CATEGORIES)})")
    exp = _check_expected(expected)
    docs = _check_functions(functions) if functions is not None else None
    try:
        calls = _calls(actual)
    except ValueError as exc:
        return CheckResult(score=0.0, passed=False, reason=str(exc), details={"failures": [str(exc)]})
    try:
        return _grade(calls, exp, docs, category, underscore_to_dot)
    except ValueError as exc:
        raise OptionError("expected", str(exc)) from None


@register
@dataclass
class ToolCalls(Evaluator):
    """The agent's tool calls match the expected ones by the Berkeley Function Calling Leaderboard's rules."""

    name: ClassVar[str] = "tool_calls"
    expected: list[dict[str, dict[str, list[Any]]]] | None = None
    """Possible answers, BFCL's format: [{function_name: {param: [possible values]}}]; else the case's
    expect.tool_calls or ground_truth field."""
    functions: list[dict[str, Any]] | None = None
    """Function documentation (BFCL's function field: name, parameters.properties with types, required); else
    the case's functions or function field."""
    category: Category | None = None
    """simple, multiple, parallel, parallel_multiple or irrelevance; inferred from the expected calls."""
    source: Literal["auto", "trajectory", "output", "field"] = "auto"
    """Where the calls are read: the trajectory, the output's tool calls, or the calls_field (auto: in that
    order)."""
    calls_field: str = "calls"
    """The case field holding the calls when source is field (or auto finds neither of the others)."""
    underscore_to_dot: bool = False
    """Accept a_b for a function named a.b (for APIs that refuse dots in tool names)."""

    def __post_init__(self) -> None:
        if self.expected is not None:
            _check_expected(self.expected)
        if self.functions is not None:
            _check_functions(self.functions)

    def _actual(self, case: Case, output: Any) -> tuple[Any, str | None]:
        """``(calls, None)``, or ``(None, why there are none to grade)``; a trajectory that cannot be read
        raises TrajectoryError."""
        has_traj = any(case.get(k) is not None for k in ("trajectory", "messages", "spans", "resourceSpans"))
        if self.source in ("auto", "trajectory") and has_traj:
            traj = trajectory_of(case)
            return [_Call(s.tool, None, f"arguments are not JSON: {str(s.extra['raw_arguments'])[:60]!r}")
                    if "raw_arguments" in s.extra else _Call(s.tool, s.args if isinstance(s.args, dict) else {})
                    for s in traj.steps], None
        if self.source == "trajectory":
            return None, "no trajectory in the case"
        if self.source in ("auto", "output") and output is not None:
            calls = _output_calls(output)
            if calls is not None or self.source == "output":
                return calls or [], None
        if self.source in ("auto", "field") and case.get(self.calls_field) is not None:
            return case.get(self.calls_field), None
        if self.source == "auto" and output is not None:
            return [], None  # a text answer without tool calls
        return None, f"no tool calls to grade (no trajectory, output or '{self.calls_field}' field)"

    def evaluate(self, case: Case, output: Any) -> CheckResult:
        expected = self.expected
        if expected is None:
            e = case.get("expect")
            expected = e.get("tool_calls") if isinstance(e, dict) and "tool_calls" in e else case.get("ground_truth")
        if expected is None and self.category == "irrelevance":
            expected = []
        if expected is None:
            return CheckResult(score=None, status="unscored",
                               reason="tool_calls: nothing to check (no 'expected' option and no expect.tool_calls "
                                      "or ground_truth in the case)")
        functions = self.functions
        if functions is None:
            functions = case.get("functions", case.get("function"))
        where = f"{case.where}: " if case.where else ""
        try:
            actual, none = self._actual(case, output)
        except TrajectoryError as exc:
            if exc.reason.startswith("arguments"):  # not JSON, or not an object: a failed call, not a bad case
                why = f"call {exc.step}: {exc.reason}"
                return CheckResult(score=0.0, passed=False, reason=why, details={"failures": [why]})
            return CheckResult.error(str(exc))
        if none is not None:
            return CheckResult(score=None, status="unscored", reason=none)
        try:
            return match_tool_calls(actual, expected, functions, self.category,
                                    underscore_to_dot=self.underscore_to_dot)
        except OptionError as exc:
            return CheckResult.error(f"{where}case '{case.id}': tool_calls: {exc}")


def _output_calls(output: Any) -> Any:
    """The tool calls an output carries (an assistant turn, a list of calls, or their JSON text); None when it
    is an answer without calls."""
    value = output
    if isinstance(value, str):
        s = value.strip()
        if s[:1] not in ("{", "["):
            return None
        try:
            value = _data.loads(s)
        except _data.UnsafeData:
            return s  # graded as calls, and refused there with the reason
        except json.JSONDecodeError:
            return None
    if isinstance(value, dict) and isinstance(value.get("tool_calls"), list):
        return list(value["tool_calls"])
    if isinstance(value, list) and all(isinstance(v, dict) for v in value):
        return value
    return None
