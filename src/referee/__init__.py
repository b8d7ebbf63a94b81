"""referee: trustworthy verdicts on LLM prompts and agents, and CI gates that stop a change that makes them worse.

The public API is what ``__all__`` lists; everything else is implementation and may change.
"""

from typing import TYPE_CHECKING, Any

from ._api import EvalResult, Judge, as_evaluator, evaluate, evaluate_async
from ._version import __version__
from .cases import Case, CaseSet, cases_from, load_cases
from .errors import (
    InputError,
    MissingExtraError,
    ProviderAuthError,
    ProviderError,
    ProviderUnavailable,
    RefereeError,
    UserError,
)
from .evaluators.base import CheckResult, Evaluator, register
from .evaluators.reply import JudgeOutcome, ReplyInvalid, ask_judge
from .providers import Completion, FakeProvider, JudgeRequest, Message, Provider, get_provider
from .results import CriterionScore, JudgeInfo, ResultRow, ResultWriter, RunManifest, Usage, read_results
from .runner import JudgeClient, ResponseCache, RetryPolicy

if TYPE_CHECKING:
    from . import judges
    from .aggregate import Summary, summarize

# Imported on first use: the judges pull in every check, the aggregator numpy (the pytest plugin imports
# referee in every test run, so `import referee` stays cheap).
_LAZY = {"judges": ("referee.judges", None), "Summary": ("referee.aggregate", "Summary"),
         "summarize": ("referee.aggregate", "summarize")}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = importlib.import_module(module)
        value = getattr(value, attr) if attr else value
        globals()[name] = value
        return value
    raise AttributeError(f"module 'referee' has no attribute {name!r}")


__all__ = [
    "Case",
    "CaseSet",
    "CheckResult",
    "Completion",
    "CriterionScore",
    "EvalResult",
    "Evaluator",
    "FakeProvider",
    "InputError",
    "Judge",
    "JudgeClient",
    "JudgeInfo",
    "JudgeOutcome",
    "JudgeRequest",
    "Message",
    "MissingExtraError",
    "Provider",
    "ProviderAuthError",
    "ProviderError",
    "ProviderUnavailable",
    "RefereeError",
    "ReplyInvalid",
    "ResponseCache",
    "ResultRow",
    "ResultWriter",
    "RetryPolicy",
    "RunManifest",
    "Summary",
    "Usage",
    "UserError",
    "__version__",
    "as_evaluator",
    "ask_judge",
    "cases_from",
    "evaluate",
    "evaluate_async",
    "get_provider",
    "judges",
    "load_cases",
    "read_results",
    "register",
    "summarize",
]
