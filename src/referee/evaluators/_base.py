"""The one evaluator contract: checks, LLM judges and plugins all implement it, and one runner runs them.

An evaluator is a dataclass whose fields are its configuration (so ``{name: {option: value}}`` in a suite
file, or ``Regex(pattern=...)`` in Python, maps onto it), with one method returning a :class:`CheckResult`:

* a check implements ``evaluate(case, output)`` (pure, microseconds; ``evaluate_async`` defaults to it);
* an LLM judge subclasses :class:`LLMEvaluator`: the runner passes the judge settings explicitly with
  ``bind(JudgeSettings(client, max_tokens, temperature, seed, use_cache))`` on a private copy, then awaits
  ``evaluate_async(case, output)``; ``request(case, output)`` builds the prompt without calling anyone (dry runs).

A result carries what the judge cost as typed fields (``usage``, ``cost_usd``, ``judge``, ``raw_reply``,
``latency_ms``), never hidden in ``details``. A check that raises becomes an ``error`` result and an unscorable
judge reply an ``unscored`` one: neither stops a run, and neither is ever turned into a score.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Self

from ..cases._case import Case
from ..results._check import CheckResult
from ..results._rows import result_row

__all__ = ["CheckResult", "Evaluator", "JudgeSettings", "LLMEvaluator", "lookup",
           "register", "registry", "result_row", "with_output"]

if TYPE_CHECKING:
    from ..providers._base import JudgeRequest
    from ..runner._client import JudgeClient


def with_output(case: Case, output: Any) -> Case:
    """``case`` judged on ``output`` (a suite's ``field:``, a target's generation) instead of its own."""
    if output is case.output:
        return case
    return Case(id=case.id, data={**case.data, "output": output}, source=case.source, line=case.line)


@dataclass
class Evaluator:
    """Base class. Subclasses are dataclasses; ``name`` is how suite files refer to them."""

    name: ClassVar[str] = ""
    is_llm: ClassVar[bool] = False
    internal_options: ClassVar[frozenset[str]] = frozenset()
    """Constructor fields that commands set (a results file's category, a recorded template hash) and suite
    files do not: they are not suite options."""
    path_options: ClassVar[frozenset[str]] = frozenset()
    """Options naming a file, which a suite file gives relative to itself (as it does ``*_file`` options)."""
    option_types: ClassVar[dict[str, Any]] = {}
    """An option's type in suite files where it differs from the field's (a path where Python also takes an
    object)."""

    @property
    def row_evaluator(self) -> str:
        """The ``evaluator`` of this evaluator's own rows (a run with it alone): its command's label where it has
        one (``judge`` for the template judge), else its name."""
        return str(getattr(self, "evaluator", "") or self.name or type(self).__name__)

    def evaluate(self, case: Case, output: Any) -> CheckResult:
        """Judge ``output`` (the case's output unless a suite says otherwise) for ``case``."""
        raise NotImplementedError(f"{type(self).__name__} must implement evaluate()")

    async def evaluate_async(self, case: Case, output: Any) -> CheckResult:
        return self.evaluate(case, output)


@dataclass
class JudgeSettings:
    """What the runner hands an LLM evaluator: the client and the sampling settings."""

    client: JudgeClient | None
    """None in dry runs, which only build prompts."""
    max_tokens: int = 1024
    temperature: float | None = None
    seed: int | None = None
    use_cache: bool = True


@dataclass
class LLMEvaluator(Evaluator):
    """Base of every LLM-judged evaluator (see the module docstring for the contract)."""

    is_llm: ClassVar[bool] = True
    _settings: JudgeSettings | None = field(init=False, repr=False, default=None, compare=False)

    def bind(self, settings: JudgeSettings) -> None:
        """Receive the run's judge settings (the runner calls this on a private copy of the evaluator)."""
        self._settings = settings

    def bound(self, settings: JudgeSettings) -> Self:
        """A copy of this evaluator bound to ``settings`` (this one is left as it was)."""
        other = copy.copy(self)
        other.bind(settings)
        return other

    @property
    def settings(self) -> JudgeSettings | None:
        return self._settings

    def client(self) -> JudgeClient:
        """The bound judge client; RuntimeError when there is none (an unbound evaluator only builds prompts)."""
        s = self._settings
        if s is None or s.client is None:
            raise RuntimeError(f"{type(self).__name__}: bind the judge settings first (a run does)")
        return s.client

    def sampling(self, max_tokens: int | None = None) -> dict[str, Any]:
        """The request's sampling settings: ``max_tokens`` (the evaluator's own, else the run's), temperature
        and seed from the bound settings (defaults when unbound, for dry runs)."""
        s = self._settings or JudgeSettings(client=None)
        return {"max_tokens": max_tokens or s.max_tokens, "temperature": s.temperature, "seed": s.seed}

    @property
    def use_cache(self) -> bool:
        return self._settings.use_cache if self._settings is not None else True

    def request(self, case: Case, output: Any) -> JudgeRequest:
        """The judge request for ``case`` (for dry runs: counted, never sent)."""
        raise NotImplementedError(f"{type(self).__name__} does not build its request ahead of the call")

    def call_requests(self, case: Case, output: Any) -> list[JudgeRequest]:
        """Every judge request one case costs (for dry runs: counted, never sent); one unless a judge makes more."""
        return [self.request(case, output)]

    def with_defaults(self, **defaults: Any) -> LLMEvaluator:
        """A copy taking the suite's ``judge:`` defaults (template, rubric, max_tokens) it leaves unset."""
        return self

    def evaluate(self, case: Case, output: Any) -> CheckResult:
        raise RuntimeError(f"{self.name or type(self).__name__} is an LLM judge: run it with referee.evaluate, a "
                           "suite (referee run) or await evaluate_async")

    async def evaluate_async(self, case: Case, output: Any) -> CheckResult:
        raise NotImplementedError(f"{type(self).__name__} must implement evaluate_async()")

    def unbound(self) -> CheckResult | None:
        """The result when no judge is configured (unscored, never a score), else None."""
        if self._settings is None or self._settings.client is None:
            return CheckResult(score=None, status="unscored", reason="no judge configured")
        return None


_REGISTRY: dict[str, type[Evaluator]] = {}


def register(cls: type[Evaluator]) -> type[Evaluator]:
    """Class decorator: make an evaluator available by its ``name`` in suite files."""
    if not cls.name:
        raise TypeError(f"{cls.__name__} needs a non-empty 'name'")
    _REGISTRY[cls.name] = cls
    return cls


def registry() -> dict[str, type[Evaluator]]:
    """Every evaluator class by name: the built-ins (all imported) and those registered since."""
    _load_builtins()
    return dict(_REGISTRY)


def lookup(name: str) -> type[Evaluator] | None:
    """The evaluator class registered as ``name``, importing the built-in modules only until it is found: a suite
    of checks and ``llm_judge`` does not pay for importing the rubric, gold and trajectory judges (~50 ms of
    every run's start-up)."""
    if name not in _REGISTRY:
        if (module := _CHECK_MODULES.get(name)) is not None:
            import importlib

            importlib.import_module(module)
        if name not in _REGISTRY:
            _load_builtins(until=name)
    return _REGISTRY.get(name)


_CHECKS = "referee.evaluators.checks."
_CHECK_MODULES = {
    **dict.fromkeys(("equals", "contains", "not_contains", "regex", "starts_with", "ends_with", "length"),
                    _CHECKS + "_text"),
    **dict.fromkeys(("is_json", "json_schema", "numeric"), _CHECKS + "_structured"),
    **dict.fromkeys(("fuzzy", "token_f1", "rouge_l", "embedding"), _CHECKS + "_similarity"),
    "python": _CHECKS + "_code", "llm_judge": _CHECKS + "_judge",
}
"""The module that registers each built-in check: a suite's checks load their own modules and no others."""
_BUILTIN_MODULES = (*dict.fromkeys(_CHECK_MODULES.values()), "referee.evaluators._trajectory",
                    "referee.evaluators._tool_calls", "referee.judges")
_loaded = 0
"""How many of ``_BUILTIN_MODULES`` are imported (in order)."""


def _load_builtins(until: str | None = None) -> None:
    global _loaded
    import importlib

    while _loaded < len(_BUILTIN_MODULES) and (until is None or until not in _REGISTRY):
        mod = _BUILTIN_MODULES[_loaded]
        _loaded += 1
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name != mod:
                raise


