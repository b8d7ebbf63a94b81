"""The deterministic trajectory checks, one class each: which tools, in what order, with which arguments,
within what budget, without loops or ignored errors, and whether the goal was reached.

Each takes its expectations from its options or, for an option not given, from the case's ``expect`` block
(the format is in :mod:`referee.evaluators._trajectory`, their public face). The ``trajectory`` check
(``_trajectory_combine.py``) combines them: a correct final answer reached by a broken trajectory never
scores 1.0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from .._util import _regex
from ..cases._case import Case
from ..trajectories import Trajectory, TrajectoryError, trajectory_of
from ..trajectories._parse import float_or_none
from ._base import CheckResult, Evaluator, register
from ._output_text import as_text


def expectations(case: Case) -> dict[str, Any]:
    e = case.get("expect")
    return e if isinstance(e, dict) else {}


def _pick(option: Any, case: Case, *keys: str) -> Any:
    """The option when set, else the first of ``keys`` present in the case's ``expect`` block."""
    if option is not None:
        return option
    exp = expectations(case)
    for k in keys:
        if exp.get(k) is not None:
            return exp[k]
    return None


def _where(case: Case) -> str:
    return f"{case.where}: " if case.where else ""


def _no_expectation(name: str, what: str) -> CheckResult:
    return CheckResult(score=None, status="unscored",
                       reason=f"{name}: nothing to check (no '{what}' option and no expect.{what} in the case)")


def _as_list(value: Any, what: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{what} must be a list of tool names")
    return list(value)


class _TrajectoryEvaluator(Evaluator):
    """Loads the case's trajectory once per call; a malformed one is an ``error`` result naming case and step."""

    def evaluate(self, case: Case, output: Any) -> CheckResult:
        try:
            traj = trajectory_of(case)
        except TrajectoryError as exc:
            return CheckResult.error(str(exc))
        try:
            return self.check(case, traj, output if output is not None else traj.final_output)
        except (ValueError, TypeError, re.error) as exc:
            return CheckResult.error(f"{_where(case)}case '{case.id}': {self.name}: {exc}")

    def check(self, case: Case, traj: Trajectory, output: Any) -> CheckResult:
        raise NotImplementedError


@register
@dataclass
class ToolUsed(_TrajectoryEvaluator):
    """The agent called the expected tools (``mode: all``) or at least one of them (``any``)."""

    name: ClassVar[str] = "tool_used"
    tools: list[str] | None = None
    mode: str = "all"

    def __post_init__(self) -> None:
        if self.mode not in ("all", "any"):
            raise ValueError("mode must be 'all' or 'any'")

    def check(self, case: Case, traj: Trajectory, output: Any) -> CheckResult:
        raw = _pick(self.tools, case, "tools_used", "tools")
        if raw is None:
            return _no_expectation(self.name, "tools_used")
        wanted = _as_list(raw, "tools_used")
        used = set(traj.tools)
        missing = [t for t in wanted if t not in used]
        ok = not missing if self.mode == "all" else len(missing) < len(wanted)
        score = (len(wanted) - len(missing)) / len(wanted) if wanted and self.mode == "all" else float(ok)
        reason = "all expected tools used" if not missing else f"not called: {', '.join(missing)}"
        if ok and missing:  # mode any
            reason = f"called {', '.join(t for t in wanted if t in used)} (any of {', '.join(wanted)} will do)"
        return CheckResult(score=score, passed=ok, reason=reason, details={"missing": missing})


@register
@dataclass
class ToolNotUsed(_TrajectoryEvaluator):
    """Forbidden tools were never called. A forbidden call zeroes the ``trajectory`` score (critical)."""

    name: ClassVar[str] = "tool_not_used"
    tools: list[str] | None = None

    def check(self, case: Case, traj: Trajectory, output: Any) -> CheckResult:
        raw = _pick(self.tools, case, "tools_not_used", "forbidden_tools")
        if raw is None:
            return _no_expectation(self.name, "tools_not_used")
        forbidden = set(_as_list(raw, "tools_not_used"))
        hits = [s for s in traj.steps if s.tool in forbidden]
        if hits:
            return CheckResult(score=0.0, passed=False,
                               reason="forbidden tool called: " + ", ".join(f"{s.tool} (step {s.index})" for s in hits),
                               evidence=[f"step {s.index}: {s.tool}" for s in hits],
                               details={"steps": [s.index for s in hits]})
        return CheckResult.from_bool(True, "no forbidden tool called")


def _in_order(expected: list[str], actual: list[str]) -> int:
    """How many of ``expected`` appear in ``actual`` in order (greedy subsequence match)."""
    i = 0
    for tool in actual:
        if i < len(expected) and tool == expected[i]:
            i += 1
    return i


@register
@dataclass
class ToolSequence(_TrajectoryEvaluator):
    """``exact``: the tool sequence equals the expected one. ``in_order``: the expected tools appear in that
    order, other calls allowed between. ``unordered``: the same set of tools (``allow_extra`` admits others)."""

    name: ClassVar[str] = "tool_sequence"
    expected: list[str] | None = None
    mode: str | None = None
    allow_extra: bool = False

    def __post_init__(self) -> None:
        if self.mode not in (None, "exact", "in_order", "unordered"):
            raise ValueError("mode must be exact, in_order or unordered")

    def check(self, case: Case, traj: Trajectory, output: Any) -> CheckResult:
        raw = _pick(self.expected, case, "sequence")
        if raw is None:
            return _no_expectation(self.name, "sequence")
        expected = _as_list(raw, "sequence")
        mode = self.mode or expectations(case).get("sequence_mode") or "exact"
        actual = traj.tools
        details: dict[str, Any] = {"expected": expected, "actual": actual, "mode": mode}
        if mode == "exact":
            ok = actual == expected
            if ok:
                return CheckResult.from_bool(True, "exact tool sequence", **details)
            at = next((i for i, (a, b) in enumerate(zip(actual, expected, strict=False)) if a != b),
                      min(len(actual), len(expected)))
            got_t = actual[at] if at < len(actual) else "(end)"
            want_t = expected[at] if at < len(expected) else "(end)"
            return CheckResult(score=0.0, passed=False, details=details,
                               reason=f"sequence differs at step {at + 1}: expected {want_t}, got {got_t}")
        if mode == "in_order":
            n = _in_order(expected, actual)
            ok = n == len(expected)
            reason = "expected tools called in order" if ok else \
                f"in-order match stops at {expected[n]} ({n}/{len(expected)} matched)"
            return CheckResult(score=n / len(expected) if expected else 1.0, passed=ok, reason=reason,
                               details=details)
        if mode != "unordered":
            raise ValueError(f"unknown sequence_mode {mode!r} (exact, in_order, unordered)")
        want, got = set(expected), set(actual)
        missing, extra = sorted(want - got), sorted(got - want)
        ok = not missing and (self.allow_extra or not extra)
        parts = []
        if missing:
            parts.append("missing " + ", ".join(missing))
        if extra and not self.allow_extra:
            parts.append("unexpected " + ", ".join(extra))
        score = len(want & got) / len(want | (got if not self.allow_extra else want)) if want or got else 1.0
        return CheckResult(score=score, passed=ok, reason="; ".join(parts) or "same set of tools",
                           details={**details, "missing": missing, "extra": extra})


def _get_path(obj: Any, path: str) -> tuple[bool, Any]:
    cur = obj
    for part in path.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            return False, None
    return True, cur


def subset_match(expected: Any, actual: Any) -> bool:
    """Every key of ``expected`` is in ``actual`` with a matching value (recursively for objects)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and subset_match(v, actual[k]) for k, v in expected.items())
    return bool(expected == actual)


def _args_match(mode: str, expected: Any, actual: Any) -> tuple[bool, str]:
    if mode == "exact":
        return expected == actual, "arguments equal" if expected == actual else "arguments differ"
    if mode == "subset":
        ok = subset_match(expected, actual)
        return ok, "expected arguments present" if ok else "expected arguments missing or different"
    if mode == "regex":
        if not isinstance(expected, dict):
            raise ValueError("regex args must map argument paths to patterns")
        for path, pattern in expected.items():
            found, value = _get_path(actual, path)
            if not found:
                return False, f"argument '{path}' missing"
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            if _regex.search(str(pattern), text, full=True) is None:
                return False, f"argument '{path}'={text!r} does not match /{pattern}/"
        return True, "arguments match the patterns"
    if mode == "schema":
        import jsonschema  # on first use: loading every suite's evaluators must not import it (~30 ms)

        try:
            jsonschema.validate(actual, expected)
        except jsonschema.ValidationError as exc:
            where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
            return False, f"schema violation at {where}: {exc.message}"
        except jsonschema.SchemaError as exc:
            raise ValueError(f"invalid JSON Schema: {exc.message}") from exc
        return True, "arguments valid against the schema"
    raise ValueError(f"unknown match mode {mode!r} (exact, subset, regex, schema)")


@register
@dataclass
class ToolArgs(_TrajectoryEvaluator):
    """Arguments of a tool's calls match: ``exact``, ``subset`` (expected keys present with these values),
    ``regex`` (``{path: pattern}``, full match, dotted paths) or ``schema`` (JSON Schema). ``which``: any call
    of the tool may match, all must, or only the first / last. Case form: ``expect.args: [{tool, args, match,
    which}]`` (every spec must hold)."""

    name: ClassVar[str] = "tool_args"
    tool: str | None = None
    args: Any = None
    match: str = "subset"
    which: str = "any"

    def __post_init__(self) -> None:
        # Reported by ``referee validate`` at load time, not as one error row per case.
        if self.match not in ("exact", "subset", "regex", "schema"):
            raise ValueError(f"unknown match mode {self.match!r} (exact, subset, regex, schema)")
        if self.which not in ("any", "all", "first", "last"):
            raise ValueError(f"unknown 'which' {self.which!r} (any, all, first, last)")
        if self.tool is not None and self.match == "regex":
            if not isinstance(self.args, dict):
                raise ValueError("regex args must map argument paths to patterns")
            for path, pattern in self.args.items():
                try:
                    re.compile(str(pattern))
                except re.error as exc:
                    raise ValueError(f"invalid regex for '{path}': {exc}") from None
        if self.tool is not None and self.match == "schema":
            import jsonschema

            try:
                jsonschema.Draft202012Validator.check_schema(self.args)
            except jsonschema.SchemaError as exc:
                raise ValueError(f"invalid JSON Schema: {exc.message}") from None

    def check(self, case: Case, traj: Trajectory, output: Any) -> CheckResult:
        if self.tool is not None:
            specs = [{"tool": self.tool, "args": self.args, "match": self.match, "which": self.which}]
        else:
            raw = expectations(case).get("args")
            if raw is None:
                return _no_expectation(self.name, "args")
            specs = raw if isinstance(raw, list) else [raw]
        results = []
        for i, spec in enumerate(specs):
            if not isinstance(spec, dict) or not isinstance(spec.get("tool"), str):
                raise ValueError(f"expect.args[{i}] needs 'tool' and 'args'")
            results.append(self._one(traj, spec))
        failed = [r for ok, r in results if ok is False]
        unknown = [r for ok, r in results if ok is None]
        ok_n = sum(ok is True for ok, _ in results)
        if unknown and not failed:
            # OTel records arguments only when asked to (they may be sensitive): unknown, not a mismatch.
            return CheckResult(score=None, status="unscored", reason="; ".join(unknown),
                               details={"specs": len(results), "matched": ok_n})
        checked = len(results) - len(unknown)
        reasons = failed or [r for _, r in results]
        return CheckResult(score=ok_n / checked, passed=not failed, reason="; ".join(reasons),
                           details={"specs": len(results), "matched": ok_n})

    def _one(self, traj: Trajectory, spec: dict[str, Any]) -> tuple[bool | None, str]:
        tool = spec["tool"]
        mode = spec.get("match", self.match)
        which = spec.get("which", self.which)
        calls = [s for s in traj.steps if s.tool == tool]
        if not calls:
            return False, f"{tool} was never called"
        if which == "first":
            calls = calls[:1]
        elif which == "last":
            calls = calls[-1:]
        elif which not in ("any", "all"):
            raise ValueError(f"unknown 'which' {which!r} (any, all, first, last)")
        if all(s.extra.get("args_recorded") is False for s in calls):
            return None, f"{tool}: arguments not recorded (steps {', '.join(str(s.index) for s in calls)})"
        calls = [s for s in calls if s.extra.get("args_recorded") is not False]
        verdicts = [(s, *_args_match(mode, spec.get("args"), s.args)) for s in calls]
        good = [v for v in verdicts if v[1]]
        ok = bool(good) if which == "any" else len(good) == len(verdicts)
        if ok:
            return True, f"{tool}: {good[0][2]}"
        bad = next(v for v in verdicts if not v[1])
        return False, f"{tool} (step {bad[0].index}): {bad[2]}"


@register
@dataclass
class TrajectoryBudget(_TrajectoryEvaluator):
    """Step, cost, token and latency budgets. A limit whose figure was not recorded makes the check unscored
    (never a silent pass) unless another limit already failed."""

    name: ClassVar[str] = "trajectory_budget"
    max_steps: int | None = None
    max_cost_usd: float | None = None
    max_tokens: int | None = None
    max_latency_ms: float | None = None

    def check(self, case: Case, traj: Trajectory, output: Any) -> CheckResult:
        exp = expectations(case)
        limits = {
            "steps": self.max_steps if self.max_steps is not None else exp.get("max_steps"),
            "cost_usd": self.max_cost_usd if self.max_cost_usd is not None else exp.get("max_cost_usd"),
            "tokens": self.max_tokens if self.max_tokens is not None else exp.get("max_tokens"),
            "latency_ms": self.max_latency_ms if self.max_latency_ms is not None else exp.get("max_latency_ms"),
        }
        if all(v is None for v in limits.values()):
            return _no_expectation(self.name, "max_steps")
        usage = case.get("usage") if isinstance(case.get("usage"), dict) else {}
        case_tokens = None
        if usage and (usage.get("input_tokens") is not None or usage.get("output_tokens") is not None):
            case_tokens = int(usage.get("input_tokens") or 0) + int(usage.get("output_tokens") or 0)
        run_tokens = None
        if traj.input_tokens is not None or traj.output_tokens is not None:
            run_tokens = (traj.input_tokens or 0) + (traj.output_tokens or 0)
        step_tokens = [None if s.input_tokens is None and s.output_tokens is None
                       else (s.input_tokens or 0) + (s.output_tokens or 0) for s in traj.steps]
        # A whole-run figure (the case's own, or the recording's) wins; otherwise the steps' sum, which is
        # complete only when every step recorded it. A partial sum can prove a budget was exceeded, never met.
        figures: dict[str, tuple[Any, bool]] = {
            "steps": (len(traj.steps), True),
            "cost_usd": _figure(float_or_none(case.get("cost_usd")), traj.cost_usd,
                                [s.cost_usd for s in traj.steps]),
            "tokens": _figure(case_tokens, run_tokens, step_tokens),
            "latency_ms": _figure(float_or_none(case.get("latency_ms")), traj.latency_ms,
                                  [s.latency_ms for s in traj.steps]),
        }
        actual = {k: v for k, (v, _) in figures.items()}
        over, unknown = [], []
        for key, limit in limits.items():
            if limit is None:
                continue
            value, complete = figures[key]
            if value is not None and float(value) > float(limit):
                over.append(f"{key} {value:g} > {limit:g}" + ("" if complete else " (already, from some steps)"))
            elif value is None:
                unknown.append(key)
            elif not complete:
                unknown.append(f"{key} (recorded for only some steps)")
        details = {"limits": {k: v for k, v in limits.items() if v is not None}, "actual": actual}
        if over:
            return CheckResult(score=0.0, passed=False, reason="over budget: " + ", ".join(over), details=details)
        if unknown:
            return CheckResult(score=None, status="unscored", details=details,
                               reason=f"not recorded, cannot check the budget: {', '.join(unknown)}")
        return CheckResult.from_bool(True, "within budget", **details)


def _figure(case_value: Any, run_value: Any, step_values: list[Any]) -> tuple[Any, bool]:
    """``(value, complete)`` of a budget figure: whole-run value first, else the sum over the steps."""
    for v in (case_value, run_value):
        if v is not None:
            return v, True
    known = [v for v in step_values if v is not None]
    if not known:
        return None, False
    return sum(known), len(known) == len(step_values)


@register
@dataclass
class NoRepeatedCalls(_TrajectoryEvaluator):
    """No identical call (same tool, same arguments) more than ``max_identical`` times: the agent looping.
    A retry right after the identical call failed is not counted (``allow_retry_after_error``)."""

    name: ClassVar[str] = "no_repeated_calls"
    max_identical: int | None = None
    consecutive_only: bool = False
    allow_retry_after_error: bool = True

    def check(self, case: Case, traj: Trajectory, output: Any) -> CheckResult:
        limit = self.max_identical if self.max_identical is not None else \
            int(expectations(case).get("max_identical_calls", 1))
        # Groups of identical calls: all of them, or (consecutive_only) each unbroken run separately.
        groups: list[tuple[str, list[int]]] = []
        by_sig: dict[str, list[int]] = {}
        prev = None
        # Calls whose arguments were not recorded (OTel without gen_ai.tool.call.arguments) would all look
        # identical: they are left out rather than reported as a loop.
        unrecorded = [s.index for s in traj.steps if s.extra.get("args_recorded") is False]
        for s in traj.steps:
            if s.index in unrecorded:
                prev = None
                continue
            sig = s.signature()
            same_as_prev = prev is not None and prev.signature() == sig
            retry = same_as_prev and prev is not None and prev.failed and self.allow_retry_after_error
            if self.consecutive_only:
                if not same_as_prev:
                    groups.append((sig, []))
                if not retry:
                    groups[-1][1].append(s.index)
            elif not retry:
                if sig not in by_sig:
                    by_sig[sig] = []
                    groups.append((sig, by_sig[sig]))
                by_sig[sig].append(s.index)
            prev = s
        loops: dict[str, list[int]] = {}
        for sig, idx in groups:
            if len(idx) > limit and len(idx) > len(loops.get(sig, [])):
                loops[sig] = idx
        if loops:
            first_sig, idx = next(iter(loops.items()))
            tool = first_sig.split("|", 1)[0]
            return CheckResult(score=0.0, passed=False,
                               reason=f"{tool} called {len(idx)} times with identical arguments "
                                      f"(steps {', '.join(map(str, idx))}; at most {limit} allowed)",
                               details={"repeated": {k.split('|', 1)[0]: v for k, v in loops.items()}})
        note = f" (arguments not recorded for steps {', '.join(map(str, unrecorded))}: not compared)" \
            if unrecorded else ""
        return CheckResult.from_bool(True, "no repeated identical calls" + note)


# Phrases that tell the user something failed. A bare "error" or "failure" is not one: "the error rate should
# drop" talks about errors without acknowledging that a tool call failed.
DEFAULT_ACK = (r"(?i)\b(?:"
               r"(?:an?|the|this|that|some) (?:\w+ )?error (?:occurred|happened|came up|was returned)|"
               r"(?:hit|got|encountered|ran into|received|returned|threw|raised|gave|giving) (?:me )?(?:an?|the|some) "
               r"(?:\w+ )?error|error (?:occurred|while|when)|"
               r"failed|fails to|(?:a|the) failure (?:of|in|to|while|when)|unable to|could ?n[o']t|cannot|can't|"
               r"(?:is|was|are|were|seems|currently) (?:temporarily )?(?:unavailable|down|not available)|"
               r"unavailable|try again|went wrong|timed out)\b")


@register
@dataclass
class ToolErrorsHandled(_TrajectoryEvaluator):
    """Every failed tool call was handled: a later call of the same tool succeeded (a retry that worked), or
    the final output acknowledges the failure (``acknowledge_pattern``). Otherwise the error was ignored."""

    name: ClassVar[str] = "tool_errors_handled"
    acknowledge_pattern: str = DEFAULT_ACK

    def check(self, case: Case, traj: Trajectory, output: Any) -> CheckResult:
        failed = [s for s in traj.steps if s.failed]
        if not failed:
            return CheckResult.from_bool(True, "no tool errors")
        text = as_text(output)
        text = _regex.fold_apostrophes(text)  # "couldn’t" as models write it
        acknowledged = _regex.search(self.acknowledge_pattern, text) is not None
        unhandled = []
        for s in failed:
            recovered = any(t.index > s.index and t.tool == s.tool and not t.failed for t in traj.steps)
            if not recovered and not acknowledged:
                unhandled.append(s)
        if unhandled:
            return CheckResult(score=0.0, passed=False,
                               reason="tool error left unhandled: " + "; ".join(
                                   f"{s.tool} (step {s.index}): {s.error}" for s in unhandled),
                               evidence=[str(s.error) for s in unhandled],
                               details={"steps": [s.index for s in unhandled]})
        return CheckResult.from_bool(True, f"{len(failed)} tool error(s), all handled")


@register
@dataclass
class GoalReached(_TrajectoryEvaluator):
    """The goal is reached, judged on the final output (``contains`` / ``not_contains`` / ``regex`` /
    ``equals``) and/or the final state (``state``: a subset of the case's ``final_state``), and/or the last
    tool call (``final_tool``). Case form: ``expect.goal: {...}`` with the same keys."""

    name: ClassVar[str] = "goal_reached"
    contains: list[str] | None = None
    not_contains: list[str] | None = None
    regex: str | None = None
    equals: str | None = None
    state: dict[str, Any] | None = None
    state_field: str = "final_state"
    final_tool: str | None = None
    case_sensitive: bool = False

    def __post_init__(self) -> None:
        if self.regex is not None:
            try:
                re.compile(self.regex)
            except re.error as exc:
                raise ValueError(f"invalid regex {self.regex!r}: {exc}") from None

    def check(self, case: Case, traj: Trajectory, output: Any) -> CheckResult:
        goal = dict(expectations(case).get("goal") or {})
        for key in ("contains", "not_contains", "regex", "equals", "state", "final_tool"):
            if getattr(self, key) is not None:
                goal[key] = getattr(self, key)
        if not goal:
            return _no_expectation(self.name, "goal")
        text = as_text(output)
        norm: Callable[[str], str] = (lambda s: s) if self.case_sensitive else str.lower
        failures: list[str] = []
        unknown: str | None = None
        passes = 0
        for needle in _as_str_list(goal.get("contains")):
            if norm(needle) in norm(text):
                passes += 1
            else:
                failures.append(f"output lacks {needle!r}")
        for needle in _as_str_list(goal.get("not_contains")):
            if norm(needle) in norm(text):
                failures.append(f"output contains {needle!r}")
            else:
                passes += 1
        if goal.get("regex") is not None:
            flags = 0 if self.case_sensitive else re.IGNORECASE
            if _regex.search(str(goal["regex"]), text, flags):
                passes += 1
            else:
                failures.append(f"output does not match /{goal['regex']}/")
        if goal.get("equals") is not None:
            if norm(text.strip()) == norm(str(goal["equals"]).strip()):
                passes += 1
            else:
                failures.append("output differs from the expected answer")
        if goal.get("state") is not None:
            actual_state = case.get(self.state_field)
            if actual_state is None:
                unknown = f"no '{self.state_field}' recorded in the case, cannot check the state"
            elif subset_match(goal["state"], actual_state):
                passes += 1
            else:
                failures.append(f"final state differs: expected {json.dumps(goal['state'], sort_keys=True)}")
        if goal.get("final_tool") is not None:
            last = traj.steps[-1].tool if traj.steps else None
            if last == goal["final_tool"]:
                passes += 1
            else:
                failures.append(f"last tool is {last}, expected {goal['final_tool']}")
        total = passes + len(failures)
        # Like an unrecorded budget figure: a state that was not recorded is never a silent pass, and a
        # failure of another goal part is still a failure.
        if unknown is not None and not failures:
            return CheckResult(score=None, status="unscored", reason=unknown, details={"failed": []})
        if total == 0:
            return _no_expectation(self.name, "goal")
        return CheckResult(score=passes / total, passed=not failures,
                           reason="; ".join(failures) or "goal reached", details={"failed": failures})


def _as_str_list(value: Any) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else [str(v) for v in value]
