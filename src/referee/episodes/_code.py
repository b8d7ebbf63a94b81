"""Which code a scenario may run.

A scenario file is data: people download benchmark sets, and a set ships its own modules beside its cases, so
lying beside the file grants nothing. A scenario's ``environment.class`` is imported only when the person running
it named that code: a module or ``module:Class`` on the command line (``referee simulate --environment``), a name
or a class passed to :func:`~referee.episodes.run_episodes` (``environments=``), or any with
``trust_scenario_code`` (``--trust-scenario-code``). Whatever is named must then resolve to a class that declares
its tools, checked by inspection before it is called (:func:`~referee.episodes._environment.environment_class`).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..cases._case import Case
from ..errors import InputError, UserError, setting
from ._environment import environment_class, resolve_environment

_NAME = re.compile(r"^[A-Za-z_][\w.]*(:[A-Za-z_][\w.]*)?$")


@contextmanager
def importable_from(folder: Path | None) -> Iterator[None]:
    """``folder`` on the import path while the block runs, then off it again: a module the user named may be found
    beside their files, but every later import (referee's optional dependencies included) never looks there."""
    entry = str(folder.resolve()) if folder is not None else None
    if entry is None or entry in sys.path:
        yield
        return
    sys.path.append(entry)  # appended: installed packages win
    try:
        yield
    finally:
        if entry in sys.path:
            sys.path.remove(entry)


@dataclass(frozen=True)
class EnvironmentSources:
    """The environment code the person running the scenarios named: module names, ``module:Class`` references
    and classes given as objects (by their ``module:Class``); ``trust`` admits whatever a scenario names."""

    names: frozenset[str] = frozenset()
    classes: dict[str, type] = field(default_factory=dict)
    trust: bool = False
    folder: Path | None = None
    """The cases file's folder: a named module not installed may be found there."""

    @classmethod
    def of(cls, environments: Sequence[str | type] | str | type | None, *, trust: bool = False,
           folder: Path | None = None) -> EnvironmentSources:
        if environments is None:
            environments = ()
        if isinstance(environments, str | type):
            environments = [environments]
        names: set[str] = set()
        classes: dict[str, type] = {}
        for e in environments:
            if isinstance(e, str):
                if not _NAME.match(e):
                    raise UserError(f"environment {e!r}: give a module name (shop_env) or module:Class")
                names.add(e)
            elif isinstance(e, type):
                ref = f"{e.__module__}:{e.__qualname__}"
                classes[ref] = environment_class(e, ref)
            else:
                raise UserError(f"environments: {e!r} is a {type(e).__name__}, not a module name, module:Class "
                                "or a class")
        return cls(frozenset(names), classes, trust, folder)

    def allows(self, ref: str) -> bool:
        return self.trust or ref in self.classes or ref in self.names or ref.partition(":")[0] in self.names

    def resolve(self, ref: str, case: Case) -> type:
        """The class a scenario's ``environment.class`` names; InputError naming the case's file, line and field
        when the code was not named by the person running it, or is not a class that declares its tools."""
        where: dict[str, Any] = {"file": case.source or None, "line": case.line, "field": "environment.class"}
        if ref in self.classes:
            return self.classes[ref]
        if not self.allows(ref):
            module = ref.partition(":")[0]
            cli = setting("environment").startswith("--")
            name_it = f"--environment {module}" if cli else f"environments=[{module!r}]"
            trust = "--trust-scenario-code" if cli else "trust_scenario_code=True"
            raise InputError(
                f"case '{case.id}': environment {ref} is code the scenario names, and a scenario file cannot choose "
                f"code to run (it was not imported); after reading module '{module}', name it with {name_it} "
                f"(or pass {trust} for a scenario set you trust)", **where)
        try:
            with importable_from(self.folder):
                return resolve_environment(ref)
        except InputError:
            raise
        except UserError as exc:
            raise InputError(f"case '{case.id}': {exc}", **where) from None


@dataclass(frozen=True)
class CodeReference:
    """One reference to code in a scenario file: where it is, and where the module would come from."""

    file: str
    line: int | None
    case: str
    field: str
    ref: str
    found: str
    """``installed``, ``beside the file`` or ``not found`` (looked up without importing anything)."""

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        return f"{where}: case '{self.case}' {self.field}: {self.ref} ({self.found})"


@dataclass
class ScenarioCheck:
    """What :func:`check_scenarios` found in one file."""

    path: str
    cases: int = 0
    scenarios: int = 0
    references: list[CodeReference] = field(default_factory=list)
    problems: list[InputError] = field(default_factory=list)

    def describe(self) -> str:
        modules = sorted({r.ref.partition(":")[0] for r in self.references})
        code = (f"environment code named: {', '.join(sorted({r.ref for r in self.references}))} (runs only with "
                f"{' '.join(f'--environment {m}' for m in modules)} or --trust-scenario-code)"
                if modules else "no code named")
        return f"{self.cases} cases, {self.scenarios} scenarios; {code}"


def _found(module: str, folder: Path) -> str:
    import importlib.machinery

    top = module.split(".")[0]
    if top in sys.modules or top in sys.builtin_module_names \
            or importlib.machinery.PathFinder.find_spec(top, list(sys.path)) is not None:
        return "installed"
    if importlib.machinery.PathFinder.find_spec(top, [str(folder)]) is not None:
        return "beside the file"
    return "not found"


_CASES_SUFFIXES = (".jsonl", ".ndjson", ".csv", ".tsv", ".parquet", ".pq")


def is_cases_file(path: str | Path) -> bool:
    """Whether ``path`` is a cases file (a list of cases, or ``{cases: [...]}``) rather than a suite (a mapping
    with ``evaluators``): by the suffix, or for YAML / JSON by the top level (read with the bounded
    reader; a file that does not parse is left to the suite check, which reports it with its line)."""
    from .._util._yaml import load

    p = Path(path)
    suffix = p.suffix.lower()
    if suffix in _CASES_SUFFIXES:
        return True
    if suffix not in (".yaml", ".yml", ".json"):
        return False
    try:
        data: Any = load(str(p))
    except (UserError, OSError):
        return False
    # A suite always has evaluators (its cases may be inline); a cases file's mapping form is {cases: [...]}.
    return isinstance(data, list) or (isinstance(data, dict) and isinstance(data.get("cases"), list)
                                      and "evaluators" not in data)


def check_scenarios(path: str | Path) -> ScenarioCheck:
    """Read a scenario file without running anything: every case that is a scenario validated (each problem with
    its file, line and field) and every reference to code it makes listed (``environment.class``), with where
    that module would be found. Nothing is imported."""
    from ..cases import load_cases
    from ._scenario import is_scenario, scenario_of

    out = ScenarioCheck(str(path))
    try:
        cases = list(load_cases(path).cases)
    except InputError as exc:
        out.problems.append(exc)
        return out
    folder = Path(path).resolve().parent
    out.cases = len(cases)
    for c in cases:
        if not is_scenario(c):
            continue
        out.scenarios += 1
        raw = c.get("environment")
        ref = raw.get("class") if isinstance(raw, dict) else None
        if isinstance(ref, str):  # listed even when the rest of the scenario is wrong
            out.references.append(CodeReference(c.source or str(path), c.line, c.id, "environment.class", ref,
                                                _found(ref.partition(":")[0], folder) if _NAME.match(ref)
                                                else "not a module:Class reference"))
        try:
            scenario_of(c)
        except InputError as exc:
            out.problems.append(exc)
    return out
