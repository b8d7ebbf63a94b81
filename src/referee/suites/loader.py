"""Loading and validating suite files. Every problem is collected with its path and YAML line, so
``referee validate`` can report them all at once (``suite.yaml:14 evaluators[2].regex.pattern: ...``)."""

from __future__ import annotations

import copy
import dataclasses
import fnmatch
import hashlib
import importlib
import inspect
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import yaml
from pydantic import ValidationError

from .._yaml import parse_nodes
from ..cases import Case, load_cases
from ..errors import InputError, UserError
from ..evaluators.base import CheckResult, Evaluator, LLMEvaluator, registry
from ..targets.loader import TARGET_KEYS, parse_targets
from ..targets.model import TargetSpec
from .model import (
    BASELINE_ONLY_GATES,
    RESERVED_ENTRY_KEYS,
    EntryMeta,
    Gates,
    JudgeDefaults,
    Scoring,
    SuiteFile,
)
from .options import OptionProblem, build_evaluator

Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class Problem:
    file: str
    line: int | None
    path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where} {self.path}: {self.message}" if self.path else f"{where}: {self.message}"


class SuiteInvalid(UserError):
    """The suite file has problems; the message lists every one, one per line."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


@dataclass
class EvalSpec:
    """One evaluator as a suite uses it."""

    label: str
    name: str
    evaluator: Evaluator
    weight: float = 1.0
    threshold: float | None = None
    critical: bool = False
    field: str = "output"
    line: int | None = None

    @property
    def is_llm(self) -> bool:
        return bool(getattr(self.evaluator, "is_llm", False))

    @property
    def blocking(self) -> bool:
        return bool(getattr(self.evaluator, "blocking", False))


@dataclass
class Suite:
    path: str
    name: str
    cases: list[Case]
    specs: list[EvalSpec]
    scoring: Scoring = field(default_factory=lambda: Scoring())
    judge: JudgeDefaults | None = None
    gates: Gates = field(default_factory=lambda: Gates())
    concurrency: int | None = None
    sha256: str = ""
    cases_path: str | None = None
    base_dir: Path = field(default_factory=Path)
    targets: list[TargetSpec] = field(default_factory=list)
    """Systems under test (``targets:`` and the ``prompts:`` x ``models:`` matrix); empty: the cases hold the
    outputs."""

    @property
    def llm_specs(self) -> list[EvalSpec]:
        return [s for s in self.specs if s.is_llm]

    def config_hash(self) -> str:
        """Identity of what the suite computes (for resuming only rows produced the same way)."""
        h = hashlib.sha256(self.sha256.encode())
        for s in self.specs:
            h.update(repr((s.label, s.name, s.weight, s.threshold, s.critical, s.field, s.evaluator)).encode())
        return h.hexdigest()

    def filtered(self, patterns: list[str]) -> Suite:
        """Cases and evaluators matching ``--filter`` patterns (globs).

        ``id:GLOB``/``category:GLOB`` select cases, ``evaluator:GLOB`` selects evaluators (by label or name);
        a bare GLOB selects cases whose id or category matches. Patterns of one kind are alternatives.
        """
        case_pats: list[tuple[str, str]] = []
        ev_pats: list[str] = []
        for p in patterns:
            kind, sep, glob = p.partition(":")
            if sep and kind in ("id", "category", "case"):
                case_pats.append((kind, glob))
            elif sep and kind in ("evaluator", "eval", "check"):
                ev_pats.append(glob)
            elif sep:
                raise UserError(f"--filter {p!r}: unknown kind '{kind}' (use id:, category: or evaluator:)")
            else:
                case_pats.append(("any", p))

        def case_ok(c: Case) -> bool:
            if not case_pats:
                return True
            for kind, glob in case_pats:
                cat = c.category or ""
                if kind in ("id", "case", "any") and fnmatch.fnmatchcase(c.id, glob):
                    return True
                if kind in ("category", "any") and fnmatch.fnmatchcase(cat, glob):
                    return True
            return False

        specs = [s for s in self.specs
                 if not ev_pats or any(fnmatch.fnmatchcase(s.label, g) or fnmatch.fnmatchcase(s.name, g)
                                       for g in ev_pats)]
        cases = [c for c in self.cases if case_ok(c)]
        if not cases:
            raise UserError(f"--filter matched no case of {self.path}")
        if not specs:
            raise UserError(f"--filter matched no evaluator of {self.path}")
        return dataclasses.replace(self, cases=cases, specs=specs)


def _line_map(node: Any, path: Path_ = (), out: dict[Path_, int] | None = None) -> dict[Path_, int]:
    """Line (1-based) of every mapping key and sequence item in a composed YAML document."""
    out = {} if out is None else out
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            key = k.value
            out[(*path, key)] = k.start_mark.line + 1
            _line_map(v, (*path, key), out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            out[(*path, i)] = item.start_mark.line + 1
            _line_map(item, (*path, i), out)
    return out


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


def _resolve_files(options: dict[str, Any], base: Path) -> dict[str, Any]:
    """Options naming files (``*_file``) are relative to the suite file."""
    out = dict(options)
    for k, v in options.items():
        if k.endswith("_file") and isinstance(v, str) and not Path(v).is_absolute():
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
    from .. import plugins

    here: Path_ = ("evaluators", idx)
    if isinstance(entry, Evaluator):  # a suite built in Python
        label = entry.name or type(entry).__name__
        return EvalSpec(label=label, name=label, evaluator=entry, line=None)
    if isinstance(entry, str):
        name, raw_opts, meta_raw = entry, {}, {}
    elif isinstance(entry, dict):
        names = [k for k in entry if k not in RESERVED_ENTRY_KEYS]
        if len(names) != 1:
            col.add(here, "an evaluator entry needs exactly one evaluator name besides "
                          f"{', '.join(RESERVED_ENTRY_KEYS)} (got {', '.join(map(str, names)) or 'none'})")
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
    if not run_user_code and name not in registry():
        # No user code: a dotted path is looked up without importing it; other names may come from a plugin.
        if plugins.is_dotted(name):
            module = name.partition(":")[0]
            if not module_findable(module):
                col.add(opt_path, f"cannot find module '{module}' for plugin '{name}'")
                return None
        elif not declared_plugins and name not in plugins.entry_points():
            known = ", ".join(sorted({*registry(), *plugins.entry_points()}))
            col.add(opt_path, f"unknown evaluator '{name}' (known: {known})")
            return None
        if meta is None:
            return None
        return EvalSpec(label=meta.id or name, name=name, evaluator=NotImported(plugin=name), weight=meta.weight,
                        threshold=meta.threshold, critical=meta.critical, field=meta.field, line=col.line(here))
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
    options = _resolve_files(options, base)
    try:
        evaluator = _instantiate(target, name, options)
    except OptionProblem as exc:
        for opt, msg in exc.problems:
            sub = tuple(int(x) if x.isdigit() else x for x in opt.split(".")) if opt else ()
            col.add((*opt_path, *sub), msg)
        return None
    except UserError as exc:
        col.add(opt_path, str(exc))
        return None
    if meta is None:
        return None
    return EvalSpec(label=meta.id or name, name=name, evaluator=evaluator, weight=meta.weight,
                    threshold=meta.threshold, critical=meta.critical, field=meta.field,
                    line=col.line(here))


def _instantiate(target: Any, name: str, options: dict[str, Any]) -> Evaluator:
    from .. import plugins

    if inspect.isclass(target) and issubclass(target, Evaluator):
        return build_evaluator(target, options)
    if isinstance(target, Evaluator):
        if options:
            raise OptionProblem([("", f"'{name}' is an evaluator instance and takes no options")])
        return target
    if callable(target):
        accepted, var_kw = plugins.function_option_names(target)
        unknown = sorted(set(options) - accepted) if not var_kw else []
        if unknown:
            raise OptionProblem([(u, f"unknown option (options: {', '.join(sorted(accepted)) or 'none'})")
                                 for u in unknown])
        return plugins.from_function(target, name, options)
    raise OptionProblem([("", f"'{name}' is a {type(target).__name__}, not an evaluator class, instance or "
                              "function")])


def _load_cases(value: Any, col: _Collector, base: Path) -> tuple[list[Case], str | None]:
    from ..cases import _check_case  # the same checks and messages as cases files

    cases: list[Case] = []
    cases_path = None
    if not isinstance(value, str | list):
        return cases, None  # already reported by the model validation
    if isinstance(value, str):
        p = Path(value)
        cases_path = str(p if p.is_absolute() else base / p)
        try:
            cases = load_cases(cases_path).cases
        except InputError as exc:
            col.add(("cases",), str(exc))
    else:
        if not value:
            col.add(("cases",), "no cases")
        for i, obj in enumerate(value):
            try:
                cases.append(_check_case(obj, col.file, col.line(("cases", i)), i))
            except InputError as exc:
                col.add(("cases", i, *((exc.field,) if exc.field else ())), exc.reason, col.line(("cases", i)))
    seen: set[str] = set()
    for c in cases:
        if c.id in seen:
            col.add(("cases",), f"duplicate case id '{c.id}' ({c.where}); ids must be unique")
        seen.add(c.id)
    return cases, cases_path


def check_suite(path: str | Path, *, run_user_code: bool = True) -> tuple[Suite | None, list[Problem]]:
    """Load a suite, collecting every problem. Returns (suite or None when unusable, problems).

    ``run_user_code=False`` (``validate``, ``run --dry-run``) imports no plugin module: plugin modules and
    dotted paths are only looked up, and plugin evaluators become :class:`NotImported` entries."""
    p = Path(path)
    sp = str(path)
    if not p.exists():
        return None, [Problem(sp, None, "", "file not found")]
    try:
        raw = p.read_bytes()
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return None, [Problem(sp, None, "", f"cannot read the suite as UTF-8: {exc}")]
    try:
        node, data = parse_nodes(text, sp)
    except InputError as exc:
        return None, [Problem(sp, exc.line, "", exc.reason)]
    return _check_mapping(data, sp, _line_map(node), p.resolve().parent, hashlib.sha256(raw).hexdigest(),
                          p.stem, run_user_code=run_user_code)


def _check_mapping(data: Any, sp: str, lines: dict[Path_, int], base: Path, sha256: str,
                   default_name: str, *, run_user_code: bool = True) -> tuple[Suite | None, list[Problem]]:
    col = _Collector(sp, lines)
    if not isinstance(data, dict):
        col.add((), "a suite file is a mapping with at least 'cases' and 'evaluators'")
        return None, col.problems
    # Plugin modules beside the suite file are importable (appended: installed packages win).
    if str(base) not in sys.path:
        sys.path.append(str(base))
    declared_plugins = isinstance(data.get("plugins"), list) and bool(data.get("plugins"))
    # Plugins first: they register evaluator names the rest of the file may use.
    plugin_list = data.get("plugins")
    for i, mod in enumerate(plugin_list if isinstance(plugin_list, list) else []):
        if not isinstance(mod, str):
            continue
        if not run_user_code:
            if not module_findable(mod):
                col.add(("plugins", i), f"cannot find plugin module '{mod}' (not imported: no user code runs here)")
            continue
        try:
            importlib.import_module(mod)
        except Exception as exc:  # noqa: BLE001 - any import failure is a config problem of this line
            col.add(("plugins", i), f"cannot import plugin module '{mod}': {type(exc).__name__}: {exc}")
    model: SuiteFile | None
    try:
        # Evaluator instances and functions (a suite built in Python) are checked one by one below.
        model = SuiteFile.model_validate({**data, "evaluators": [
            e if isinstance(e, str | dict) else "<object>" for e in data.get("evaluators") or []]}
            if isinstance(data.get("evaluators"), list) else data)
    except ValidationError as exc:
        model = None
        for e in exc.errors():
            loc = tuple(e["loc"])
            if loc and loc[0] == "evaluators" and len(loc) >= 3:
                continue  # entries are checked one by one below, with better messages
            if loc and loc[0] in TARGET_KEYS:
                continue  # the targets are checked below, with their files
            col.add(loc, e["msg"])
    raw_entries = data.get("evaluators")
    entries: list[Any] = raw_entries if isinstance(raw_entries, list) else []
    specs: list[EvalSpec] = []
    for i, entry in enumerate(entries):
        spec = _build_entry(entry, i, col, base, run_user_code=run_user_code, declared_plugins=declared_plugins)
        if spec is not None:
            specs.append(spec)
    labels: dict[str, int] = {}
    for s in specs:
        n = labels.get(s.label, 0) + 1
        labels[s.label] = n
        if n > 1:
            s.label = f"{s.label}#{n}"
    # The parts that validated on their own are checked further even when another part did not, so one
    # validate run reports every problem.
    cases, cases_path = _load_cases(data.get("cases"), col, base)
    targets, target_problems = parse_targets(data, base)
    for loc, msg in target_problems:
        col.add(loc, msg)
    target_ids = {t.id for t in targets}
    gates = model.gates if model is not None else _part(Gates, data.get("gates"))
    if gates is not None and gates.candidate is not None and gates.candidate not in target_ids:
        col.add(("gates", "candidate"), f"no target with id '{gates.candidate}' (targets: "
                                        f"{', '.join(sorted(target_ids)) or 'none'})")
    if gates is not None and gates.baseline in target_ids:
        pass  # a target of this suite, not a file
    elif gates is not None and gates.baseline is not None and not (base / gates.baseline).exists():
        col.add(("gates", "baseline"), f"baseline results file not found: {base / gates.baseline}")
    if gates is not None and gates.baseline is None:
        for key in BASELINE_ONLY_GATES:
            if getattr(gates, key):
                col.add(("gates", key), "needs gates.baseline (a results file to compare with)")
    judge = model.judge if model is not None else _part(JudgeDefaults, data.get("judge"))
    if judge is not None and judge.template_file is not None:
        tf = base / judge.template_file
        if not tf.exists():
            col.add(("judge", "template_file"), f"template file not found: {tf}")
        judge = judge.model_copy(update={"template_file": str(tf)})
    if model is None or col.problems:
        return None, sorted(col.problems, key=lambda p: (p.line or 0))
    specs = [_with_judge_defaults(s, judge) for s in specs]
    suite = Suite(path=sp, name=model.name or default_name, cases=cases, specs=specs, scoring=model.scoring,
                  judge=judge, gates=model.gates, concurrency=model.concurrency,
                  sha256=sha256, cases_path=cases_path, base_dir=base, targets=targets)
    return suite, []


def _part(model: Any, value: Any) -> Any:
    """One section validated on its own (its errors were already reported), or None."""
    if value is None:
        return None
    try:
        return model.model_validate(value)
    except ValidationError:
        return None


def _with_judge_defaults(spec: EvalSpec, judge: JudgeDefaults | None) -> EvalSpec:
    ev = spec.evaluator
    if judge is None or not isinstance(ev, LLMEvaluator):
        return spec
    new = ev.with_defaults(template=judge.template, template_file=judge.template_file, rubric=judge.rubric,
                           max_tokens=judge.max_tokens)
    return dataclasses.replace(spec, evaluator=new)


def suite_from_dict(data: dict[str, Any], base_dir: str | Path = ".", name: str = "suite") -> Suite:
    """A suite from a mapping (as a suite file would hold), built in memory; relative paths are resolved
    against ``base_dir``. Evaluator entries may also be :class:`Evaluator` instances. Raises
    :class:`SuiteInvalid` listing every problem."""
    base = Path(base_dir).resolve()
    data = dict(data)
    data["evaluators"] = [copy.deepcopy(e) if isinstance(e, str | dict) else e
                          for e in data.get("evaluators") or []] if isinstance(data.get("evaluators"), list) \
        else data.get("evaluators")
    identity = hashlib.sha256(repr(sorted(data.items(), key=lambda kv: str(kv[0]))).encode()).hexdigest()
    suite, problems = _check_mapping(data, f"<{name}>", {}, base, identity, name)
    if problems or suite is None:
        raise SuiteInvalid(problems or [Problem(f"<{name}>", None, "", "invalid suite")])
    return suite


def load_suite(path: str | Path, *, run_user_code: bool = True) -> Suite:
    """Load a suite or raise :class:`SuiteInvalid` listing every problem (see :func:`check_suite`)."""
    suite, problems = check_suite(path, run_user_code=run_user_code)
    if problems or suite is None:
        raise SuiteInvalid(problems or [Problem(str(path), None, "", "invalid suite")])
    return suite
