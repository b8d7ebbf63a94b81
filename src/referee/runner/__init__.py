"""Running evaluations: concurrency, retries with backoff, the response cache, progress."""

from ._cache import ResponseCache, cache_key, default_cache_path
from ._client import CallStats, JudgeClient, RetryPolicy
from ._engine import FatalRunError, RunStats, is_fatal, run_rows
from ._env import check_env
from ._session import retrying_unscored, totals_line

__all__ = [
    "CallStats",
    "FatalRunError",
    "JudgeClient",
    "ResponseCache",
    "RetryPolicy",
    "RunStats",
    "cache_key",
    "check_env",
    "default_cache_path",
    "is_fatal",
    "retrying_unscored",
    "run_rows",
    "totals_line",
]
