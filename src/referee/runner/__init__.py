"""Running evaluations: concurrency, retries with backoff, the response cache, progress."""

from .cache import ResponseCache, cache_key, default_cache_path
from .client import CallStats, JudgeClient, RetryPolicy
from .engine import FatalRunError, RunStats, is_fatal, run_rows

__all__ = [
    "CallStats",
    "FatalRunError",
    "JudgeClient",
    "ResponseCache",
    "RetryPolicy",
    "RunStats",
    "cache_key",
    "default_cache_path",
    "is_fatal",
    "run_rows",
]
