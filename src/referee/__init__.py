"""referee: trustworthy verdicts on LLM prompts and agents, and CI gates that stop a change that makes them worse.

The public API is what ``__all__`` lists; everything else is implementation and may change.
"""

from . import judges
from ._api import EvalResult, Judge, as_evaluator, evaluate, evaluate_async
from ._version import __version__
from .aggregate import Summary, summarize
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
