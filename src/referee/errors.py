"""Errors referee raises.

Tree::

    RefereeError                 base of everything referee raises on purpose
    +-- UserError                a usage or input mistake; the CLI prints it on one line and exits 2
    |   +-- InputError           a file the user gave is wrong; names file, line and field
    |   +-- OptionError          an evaluator's options are wrong (also a ValueError); names each option
    |   +-- MissingExtraError    an optional dependency is not installed; names the extra
    +-- ProviderError            a judge API call failed (after mapping the HTTP client's errors)
        +-- ProviderAuthError    401/403, or no key: retrying cannot help
        +-- ProviderUnavailable  the server is down or unreachable

Failures of single cases are not exceptions that stop a run: they become rows with status ``error`` or
``unscored`` (see ``referee.results``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = [
    "InputError",
    "JudgeCannotGrade",
    "JudgeNeedsModel",
    "KeyMissing",
    "MissingExtraError",
    "OptionError",
    "ProviderAuthError",
    "ProviderError",
    "ProviderUnavailable",
    "RefereeError",
    "UserError",
]


class RefereeError(Exception):
    """Base class of referee's own errors."""


class UserError(RefereeError):
    """A usage or input mistake: shown without a traceback, exit code 2."""

    exit_code = 2


class InputError(UserError):
    """A problem in a file the user supplied, located as precisely as we can."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 field: str | None = None) -> None:
        self.file = file
        self.line = line
        self.field = field
        self.reason = message
        where = ""
        if file is not None:
            where = str(file)
            if line is not None:
                where += f":{line}"
            where += ": "
        if field is not None:
            where += f"field '{field}': "
        super().__init__(where + message)


class OptionError(UserError, ValueError):
    """An evaluator's options are wrong: raised while it is built, so a suite fails when it loads, not per case.

    ``problems`` are (option path, message) pairs, the path empty when no one option is to blame, so that
    ``referee validate`` can point at each option's line; ``option`` and ``reason`` are the first pair.
    """

    def __init__(self, option: str, message: str, *more: tuple[str, str]) -> None:
        self.problems = [(option, message), *more]
        self.option = option
        self.reason = message
        super().__init__("; ".join(f"{p}: {m}" if p else m for p, m in self.problems))

    @classmethod
    def of(cls, problems: Sequence[tuple[str, str]]) -> OptionError:
        """One error for several problems (at least one)."""
        first, *more = problems
        return cls(*first, *more)


class MissingExtraError(UserError):
    """An optional dependency is missing."""

    def __init__(self, extra: str, package: str, feature: str) -> None:
        super().__init__(
            f"{feature} needs the '{package}' package: pip install 'referee[{extra}]'"
        )
        self.extra = extra
        self.package = package


class ProviderError(RefereeError):
    """A judge API call failed.

    ``retryable`` says whether the runner may try again (429, 5xx, timeouts, dropped connections).
    """

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False,
                 retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after


class ProviderAuthError(ProviderError):
    """The provider refused the credentials (or none were configured)."""


class ProviderUnavailable(ProviderError):
    """The provider could not be reached at all."""


class JudgeCannotGrade(ProviderError):
    """The judge says it cannot grade this case (the stand-in judge with no reference where the rubric needs
    one): the row is unscored with this message as its reason, never a number. Not retried."""

class KeyMissing(UserError):
    """The judge's provider has no key (raised before any call). The message says how to set it, and how to try
    without one: the stand-in judge (``judge="standin"``; on the command line ``--provider standin``)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"{reason}; or try without a key: judge=\"standin\" (the stand-in judge, not a model: "
                         "docs/judge.md)")


class JudgeNeedsModel(UserError):
    """A local server that routes by model name was given no model (raised before any call)."""

    def __init__(self, provider: str) -> None:
        self.provider = provider
        super().__init__(f"provider {provider} needs a model: the name of a model the server serves, "
                         f"e.g. Judge('{provider}:llama3.1')")


# -- how a message names a setting ------------------------------------------------------------------------------
# The command line's flag (``--base-url``) when the CLI runs, the Python parameter (``base_url=``) when a program
# calls the library. The CLI marks its calls with ``cli_wording``; everything else reads as Python. (Helpers, not
# exceptions: left out of ``__all__``.)

_CLI: ContextVar[bool] = ContextVar("referee_cli_wording", default=False)


def setting(name: str) -> str:
    """``name`` (a Python parameter, ``base_url``) as the caller knows it: ``--base-url`` or ``base_url=``."""
    return "--" + name.replace("_", "-") if _CLI.get() else f"{name}="


def setting_with(name: str, value: str) -> str:
    """``name`` given ``value``: ``--base-url URL`` or ``base_url=URL``."""
    return f"{setting(name)} {value}" if _CLI.get() else f"{setting(name)}{value}"


@contextmanager
def cli_wording() -> Iterator[None]:
    """Messages raised inside name the CLI's flags (asyncio tasks and ``run_sync``'s worker thread inherit it)."""
    token = _CLI.set(True)
    try:
        yield
    finally:
        _CLI.reset(token)
