"""Plain functions as evaluators: the one adapter behind :func:`referee.as_evaluator`,
:func:`referee.evaluators.function_evaluator` and plugin functions in suites (``module:attr``, entry points).

**The rule**, by parameter name:

* a parameter named ``output`` receives the output being judged, one named ``case`` the :class:`~referee.Case`,
  in whatever order they are declared;
* any other named parameter (or ``**options``) receives the entry's options as keyword arguments (a suite's
  ``- my_project.checks:polite: {word: thanks}``);
* without a parameter named ``output`` or ``case``, the positional order is ``(output)`` or ``(output, case)``.

A function of two positional parameters named neither way is refused where referee once documented the other
order (``function_evaluator``, plugins: ``(case, output)``), rather than silently given its arguments swapped:
name them ``case`` and ``output``. The function may be ``async`` and returns a bool (pass or fail), a number 0-1
(a score) or a :class:`~referee.CheckResult`; one that raises gives an ``error`` result for that case.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from ..cases._case import Case
from ..errors import UserError
from ._base import CheckResult, Evaluator

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


@dataclass(frozen=True)
class CallPlan:
    """How a function is called: its ``(case, output)`` arguments and which options it takes."""

    positional: tuple[str, ...]
    """``"case"`` / ``"output"`` for each positional argument, in order."""
    keywords: tuple[str, ...]
    """``case`` / ``output`` passed by name (keyword-only parameters)."""
    options: frozenset[str]
    """Other named parameters: the options it accepts."""
    var_keyword: bool
    """It takes ``**options`` (any option)."""


def _python_scalar(value: Any) -> Any:
    """A numpy scalar (``numpy.bool_``, ``int64``, ``float32`` ...: what ``arr.mean() > 0.5`` returns) as the Python
    value it holds; anything else unchanged. numpy is never imported here."""
    cls = type(value)
    if cls.__module__ == "numpy" and getattr(value, "ndim", None) == 0 and hasattr(value, "item"):
        return value.item()
    return value


def _type_name(value: Any) -> str:
    """``str``, ``numpy.ndarray``: the real type, even where a foreign type shares a builtin's name."""
    cls = type(value)
    return cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def call_plan(fn: Callable[..., Any], label: str, *, unnamed_pair_refused: bool = False) -> CallPlan:
    """The module docstring's rule applied to ``fn``'s signature; :class:`UserError` naming ``label`` when it
    cannot take an output (or, with ``unnamed_pair_refused``, when two unnamed parameters are ambiguous)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature: the positional fallback
        return CallPlan(("output", "case"), (), frozenset(), True)
    named = {p.name for p in params if p.name in ("case", "output") and p.kind != p.VAR_POSITIONAL
             and p.kind != p.VAR_KEYWORD}
    positional = [p for p in params if p.kind in _POSITIONAL]
    var_positional = any(p.kind == p.VAR_POSITIONAL for p in params)
    var_keyword = any(p.kind == p.VAR_KEYWORD for p in params)
    keyword_only = [p for p in params if p.kind == p.KEYWORD_ONLY]
    if named:
        pos: list[str] = []
        for p in positional:
            if p.name not in ("case", "output"):
                break  # the rest are options (by name) or defaults
            pos.append(p.name)
        nxt = positional[len(pos)] if len(pos) == 1 and len(positional) > 1 else None
        if nxt is not None and nxt.default is nxt.empty and nxt.name not in ("case", "output"):
            pos.append("output" if pos[0] == "case" else "case")  # fn(case, out): the other one, positionally
        kw = [p.name for p in [*positional[len(pos):], *keyword_only] if p.name in ("case", "output")
              and p.name not in pos]
        opts = {p.name for p in [*positional[len(pos):], *keyword_only] if p.name not in ("case", "output")}
        required = [p.name for p in positional[len(pos):] if p.name in opts and p.default is p.empty]
        if required:
            raise UserError(f"evaluator {label}: parameter(s) {', '.join(required)} before or without a default "
                            "take no argument (name the output 'output' and the case 'case'; options need "
                            "defaults or come after them)")
        return CallPlan(tuple(pos), tuple(kw), frozenset(opts), var_keyword)
    n = len(positional)
    if n == 0 and not var_positional:
        raise UserError(f"evaluator {label}: a function evaluator takes (output), (output, case), or parameters "
                        "named output and case")
    if unnamed_pair_refused and n >= 2 and positional[1].default is positional[1].empty:
        raise UserError(f"evaluator {label}: name its parameters 'case' and 'output' ({positional[0].name}, "
                        f"{positional[1].name} are taken as (output, case), which was not always so)")
    order = ("output",) if n == 1 else ("output", "case")
    rest = positional[len(order):]
    opts = {p.name for p in [*rest, *keyword_only]}
    return CallPlan(order, (), frozenset(opts), var_keyword)


def function_adapter(fn: Callable[..., Any], name: str | None = None, *, options: dict[str, Any] | None = None,
                     unnamed_pair_refused: bool = False) -> Evaluator:
    """``fn`` as an evaluator under the module docstring's rule, with ``options`` as its keyword arguments."""
    label = name or str(getattr(fn, "__name__", "") or type(fn).__name__)
    if label == "<lambda>":
        label = "lambda"
    plan = call_plan(fn, label, unnamed_pair_refused=unnamed_pair_refused)
    opts = dict(options or {})
    unknown = sorted(set(opts) - plan.options) if not plan.var_keyword else []
    if unknown:
        from ..errors import OptionError

        raise OptionError.of([(u, f"unknown option (options: {', '.join(sorted(plan.options)) or 'none'})")
                              for u in unknown])
    is_async = inspect.iscoroutinefunction(fn)

    def call(case: Case, output: Any) -> Any:
        values = {"case": case, "output": output}
        kwargs = {k: values[k] for k in plan.keywords}
        return fn(*(values[k] for k in plan.positional), **kwargs, **opts)

    def coerce(value: Any) -> CheckResult:
        value = _python_scalar(value)
        if isinstance(value, CheckResult):
            return value
        if isinstance(value, bool):
            return CheckResult.from_bool(value)
        if isinstance(value, int | float):
            return CheckResult(score=float(value))
        raise TypeError(f"{label} returned {_type_name(value)}; expected bool, float or CheckResult")

    @dataclass
    class _Fn(Evaluator):
        name: ClassVar[str] = label

        def evaluate(self, case: Case, output: Any) -> CheckResult:
            if is_async:
                raise RuntimeError(f"{label} is async: run it with referee.evaluate or a suite")
            return coerce(call(case, output))

        async def evaluate_async(self, case: Case, output: Any) -> CheckResult:
            if is_async:
                return coerce(await call(case, output))
            return coerce(call(case, output))

    return _Fn()


def option_names(fn: Callable[..., Any]) -> tuple[set[str], bool]:
    """The options ``fn`` accepts under the rule, and whether it takes ``**options``."""
    plan = call_plan(fn, str(getattr(fn, "__name__", "function")))
    return set(plan.options), plan.var_keyword


def function_evaluator(fn: Callable[..., Any], name: str | None = None) -> Evaluator:
    """Wrap a plain function as an evaluator (plugins): ``fn(case, output) -> bool | float | CheckResult``, by
    the one rule of :mod:`referee.evaluators._functions` (parameters named ``case`` and ``output`` receive
    those, in any order; two unnamed parameters are refused rather than guessed)."""
    return function_adapter(fn, name, unnamed_pair_refused=True)
