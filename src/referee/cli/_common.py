"""Options and helpers shared by the commands that call a judge."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.core import ParameterSource

from ..cases import Preflight
from ..errors import UserError
from ..providers import CLOUD_PROVIDERS, LOCAL_SERVERS
from ..reports import echo_err
from ..runner import JudgeClient

if TYPE_CHECKING:
    from .. import EvalResult, Judge
    from ..gates import GateResult
    from ..results import JudgeConfig, ResultRow

F = TypeVar("F", bound=Callable[..., Any])



class ProviderChoice(click.Choice):
    """``--provider``: the built-ins, then installed provider plugins, read when first needed (click would
    freeze a plain list when the command is defined, before a test or a plugin installs anything, and reading
    the installed packages' entry points costs start-up time most commands never need)."""

    def __init__(self) -> None:
        super().__init__(())

    @property
    def choices(self) -> tuple[str, ...]:
        from ..providers import provider_names

        return tuple(provider_names())

    @choices.setter
    def choices(self, value: Any) -> None:
        pass  # computed, see above

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from ..providers import is_builtin_or_registered

        # A built-in or registered name is accepted as click would accept it (an exact, case-sensitive match),
        # without the entry-point scan that ``choices`` needs for plugins, help and the error message.
        if isinstance(value, str) and is_builtin_or_registered(value):
            return value
        return super().convert(value, param, ctx)


@dataclass
class JudgeOptions:
    provider: str
    model: str | None
    base_url: str | None
    max_tokens: int
    temperature: float | None
    seed: int | None
    timeout: float
    max_retries: int
    concurrency: int
    no_cache: bool
    input_price: float | None
    output_price: float | None
    batch: bool = False
    system_model: str | None = None
    """``--system-model``: the model that produced the judged outputs (cases' ``metadata.system_model`` wins)."""

    def config(self, model: str, repeat: int = 1) -> JudgeConfig:
        """What the manifest records of this judge (the API's :meth:`~referee.Judge.config`)."""
        return api_judge(self).config(model, repeat)


def judge_options(*, default_concurrency: int = 8, default_provider: str = "anthropic") -> Callable[[F], F]:
    """The provider flags every judging command shares (the seed's, plus referee's additions)."""

    def deco(f: F) -> F:
        opts = [
            click.option("--provider", type=ProviderChoice(), envvar="REFEREE_PROVIDER",
                         default=default_provider, show_default=True,
                         help="Judge API. azure/bedrock/vertex = the clouds (docs/scale.md); "
                              "ollama/vllm/lmstudio/llamacpp = OpenAI-compatible server at its "
                              "default local URL. Env: REFEREE_PROVIDER."),
            click.option("--model", envvar="REFEREE_MODEL", default=None,
                         help="Judge model (default: the provider's default). Env: REFEREE_MODEL."),
            click.option("--base-url", envvar="REFEREE_BASE_URL", default=None,
                         help="Endpoint of any OpenAI-compatible server (vLLM, Ollama, LM Studio, llama.cpp), "
                              "or a proxy for the chosen provider. Env: REFEREE_BASE_URL."),
            click.option("--max-tokens", type=click.IntRange(1), default=1024, show_default=True),
            click.option("--temperature", type=float, default=None, help="Sampling temperature."),
            click.option("--seed", type=int, default=None, help="Sampling seed, where the provider has one."),
            click.option("--timeout", type=click.FloatRange(min=0.1), default=60.0, show_default=True,
                         help="Seconds per judge call."),
            click.option("--max-retries", type=click.IntRange(0), default=4, show_default=True,
                         help="Retries on 429, 5xx, timeouts and dropped connections."),
            click.option("--concurrency", type=click.IntRange(1), default=default_concurrency,
                         show_default=True, help="Judge calls in flight at once."),
            click.option("--no-cache", is_flag=True, help="Do not read or write the response cache."),
            click.option("--input-price-per-mtok", "input_price", type=float, default=None,
                         help="USD per million input tokens. With both prices given they price every call; "
                              "otherwise the model is priced from the genai-prices database (no cost for a "
                              "model it does not know)."),
            click.option("--output-price-per-mtok", "output_price", type=float, default=None,
                         help="USD per million output tokens (see --input-price-per-mtok)."),
            click.option("--batch", is_flag=True,
                         help="Judge through the provider's batch API (OpenAI, Anthropic, Gemini, Azure): half price, "
                              "answers within 24 h; jobs are kept in the manifest and a rerun resumes them."),
            click.option("--system-model", default=None,
                         help="Model that produced the judged outputs (else each case's metadata.system_model): "
                              "rows it judges itself are flagged self_grading, and every report says so."),
        ]
        for o in reversed(opts):
            f = o(f)

        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            jo = JudgeOptions(
                provider=kwargs.pop("provider"), model=kwargs.pop("model"), base_url=kwargs.pop("base_url"),
                max_tokens=kwargs.pop("max_tokens"), temperature=kwargs.pop("temperature"),
                seed=kwargs.pop("seed"), timeout=kwargs.pop("timeout"), max_retries=kwargs.pop("max_retries"),
                concurrency=kwargs.pop("concurrency"), no_cache=kwargs.pop("no_cache"),
                input_price=kwargs.pop("input_price"), output_price=kwargs.pop("output_price"),
                system_model=kwargs.pop("system_model") or None, batch=kwargs.pop("batch"),
            )
            return f(*args, judge=jo, **kwargs)

        return wrapper  # type: ignore[return-value]

    return deco


def api_judge(jo: JudgeOptions) -> Judge:
    """The flags as the API's :class:`~referee.Judge` (run the API call under :func:`flag_errors`)."""
    from .. import Judge
    from . import freeze_imports

    judge = Judge(jo.provider, model=jo.model, base_url=jo.base_url, max_tokens=jo.max_tokens,
                  temperature=jo.temperature, seed=jo.seed, timeout=jo.timeout, max_retries=jo.max_retries,
                  concurrency=jo.concurrency, cache=not jo.no_cache, input_price_per_mtok=jo.input_price,
                  output_price_per_mtok=jo.output_price, batch=jo.batch)
    freeze_imports()  # the provider's modules (aiohttp) are imported now
    return judge


# JudgeOptions field -> the API's Judge field
_JUDGE_FIELDS = {
    "provider": "provider", "model": "model", "base_url": "base_url", "max_tokens": "max_tokens",
    "temperature": "temperature", "seed": "seed", "timeout": "timeout", "max_retries": "max_retries",
    "concurrency": "concurrency", "input_price": "input_price_per_mtok", "output_price": "output_price_per_mtok",
}


def suite_judge(jo: JudgeOptions, suite: Any) -> JudgeOptions:
    """The options a suite runs with: :meth:`referee.Judge.for_suite` (the one precedence rule) given the flags
    the user set (on the command line or by their environment variable); the rest come from the suite."""
    from .. import Judge

    ctx = click.get_current_context(silent=True)
    typed = {name for name in _JUDGE_FIELDS if ctx is not None and ctx.get_parameter_source(name) in (
        ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)}
    given: dict[str, Any] = {_JUDGE_FIELDS[n]: getattr(jo, n) for n in typed}
    given.update(cache=not jo.no_cache, batch=jo.batch)  # flags only: a suite does not set them
    with flag_errors():
        judge = Judge.for_suite(suite.judge, given=given, concurrency=suite.concurrency)
    assert isinstance(judge.provider, str)  # a suite names its provider
    return dataclasses.replace(jo, provider=judge.provider,
                               **{n: getattr(judge, f) for n, f in _JUDGE_FIELDS.items() if n != "provider"})


def graded_count(rows: Sequence[ResultRow], case_ids: Sequence[str]) -> int:
    """How many of ``case_ids`` have a scored row: the N of the seed runners' ``N/M case(s)`` line."""
    scored = {r.id for r in rows if r.status == "scored"}
    return sum(1 for c in dict.fromkeys(case_ids) if c in scored)


def echo_seed_line(text: str) -> None:
    """The seed runner's closing line on stdout, where scripts that ran the seed read it (referee's own lines
    are on stderr), shown by the rules of every line of case text."""
    from ..reports import display_text

    click.echo(display_text(text))


def echo_failures(rows: Sequence[ResultRow], limit: int = 20) -> None:
    """The seed's habit: every case not scored is a warning line on stderr (never a fabricated score), up to
    ``limit`` of them, then how many more the results file holds."""
    bad = [r for r in rows if r.status != "scored"]
    for r in bad[:limit]:
        echo_err(f"warning: case '{r.id}' {r.status}: {r.error}")
    if len(bad) > limit:
        echo_err(f"warning: ... and {len(bad) - limit} more unscored/error cases (see the results file)")


def echo_nothing_graded(gates: Sequence[GateResult], lead: str = "") -> None:
    """The verdict rule's failed ``graded`` entry, if among ``gates``, in plain words on stderr."""
    from ..gates import GRADED_FLAG

    for g in gates:
        if g.flag == GRADED_FLAG and g.failed:
            echo_err(f"error: {lead}{g.message}")


def echo_verdict(scored: int, rows: int) -> int:
    """The exit code of a run with no gate (``--no-gates``): the verdict rule alone, said on stderr when it
    fails."""
    from ..gates import exit_code, graded_check, verdict

    entry = graded_check(scored, rows)
    echo_nothing_graded([entry] if entry is not None else [])
    return exit_code(verdict([], scored))


def result_exit(result: EvalResult, checks: Sequence[GateResult] = ()) -> int:
    """The exit code of a command that made ``result``: the verdict rule (``EvalResult.passed``) over its gates
    and the command's own ``checks`` (``--fail-below``, the gold verdicts); nothing graded is said on stderr."""
    from ..gates import exit_code, verdict

    gates = [*result.gates, *checks]
    echo_nothing_graded(gates)
    return exit_code(verdict(gates, result.scored))


@contextlib.contextmanager
def flag_errors() -> Iterator[None]:
    """The API's judge errors in the flags' words (raised where the API raises them: after the preflight)."""
    from ..errors import JudgeNeedsModel, KeyMissing

    try:
        yield
    except KeyMissing as exc:
        raise UserError(f"{exc.reason}; or try without a key: --provider standin (the stand-in judge, not a model: "
                        "docs/judge.md)") from None
    except JudgeNeedsModel as exc:
        raise UserError(f"--provider {exc.provider} needs --model (or REFEREE_MODEL): the name of a model the "
                        f"server serves, e.g. --model llama3.1") from None


def build_client(jo: JudgeOptions, *, model: str | None = None) -> JudgeClient:
    """Provider + cache + retries from the options (the API's :meth:`~referee.Judge.client`). Raises UserError
    when the key is missing or a local server is named without a model."""
    judge = api_judge(jo)
    if model:
        judge = dataclasses.replace(judge, model=model)
    with flag_errors():
        return judge.client()


def judge_configured(provider_flag: str | None = None) -> bool:
    """Whether a judge can be called without further setup (a key, or a local server configured)."""
    from ..providers import api_key_for

    if provider_flag in LOCAL_SERVERS or os.environ.get("REFEREE_BASE_URL"):
        return True
    name = provider_flag or os.environ.get("REFEREE_PROVIDER")
    if name:
        # The clouds sign in through their own chains; a missing credential is reported when the judge is built.
        return name in LOCAL_SERVERS or name in CLOUD_PROVIDERS or api_key_for(name) is not None
    return any(api_key_for(p) for p in ("anthropic", "openai", "gemini"))



def report_preflight(pf: Preflight, cases_path: str, *, skip_invalid: bool, verb: str = "judge") -> None:
    """The seed's preflight outcome: every problem on stderr, then exit 2 unless ``--skip-invalid``.

    Called before any API key is looked at, so a missing key is never reported before invalid cases.
    A field that no case has is a template typo, not bad cases: one line naming it, whatever the flags.
    """
    from ..cases import require_valid

    require_valid(pf, cases_path, skip_invalid=skip_invalid, verb=verb,
                  on_problem=lambda p: echo_err(f"invalid: {p}"))


def store_options() -> Callable[[F], F]:
    """``--store URL``, ``--no-store`` and ``--tag`` (repeatable) on a command that writes results: the run is
    recorded in the run history with them (``referee.store.recording``)."""

    def deco(f: F) -> F:
        opts = [
            click.option("--store", "store_url", default=None, metavar="URL",
                         help="Record this run in another history: a SQLite file or sqlite:///path, or "
                              "postgresql://user:pass@host:port/db (default: REFEREE_STORE, else "
                              ".referee/history.sqlite at the repository's top level)."),
            click.option("--no-store", is_flag=True, help="Do not record this run in the run history."),
            click.option("--tag", "store_tags", multiple=True, metavar="TAG",
                         help="Tag the run in the history (repeatable)."),
        ]
        for o in reversed(opts):
            f = o(f)

        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            from ..store import StoreError, recording

            url, off, tags = kwargs.pop("store_url"), kwargs.pop("no_store"), kwargs.pop("store_tags")
            if off and url:
                raise click.UsageError("--store and --no-store contradict each other; give one")
            try:
                ctx = recording(url, enabled=False if off else None, tags=tags)
                ctx.__enter__()
            except StoreError as exc:
                raise UserError(str(exc)) from None
            try:
                return f(*args, **kwargs)
            finally:
                ctx.__exit__(None, None, None)

        return wrapper  # type: ignore[return-value]

    return deco
