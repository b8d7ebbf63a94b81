"""Evaluator entries of a suite (``- regex: {...}``, plugins, dotted paths, instances) -> :class:`EvalSpec`s,
with every problem located by its YAML path and line."""

from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import ValidationError

from ..errors import InputError, OptionError, UserError
from ..evaluators._base import CheckResult, Evaluator, lookup, registry
from ._model import (
    RESERVED_ENTRY_KEYS,
    EntryMeta,
)
from ._suite import EvalSpec, Path_, Problem

if TYPE_CHECKING:
    from ..alignment import AlignedJudge


def _fmt_path(path: Path_) -> str:
    s = ""
    for p in path:
        s += f"[{p}]" if isinstance(p, int) else (f".{p}" if s else str(p))
    return s


class _Collector:
    def __init__(self, file: str, lines: dict[Path_, int]) -> None:
        self.file = file
        self.lines = lines
        self.problems: list[Problem] = []

    def line(self, path: Path_) -> int | None:
        p = tuple(path)
        while p:
            if p in self.lines:
                return self.lines[p]
            p = p[:-1]
        return 1 if self.lines else None

    def add(self, path: Path_, message: str, line: int | None = None) -> None:
        self.problems.append(Problem(self.file, line if line is not None else self.line(path),
                                     _fmt_path(path), message))


def _resolve_files(options: dict[str, Any], base: Path, paths: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Options naming files (``*_file``) are relative to the suite file; so are ``paths`` (a rubric, a criteria
    file) when such a file is there (else they name a shipped one, or a file relative to where referee runs)."""
    out = dict(options)
    for k, v in options.items():
        if isinstance(v, str) and not Path(v).is_absolute() and (
                k.endswith("_file") or (k in paths and (base / v).is_file())):
            out[k] = str(base / v)
    return out


@dataclass
class NotImported(Evaluator):
    """A plugin evaluator named by a suite that ``validate`` / ``run --dry-run`` did not import: they run no
    user code (a plugin module may write files when imported). Its options are not checked."""

    name: ClassVar[str] = "not-imported"
    plugin: str = ""

    def evaluate(self, case: Any, output: Any) -> CheckResult:
        raise RuntimeError(f"plugin evaluator '{self.plugin}' was not imported (validate / dry run)")


def module_findable(module: str) -> bool:
    """Whether ``module`` can be found on ``sys.path`` without importing (running) it or its packages."""
    import importlib.machinery

    path: list[str] | None = list(sys.path)
    spec = None
    for part in module.split("."):
        if path is None:
            return False
        spec = importlib.machinery.PathFinder.find_spec(part, path)
        if spec is None:
            return module in sys.modules or module.split(".")[0] in sys.builtin_module_names
        path = list(spec.submodule_search_locations) if spec.submodule_search_locations is not None else None
    return spec is not None


def _build_entry(entry: Any, idx: int, col: _Collector, base: Path, *, run_user_code: bool = True,
                 declared_plugins: bool = False) -> EvalSpec | None:
    from ..evaluators import _plugins as plugins

    here: Path_ = ("evaluators", idx)
    if isinstance(entry, Evaluator):  # a suite built in Python
        label = entry.name or type(entry).__name__
        return EvalSpec(label=label, name=label, evaluator=entry, line=None, critical=None)
    if isinstance(entry, str):
        name, raw_opts, meta_raw = entry, {}, {}
    elif isinstance(entry, dict):
        names = [k for k in entry if k not in RESERVED_ENTRY_KEYS]
        if len(names) != 1:
            hints = "".join(f"; '{n}'{plugins.did_you_mean(str(n), RESERVED_ENTRY_KEYS)}" for n in names
                            if plugins.did_you_mean(str(n), RESERVED_ENTRY_KEYS))
            col.add(here, "an evaluator entry needs exactly one evaluator name besides "
                          f"{', '.join(RESERVED_ENTRY_KEYS)} (got {', '.join(map(str, names)) or 'none'}){hints}")
            return None
        name = str(names[0])
        raw_opts = entry[names[0]]
        meta_raw = {k: v for k, v in entry.items() if k in RESERVED_ENTRY_KEYS}
    else:
        col.add(here, f"expected an evaluator name or mapping, got {type(entry).__name__}")
        return None
    opt_path: Path_ = (*here, name) if isinstance(entry, dict) else here
    try:
        meta = EntryMeta.model_validate(meta_raw)
    except ValidationError as exc:
        for e in exc.errors():
            col.add((*here, *e["loc"]), e["msg"])
        meta = None
    if not run_user_code and lookup(name) is None:
        # No user code: a dotted path is looked up without importing it; other names may come from a plugin.
        if plugins.is_dotted(name):
            module = name.partition(":")[0]
            if not module_findable(module):
                col.add(opt_path, f"cannot find module '{module}' for plugin '{name}'")
                return None
        elif not declared_plugins and name not in plugins.entry_points():
            names = sorted({*registry(), *plugins.entry_points()})
            col.add(opt_path, f"unknown evaluator '{name}'{plugins.did_you_mean(name, names)} (known: "
                              f"{', '.join(names)})")
            return None
        if meta is None:
            return None
        return EvalSpec(label=meta.id or name, name=name, evaluator=NotImported(plugin=name), weight=meta.weight,
                        threshold=meta.threshold, critical=meta.critical, field=meta.field, line=col.line(here),
                        panel=meta.panel, aligned=_aligned(meta.aligned, here, col, base))
    try:
        target = plugins.resolve(name)
    except UserError as exc:
        col.add(opt_path, str(exc))
        return None
    primary = getattr(target, "primary", None) if inspect.isclass(target) else None
    if raw_opts is None:
        options: dict[str, Any] = {}
    elif isinstance(raw_opts, dict):
        options = raw_opts
    elif primary:
        options = {primary: raw_opts}
    else:
        col.add(opt_path, f"options must be a mapping {{option: value}}, got {type(raw_opts).__name__}")
        return None
    options = _resolve_files(options, base, getattr(target, "path_options", frozenset()))
    try:
        evaluator = plugins.instantiate(target, name, options)
    except OptionError as exc:
        for opt, msg in exc.problems:
            sub = tuple(int(x) if x.isdigit() else x for x in opt.split(".")) if opt else ()
            col.add((*opt_path, *sub), msg)
        return None
    except UserError as exc:
        col.add(opt_path, str(exc))
        return None
    if meta is None:
        return None
    aligned = _aligned(meta.aligned, here, col, base)
    if aligned is not None and not getattr(evaluator, "is_llm", False):
        col.add((*here, "aligned"), f"'{name}' is not an LLM judge: only a judge's scores are aligned")
    elif aligned is not None:
        try:
            evaluator = aligned.apply(evaluator)  # its examples and rewritten rubric in the judge's prompt
        except UserError as exc:
            col.add((*here, "aligned"), str(exc))
    return EvalSpec(label=meta.id or name, name=name, evaluator=evaluator, weight=meta.weight,
                    threshold=meta.threshold, critical=meta.critical, field=meta.field,
                    line=col.line(here), panel=meta.panel, aligned=aligned)


def _aligned(path: str | None, here: Path_, col: _Collector, base: Path) -> AlignedJudge | None:
    """The entry's aligned judge file (``aligned:``, relative to the suite), or None with the problem noted."""
    if path is None:
        return None
    from ..alignment import load_aligned

    try:
        return load_aligned(base / path)
    except InputError as exc:
        col.add((*here, "aligned"), str(exc))
        return None

