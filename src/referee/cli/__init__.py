"""The ``referee`` command line: a thin layer over library calls.

Each command lives in its own module ``referee/cli/cmd_<name>.py`` exposing ``command`` (a click command);
modules are found by name and imported only when their command runs, so ``referee --help`` stays fast.
User errors print one line and exit 2 (no traceback unless ``REFEREE_DEBUG=1``); a failed gate exits 1.
"""

from __future__ import annotations

import atexit
import gc
import io
import os
import pkgutil
import signal
import sys
from contextvars import ContextVar
from importlib import import_module
from pathlib import Path
from typing import NoReturn

import click

from .. import __version__
from ..errors import UserError, cli_wording
from ._outputs import guard

__all__ = ["cli", "invoked_argv", "main"]

_CMD_PREFIX = "cmd_"


def _command_modules() -> dict[str, str]:
    here = Path(__file__).parent
    found = {}
    for mod in pkgutil.iter_modules([str(here)]):
        if mod.name.startswith(_CMD_PREFIX):
            found[mod.name[len(_CMD_PREFIX):].replace("_", "-")] = f"{__name__}.{mod.name}"
    return found


_OWN_PROCESS = False
"""Set by :func:`main`: the console script's own process, which :func:`_hard_exit` ends (never set when tests or
the example call :func:`cli` in their process)."""
_KEPT: list[object] = []


def freeze_imports() -> None:
    """Move what is alive now (the modules a command imported, their classes and pydantic schemas) out of the
    collector's reach, as :func:`main` does at start: they live as long as the process, and the first collection
    of a run walked all of them (one 68 ms pause of a 10,000-case run, after aiohttp was imported). Only in the
    console script's own process."""
    if _OWN_PROCESS:
        gc.freeze()


def keep_until_exit(result: object) -> None:
    """Leave a command's result (a run's rows) to the process exit, which frees it all at once: dropping 10,000
    rows one by one took 36 ms of a run's tail. In-process callers of :func:`cli` free it as usual."""
    if _OWN_PROCESS:
        _KEPT.append(result)


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_command_modules())

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        mod = _command_modules().get(cmd_name)
        if mod is None:
            return None
        command = import_module(mod).command
        freeze_imports()
        assert isinstance(command, click.Command)
        return guard(command)  # every command: an output path never overwrites an input (cli/_outputs.py)

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None,
                                                                            list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and name not in _command_modules():
            # The closest commands, as click already does for a misspelt flag.
            import difflib

            close = difflib.get_close_matches(name, sorted(_command_modules()), n=3, cutoff=0.5)
            if close:
                ctx.fail(f"No such command '{name}'. Did you mean {' or '.join(repr(c) for c in close)}?")
        return super().resolve_command(ctx, args)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(__version__, "-V", "--version", prog_name="referee")
def referee() -> None:
    """referee: trustworthy verdicts on LLM prompts and agents, and CI gates that stop regressions."""


_ARGV: ContextVar[list[str] | None] = ContextVar("referee_argv", default=None)


def invoked_argv() -> list[str]:
    """``["referee", *args]`` of the command being run, also when called in-process through :func:`cli` (the
    example, tests), where ``sys.argv`` belongs to someone else. For manifests (redacted there)."""
    args = _ARGV.get()
    return ["referee", *(sys.argv[1:] if args is None else args)]


def _echo_err(message: str) -> None:
    from ..reports import echo_err  # imported on the error path only: --help stays fast

    echo_err(message)


def _debug() -> bool:
    return os.environ.get("REFEREE_DEBUG", "") not in ("", "0")


def cli(args: list[str] | None = None, *, prog_name: str = "referee") -> int:
    """Run the CLI and return its exit code (testable; :func:`main` exits with it)."""
    from ._log import library_messages

    token = _ARGV.set(list(args) if args is not None else sys.argv[1:])
    try:
        with library_messages(), cli_wording():  # messages name flags (--base-url), not parameters
            return _cli(args, prog_name)
    finally:
        _ARGV.reset(token)


def _cli(args: list[str] | None, prog_name: str) -> int:
    try:
        rv = referee.main(args=args, prog_name=prog_name, standalone_mode=False)
    except UserError as exc:
        if _debug():
            raise
        _echo_err(f"referee: error: {exc}")
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.ClickException as exc:
        shown = io.StringIO()  # click's usage errors quote the user's arguments (paths, values)
        exc.show(file=shown)
        _echo_err(shown.getvalue().rstrip("\n"))
        return 2 if exc.exit_code == 1 else exc.exit_code
    except click.exceptions.Abort:
        click.echo("referee: interrupted; rows already written are kept (rerun to finish)", err=True)
        return 130
    except KeyboardInterrupt:
        click.echo("referee: interrupted; rows already written are kept (rerun to finish)", err=True)
        return 130
    except OSError as exc:
        if _debug():
            raise
        _echo_err(f"referee: error: {exc}")
        return 2
    # Commands return their exit code (or call ctx.exit, which click turns into a return value here).
    return rv if isinstance(rv, int) else 0


def _terminate(signum: int, frame: object) -> None:
    # SIGTERM (CI cancelling a job, a container stopping) ends a run exactly as Ctrl-C does: rows already
    # written are kept, the manifest says "interrupted", sandboxes and locks are released by their finally.
    raise KeyboardInterrupt


BLAS_SPIN = "OPENBLAS_THREAD_TIMEOUT"
BLAS_SPIN_VALUE = "20"
"""2**20 cycles (under a millisecond) of spinning before an idle OpenBLAS worker sleeps, against OpenBLAS's 2**28
(about 0.1 s at 2.5 GHz)."""


def shorten_blas_spin() -> None:
    """Set ``OPENBLAS_THREAD_TIMEOUT`` for this process unless the user set it (theirs wins) or numpy is loaded.

    The OpenBLAS inside numpy's wheels starts one worker thread per core when it loads, and each worker spins for
    about 0.1 s waiting for work before it sleeps: 0.11 CPU-s on 2 cores for a run whose only numpy is its
    summary's statistics, and that much again per core on a larger machine. OpenBLAS reads the variable once, as it
    loads. The number of BLAS threads is unchanged; an idle worker waits on a condition after under a millisecond
    instead of spinning for 0.1 s. Set here, before any thread exists (``setenv`` racing another thread's ``getenv`` is not
    safe), and left set: the processes a run starts inherit it (docs/judge.md)."""
    if "numpy" not in sys.modules:
        os.environ.setdefault(BLAS_SPIN, BLAS_SPIN_VALUE)


def main() -> None:
    """The ``referee`` console script: SIGTERM ends a run as Ctrl-C does, then exit with the command's code."""
    signal.signal(signal.SIGTERM, _terminate)
    shorten_blas_spin()
    # Objects alive now (modules, classes, pydantic schemas) live for the whole process: moving them out of
    # the collector's reach makes every full collection during a long run (and the one at exit) cheaper.
    gc.freeze()
    # A run allocates ~1,000 objects per judged case (HTTP, JSON, rows) and keeps few: at the default threshold
    # (a collection every 700 net allocations) the collector took 17% of `referee judge`'s CPU at 10,000 cases and
    # concurrency 256, mostly re-walking what is alive (in-flight requests, rows). Collections every 50,000
    # allocations still free reference cycles (aiohttp's, tracebacks') within a few dozen cases.
    gc.set_threshold(50_000, 10, 10)
    global _OWN_PROCESS
    _OWN_PROCESS = True
    code = cli()
    _hard_exit(code)


def _hard_exit(code: int) -> NoReturn:
    """Exit as mypy's ``hard_exit`` does: every file of the run is closed by now, so tearing the interpreter down
    (freeing each row, request and module one by one: ~80 ms after a 10,000-case run) serves nobody. The output
    streams are flushed and the exit handlers run (logging's, temporary directories' finalizers, a plugin's own)
    before the process ends with ``code``."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`referee ... | head`) or a closed stream: nothing to keep
            pass
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)
