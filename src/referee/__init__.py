"""referee: trustworthy verdicts on LLM prompts and agents, and CI gates that stop a change that makes them worse.

The public API is what ``__all__`` lists; everything else is implementation and may change.
"""

from ._version import __version__
from .cases import Case, CaseSet, load_cases
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
    "Evaluator",
    "FakeProvider",
    "InputError",
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
    "Usage",
    "UserError",
    "__version__",
    "ask_judge",
    "get_provider",
    "load_cases",
    "read_results",
    "register",
]
