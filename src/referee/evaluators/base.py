"""The evaluator contract shared by checks, trajectory checks and plugins.

An evaluator is a dataclass whose fields are its configuration (so ``{name: {option: value}}`` in a suite
file maps onto it), with one method, ``evaluate``, returning a :class:`CheckResult`. LLM-judged evaluators
implement ``evaluate_async`` instead. A check that raises becomes an ``error`` result: it never stops a run.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from ..cases import Case
from ..errors import UserError


@dataclass
class CheckResult:
    """What one evaluator says about one case."""

    score: float | None
    """0-1 (None when unscored or error)."""
    passed: bool | None = None
    reason: str = ""
    status: Literal["scored", "unscored", "error"] = "scored"
    evidence: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_bool(cls, ok: bool, reason: str = "", **details: Any) -> CheckResult:
        return cls(score=1.0 if ok else 0.0, passed=ok, reason=reason, details=details)

    @classmethod
    def error(cls, message: str) -> CheckResult:
        return cls(score=None, passed=None, reason=message, status="error")


@dataclass
class Evaluator:
    """Base class. Subclasses are dataclasses; ``name`` is how suite files refer to them."""

    name: ClassVar[str] = ""
    version: ClassVar[int] = 1
    is_llm: ClassVar[bool] = False

    def evaluate(self, case: Case, output: Any) -> CheckResult:
        """Judge ``output`` (the case's output unless a suite says otherwise) for ``case``."""
        raise NotImplementedError(f"{type(self).__name__} must implement evaluate()")

    async def evaluate_async(self, case: Case, output: Any) -> CheckResult:
        return self.evaluate(case, output)


_REGISTRY: dict[str, type[Evaluator]] = {}


def register(cls: type[Evaluator]) -> type[Evaluator]:
    """Class decorator: make an evaluator available by its ``name`` in suite files."""
    if not cls.name:
        raise TypeError(f"{cls.__name__} needs a non-empty 'name'")
    _REGISTRY[cls.name] = cls
    return cls


def registry() -> dict[str, type[Evaluator]]:
    _load_builtins()
    return dict(_REGISTRY)


_BUILTIN_MODULES = ("referee.evaluators.checks", "referee.evaluators.trajectory")
_loaded = False


def _load_builtins() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    import importlib

    for mod in _BUILTIN_MODULES:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name != mod:
                raise


def build(name: str, options: dict[str, Any] | None = None, *, where: str = "") -> Evaluator:
    """Instantiate an evaluator by name with its options; UserError naming what is wrong."""
    reg = registry()
    cls = reg.get(name)
    if cls is None:
        raise UserError(f"{where}unknown evaluator '{name}' (known: {', '.join(sorted(reg))})")
    options = dict(options or {})
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(options) - names)
    if unknown:
        raise UserError(f"{where}evaluator '{name}' has no option(s) {', '.join(unknown)} "
                        f"(options: {', '.join(sorted(names)) or 'none'})")
    try:
        return cls(**options)
    except (TypeError, ValueError) as exc:
        raise UserError(f"{where}evaluator '{name}': {exc}") from exc


def function_evaluator(fn: Callable[..., Any], name: str | None = None) -> Evaluator:
    """Wrap a plain function ``fn(case, output) -> bool | float | CheckResult`` as an evaluator (plugins)."""
    fname: str = name or str(getattr(fn, "__name__", "function"))
    is_async = inspect.iscoroutinefunction(fn)

    def coerce(value: Any) -> CheckResult:
        if isinstance(value, CheckResult):
            return value
        if isinstance(value, bool):
            return CheckResult.from_bool(value)
        if isinstance(value, int | float):
            return CheckResult(score=float(value))
        raise TypeError(f"{fname} returned {type(value).__name__}; expected bool, float or CheckResult")

    @dataclass
    class _Fn(Evaluator):
        name: ClassVar[str] = fname

        def evaluate(self, case: Case, output: Any) -> CheckResult:
            return coerce(fn(case, output))

        async def evaluate_async(self, case: Case, output: Any) -> CheckResult:
            if is_async:
                return coerce(await fn(case, output))
            return coerce(fn(case, output))

    return _Fn()
