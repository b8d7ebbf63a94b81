"""Loading and validating suite files. Every problem is collected with its path and YAML line, so
``referee validate`` can report them all at once (``suite.yaml:14 evaluators[2].regex.pattern: ...``).

The suite model is in ``_suite.py``, the evaluator entries in ``_entries.py``; this module loads and keeps the
import paths callers use."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import importlib
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .._util._yaml import line_map, parse_nodes
from ..cases._case import Case, load_cases
from ..cases._media import media_store
from ..errors import InputError, UserError
from ..evaluators._base import LLMEvaluator
from ..targets._loader import TARGET_KEYS, parse_targets
from ._entries import NotImported, _build_entry, _Collector, module_findable
from ._model import (
    BASELINE_ONLY_GATES,
    Gates,
    JudgeDefaults,
    SuiteFile,
)
from ._suite import EvalSpec, Path_, Problem, Suite, SuiteInvalid, resolve_critical

# Every name callers imported from here before the split still imports from here.
__all__ = [
    "EvalSpec", "NotImported", "Problem", "Suite", "SuiteInvalid", "check_suite", "load_suite", "module_findable",
    "suite_from_dict",
]

def _load_cases(value: Any, col: _Collector, base: Path) -> tuple[list[Case], str | None]:
    # One image store for every case loaded here: an image named by many parts is held once.
    with media_store():
        return _load_cases_unshared(value, col, base)


def _load_cases_unshared(value: Any, col: _Collector, base: Path) -> tuple[list[Case], str | None]:
    from ..cases._case import _check_case  # the same checks and messages as cases files

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


def check_suite(path: str | Path, *, run_user_code: bool = True, force_aligned: bool = False,
                monitor_only_ok: bool = False) -> tuple[Suite | None, list[Problem]]:
    """Load a suite, collecting every problem. Returns (suite or None when unusable, problems).

    ``run_user_code=False`` (``validate``, ``run --dry-run``) imports no plugin module: plugin modules and
    dotted paths are only looked up, and plugin evaluators become :class:`NotImported` entries.
    ``force_aligned``: an aligned judge fitted for another judge model is a warning, not a problem.
    ``monitor_only_ok`` (``validate``, ``referee monitor``): a suite with a ``monitor:`` section may have no
    ``cases:`` (production traces are its cases); one that has them still has them checked."""
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
    return _check_mapping(data, sp, line_map(node), p.resolve().parent, hashlib.sha256(raw).hexdigest(),
                          p.stem, run_user_code=run_user_code, force_aligned=force_aligned,
                          monitor_only_ok=monitor_only_ok)


def _check_mapping(data: Any, sp: str, lines: dict[Path_, int], base: Path, sha256: str,
                   default_name: str, *, run_user_code: bool = True, force_aligned: bool = False,
                   monitor_only_ok: bool = False) -> tuple[Suite | None, list[Problem]]:
    col = _Collector(sp, lines)
    if not isinstance(data, dict):
        col.add((), "a suite file is a mapping with at least 'cases' and 'evaluators'")
        return None, col.problems
    no_cases = monitor_only_ok and "cases" not in data and isinstance(data.get("monitor"), dict)
    if no_cases:  # a monitor suite: the traces are its cases
        data = {**data, "cases": []}
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
            msg = e["msg"]
            if e.get("type") == "extra_forbidden" and loc and isinstance(loc[-1], str):
                msg = f"unknown key '{loc[-1]}'{_key_hint(loc)}"
            col.add(loc, msg)
    raw_entries = data.get("evaluators")
    entries: list[Any] = raw_entries if isinstance(raw_entries, list) else []
    specs: list[EvalSpec] = []
    for i, entry in enumerate(entries):
        spec = _build_entry(entry, i, col, base, run_user_code=run_user_code, declared_plugins=declared_plugins)
        if spec is not None:
            specs.append(spec)
    resolve_critical(specs)
    labels: dict[str, int] = {}
    for s in specs:
        n = labels.get(s.label, 0) + 1
        labels[s.label] = n
        if n > 1:
            s.label = f"{s.label}#{n}"
    # The parts that validated on their own are checked further even when another part did not, so one
    # validate run reports every problem.
    cases, cases_path = ([], None) if no_cases else _load_cases(data.get("cases"), col, base)
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
    elif gates is not None and gates.baseline is not None and not (base / gates.baseline).exists() \
            and _file_like(gates.baseline):
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
    if judge is not None:
        from ..alignment import JudgeRef

        for idx, s in enumerate(specs):
            if s.aligned is not None:
                try:
                    # The template too, unless the alignment brings its own rewritten prompt (then the suite's
                    # template is not what is sent): the hash the rows of the fitted run carried.
                    th = getattr(s.evaluator, "template_hash", None) if s.aligned.prompt is None else None
                    s.aligned.check_judge(JudgeRef(provider=judge.provider, model=judge.model, template_hash=th),
                                          force=force_aligned)
                except UserError as exc:
                    col.add(("evaluators", idx, "aligned"), str(exc))
        if col.problems:
            return None, sorted(col.problems, key=lambda p: (p.line or 0))
    suite = Suite(path=sp, name=model.name or default_name, cases=cases, specs=specs, scoring=model.scoring,
                  judge=judge, gates=model.gates, concurrency=model.concurrency,
                  sha256=sha256, cases_path=cases_path, base_dir=base, targets=targets,
                  judges=list(model.judges or []), panel=model.panel)
    if suite.judges:
        from ._panel import with_panel

        try:
            suite = with_panel(suite)
        except UserError as exc:
            col.add(("judges",), str(exc))
            return None, col.problems
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


def load_suite(path: str | Path, *, run_user_code: bool = True, force_aligned: bool = False) -> Suite:
    """Load a suite or raise :class:`SuiteInvalid` listing every problem (see :func:`check_suite`)."""
    suite, problems = check_suite(path, run_user_code=run_user_code, force_aligned=force_aligned)
    if problems or suite is None:
        raise SuiteInvalid(problems or [Problem(str(path), None, "", "invalid suite")])
    return suite


def _key_hint(loc: tuple[Any, ...]) -> str:
    """`` (did you mean 'x'?)`` for an unknown key: the closest field of the model at ``loc``'s parent."""
    import typing

    from pydantic import BaseModel

    from .._util._hints import did_you_mean

    model: Any = SuiteFile
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = getattr(model, "model_fields", {}).get(part)
        if field is None:
            return ""
        nxt = [a for a in (field.annotation, *typing.get_args(field.annotation))
               if isinstance(a, type) and issubclass(a, BaseModel)]
        if not nxt:
            return ""
        model = nxt[0]
    fields = getattr(model, "model_fields", {})
    names = [f.alias or n for n, f in fields.items()]
    return did_you_mean(str(loc[-1]), names) + (f" (keys here: {', '.join(sorted(names))})" if names else "")


def _file_like(baseline: str) -> bool:
    """A baseline that can only be a file (a path or a results file's name); anything else may name a run in the
    history (``main``, a branch, ``last``, a run id, ``@COMMIT``), resolved when the gates run."""
    from ..store import looks_like_name

    return baseline.endswith((".jsonl", ".json", ".ndjson")) or "/" in baseline.strip("/") and baseline.startswith(
        (".", "/")) or not looks_like_name(baseline)
