"""One guard for every command: an output path never overwrites an input, and numbers are numbers.

Installed on every command's callback by the command loader (``referee.cli``), so commands added later get it
without doing anything. A path parameter is an output when it is an option named in :data:`OUTPUT_PARAMS`;
every other path parameter (and every positional argument) is an input. Before the command runs, an output
that resolves to an input (or to another output) is a usage error (exit 2) and nothing is written.

Every float option is checked the same way: ``nan`` and ``inf`` are refused (``--fail-under nan`` passed every
gate: comparisons with NaN are all false, and click's ranges let it through), and so are negative values
except for the options in :data:`MAY_BE_NEGATIVE` (correlation floors).
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import click

from ..errors import UserError

OUTPUT_PARAMS = frozenset({
    "out", "output", "json_out", "html_out", "markdown_out", "junit_xml", "log_file", "labels", "workdir",
    "write_cases", "escalated_out", "to_cases",
})
"""Option names (click's parameter names) whose path the command writes."""

MAY_BE_NEGATIVE = frozenset({"min_kappa", "min_spearman", "min_kendall"})

_GUARDED = "_referee_outputs_guarded"


def _paths(value: Any) -> Iterable[str]:
    if value is None:
        return []
    if isinstance(value, str | os.PathLike):
        return [os.fspath(value)]
    if isinstance(value, list | tuple):
        return [os.fspath(v) for v in value if isinstance(v, str | os.PathLike)]
    return []


def _same(a: str, b: str) -> bool:
    if a in ("-", "") or b in ("-", ""):
        return False
    pa, pb = Path(a), Path(b)
    try:
        if pa.exists() and pb.exists():
            return os.path.samefile(pa, pb)  # hard links and symlinks too
    except OSError:
        pass
    return pa.resolve() == pb.resolve()


def check_outputs(command: click.Command, params: dict[str, Any]) -> None:
    """Raise :class:`UserError` when an output path of ``command`` is one of its inputs or another output."""
    outputs: list[tuple[str, str]] = []
    inputs: list[tuple[str, str]] = []
    for p in command.params:
        if p.name is None or p.name not in params:
            continue
        label = p.opts[0] if isinstance(p, click.Option) else p.name.replace("_", " ")
        is_output = isinstance(p, click.Option) and p.name in OUTPUT_PARAMS
        if not is_output and not isinstance(p.type, click.Path) and not isinstance(p, click.Argument):
            continue
        for v in _paths(params[p.name]):
            (outputs if is_output else inputs).append((label, v))
    if outputs:
        _check_reserved(outputs, params.get("store_url"))
    for i, (olabel, opath) in enumerate(outputs):
        for ilabel, ipath in inputs:
            if _same(opath, ipath):
                raise UserError(f"{olabel} {opath} is the {ilabel} file: writing it would destroy the input; "
                                "choose another output path")
        for olabel2, opath2 in outputs[i + 1:]:
            if _same(opath, opath2):
                raise UserError(f"{olabel} and {olabel2} are the same file ({opath}); give each output its own path")


def _check_reserved(outputs: list[tuple[str, str]], store_url: Any) -> None:
    """An output is never the run history's database (the one the command names, or ``REFEREE_STORE``'s) nor
    inside referee's own folder: written over, the history and the response cache would be lost."""
    from ..store import reserved_paths

    folder, *files = reserved_paths(store_url if isinstance(store_url, str) else None)
    for label, path in outputs:
        if path in ("-", ""):
            continue
        if any(_same(path, str(f)) for f in files):
            raise UserError(f"{label} {path} is the run history's database: writing it would destroy the history; "
                            "choose another output path")
        if Path(path).resolve().is_relative_to(folder.resolve()):
            raise UserError(f"{label} {path} is inside {folder}, referee's own folder (its run history and response "
                            "cache): choose another output path")


def check_numbers(command: click.Command, params: dict[str, Any]) -> None:
    """Raise :class:`UserError` for a float option that is nan, inf or (unless allowed) negative."""
    for p in command.params:
        if p.name is None or not isinstance(p.type, click.types.FloatParamType):
            continue
        value = params.get(p.name)
        for v in value if isinstance(value, list | tuple) else [value]:
            if not isinstance(v, float | int):
                continue
            label = p.opts[0] if isinstance(p, click.Option) else p.human_readable_name
            if not math.isfinite(v):
                raise UserError(f"{label} {v}: not a finite number")
            if v < 0 and p.name not in MAY_BE_NEGATIVE:
                raise UserError(f"{label} {v:g}: must not be negative")


def guard(command: click.Command) -> click.Command:
    """Install :func:`check_outputs` on ``command`` (and every subcommand of a group), once."""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            guard(sub)
        return command
    if getattr(command, _GUARDED, False) or command.callback is None:
        return command
    original: Callable[..., Any] = command.callback

    @functools.wraps(original)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        check_numbers(command, kwargs)
        check_outputs(command, kwargs)
        return original(*args, **kwargs)

    command.callback = guarded
    setattr(command, _GUARDED, True)
    return command
