"""referee: trustworthy verdicts on LLM prompts and agents, and CI gates that stop a change that makes them worse.

The public API is what ``__all__`` lists; everything else is implementation and may change.
"""

from importlib import import_module as _import_module
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from ._version import __version__
from .errors import (
    InputError,
    MissingExtraError,
    ProviderAuthError,
    ProviderError,
    ProviderUnavailable,
    RefereeError,
    UserError,
)

if _TYPE_CHECKING:
    from . import judges, synth
    from .aggregate import Summary, summarize
    from .alignment import Alignment, align
    from .cases._case import Case, CaseSet, cases_from, load_cases
    from .evaluators import CheckResult, Evaluator, JudgeOutcome, ReplyInvalid, ask_judge, register
    from .gates._engine import GateConfig, GateResult, evaluate_gates
    from .providers import Completion, FakeProvider, JudgeRequest, Message, Provider, get_provider
    from .results import CriterionScore, JudgeInfo, ResultRow, ResultWriter, RunManifest, Usage, read_results
    from .run._estimate import RunEstimate, estimate_run
    from .run._evaluate import EvalResult, as_evaluator, evaluate, evaluate_async
    from .run._grade import (
        check_trajectories,
        check_trajectories_async,
        compare,
        compare_async,
        grade,
        grade_async,
        grade_gold,
        grade_gold_async,
        grade_rubric,
        grade_rubric_async,
        judge_conversations,
        judge_conversations_async,
        judge_trajectories,
        judge_trajectories_async,
    )
    from .run._judge import Judge
    from .run._target_runs import TargetGate, TargetsRun, run_targets
    from .runner import JudgeClient, ResponseCache, RetryPolicy
    from .store import runs
    from .synth import synth_async

# Names are imported on first use (PEP 562): ``import referee`` (every CLI command starts with it) must not
# pay for numpy, pydantic models or aiohttp that the command at hand never touches. Judging starts sooner.
_LAZY = {
    "judges": ".judges",
    "synth": ".synth",
    "synth_async": ".synth",
    **dict.fromkeys(("EvalResult", "as_evaluator", "evaluate", "evaluate_async"), ".run._evaluate"),
    "Judge": ".run._judge",
    **dict.fromkeys(("check_trajectories", "check_trajectories_async", "compare", "compare_async", "grade",
                     "grade_async", "grade_gold", "grade_gold_async", "grade_rubric", "grade_rubric_async", "judge_conversations",
                     "judge_conversations_async", "judge_trajectories", "judge_trajectories_async"), ".run._grade"),
    **dict.fromkeys(("Summary", "summarize"), ".aggregate"),
    **dict.fromkeys(("GateConfig", "GateResult", "evaluate_gates"), ".gates._engine"),
    **dict.fromkeys(("Case", "CaseSet", "cases_from", "load_cases"), ".cases._case"),
    **dict.fromkeys(("CheckResult", "Evaluator", "register"), ".evaluators"),
    **dict.fromkeys(("JudgeOutcome", "ReplyInvalid", "ask_judge"), ".evaluators"),
    **dict.fromkeys(("Completion", "FakeProvider", "JudgeRequest", "Message", "Provider", "get_provider"),
                    ".providers"),
    **dict.fromkeys(("CriterionScore", "JudgeInfo", "ResultRow", "ResultWriter", "RunManifest", "Usage",
                     "read_results"), ".results"),
    **dict.fromkeys(("JudgeClient", "ResponseCache", "RetryPolicy"), ".runner"),
    **dict.fromkeys(("RunEstimate", "estimate_run"), ".run._estimate"),
    "runs": ".store",
    **dict.fromkeys(("Alignment", "align"), ".alignment"),
    **dict.fromkeys(("TargetGate", "TargetsRun", "run_targets"), ".run._target_runs"),
}


def __getattr__(name: str) -> _Any:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = _import_module(where, __name__)
    value = module if name in ("judges", "synth") else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "Alignment",
    "Case",
    "CaseSet",
    "CheckResult",
    "Completion",
    "CriterionScore",
    "EvalResult",
    "Evaluator",
    "FakeProvider",
    "GateConfig",
    "GateResult",
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
    "RunEstimate",
    "RunManifest",
    "Summary",
    "TargetGate",
    "TargetsRun",
    "Usage",
    "UserError",
    "__version__",
    "align",
    "as_evaluator",
    "ask_judge",
    "cases_from",
    "check_trajectories",
    "check_trajectories_async",
    "compare",
    "compare_async",
    "estimate_run",
    "evaluate",
    "evaluate_async",
    "evaluate_gates",
    "get_provider",
    "grade",
    "grade_async",
    "grade_gold",
    "grade_gold_async",
    "grade_rubric",
    "grade_rubric_async",
    "judge_conversations",
    "judge_conversations_async",
    "judge_trajectories",
    "judge_trajectories_async",
    "judges",
    "load_cases",
    "read_results",
    "register",
    "run_targets",
    "runs",
    "summarize",
    "synth",
    "synth_async",
]
