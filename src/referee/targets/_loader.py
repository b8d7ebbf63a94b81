"""Reading ``targets:`` (and ``prompts:`` x ``models:``) and building runnable targets.

Everything that can be wrong before any call is found here, with the YAML path of the problem: an unknown key,
two kinds in one target, a duplicate id, a prompt file that does not exist, a Python target that does not
import, a missing key. The run stops with exit 2 before anything is generated.
"""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..errors import InputError, UserError
from ._model import ModelEntry, PromptEntry, TargetSpec, matrix

if TYPE_CHECKING:
    from ._kinds import Target

Loc = tuple[str | int, ...]
TARGET_KEYS = ("targets", "prompts", "models")


def parse_targets(data: dict[str, Any], base: Path) -> tuple[list[TargetSpec], list[tuple[Loc, str]]]:
    """The targets of a suite mapping (``targets:`` plus the ``prompts:`` x ``models:`` matrix), and every problem
    as (YAML path, message). Files named by targets must exist (relative to ``base``)."""
    problems: list[tuple[Loc, str]] = []
    specs: list[TargetSpec] = []
    # Where each target comes from in the file: ("targets", i), or ("prompts", p) and ("models", m) for a pair
    # of the matrix, so that a problem is reported where it is written, once however many pairs share it.
    origins: list[tuple[Loc, Loc | None]] = []
    raw = data.get("targets")
    if raw is not None and not isinstance(raw, list):
        problems.append((("targets",), "expected a list of targets"))
        raw = []
    for i, entry in enumerate(raw or []):
        spec = _validate(TargetSpec, entry, ("targets", i), problems)
        if spec is not None:
            specs.append(spec)
            origins.append((("targets", i), None))
    prompts_raw, models_raw = data.get("prompts"), data.get("models")
    if (prompts_raw is None) != (models_raw is None):
        from .._util._hints import did_you_mean

        have, need = ("prompts", "models") if prompts_raw is not None else ("models", "prompts")
        # A misspelt 'models:' is reported once, as the unknown key it is (with its "did you mean").
        if not any(did_you_mean(str(k), [need]) for k in data if k not in (have, need)):
            problems.append(((have,), f"'{have}:' needs '{need}:' too (referee runs every prompt with every model)"))
    elif prompts_raw is not None:
        prompts: list[tuple[int, PromptEntry]] = []
        models: list[tuple[int, ModelEntry]] = []
        for key, raw_list, model, into in (("prompts", prompts_raw, PromptEntry, prompts),
                                           ("models", models_raw, ModelEntry, models)):
            if not isinstance(raw_list, list) or not raw_list:
                problems.append(((key,), "expected a non-empty list"))
                continue
            for i, entry in enumerate(raw_list):
                if key == "prompts" and isinstance(entry, str):
                    entry = {"prompt": entry}
                v = _validate(model, entry, (key, i), problems)
                if v is not None:
                    into.append((i, v))
        pairs = [(pi, mi) for pi, _ in prompts for mi, _ in models]
        for (pi, mi), t in zip(pairs, matrix([p for _, p in prompts], [m for _, m in models]), strict=True):
            spec = _validate(TargetSpec, t, ("models", mi), problems)
            if spec is not None:
                specs.append(spec)
                origins.append((("prompts", pi), ("models", mi)))
    seen: dict[str, int] = {}
    for i, s in enumerate(specs):
        at, model_at = origins[i]
        if s.id in seen:
            problems.append(((*at, "id"), f"duplicate target id '{s.id}'"))
        seen[s.id] = i
        for key in ("prompt", "system_file"):
            name = getattr(s, key)
            if name is not None and not _path(base, name).is_file():
                who = f"target '{s.id}': " if model_at is None else ""
                problems.append(((*at, key), f"{who}{key} file not found: {_path(base, name)}"))
        if s.tools and s.provider in ("gemini", "vertex", "bedrock"):
            problems.append(((*(model_at or at), "tools"), f"target '{s.id}': tools need the OpenAI or Anthropic "
                                                           f"wire format ({s.provider} targets run without tools)"))
    problems += [((*origins[i][0], "id"), msg) for i, msg in _colliding_files([s.id for s in specs])]
    return specs, list(dict.fromkeys(problems))  # one message per root cause, where it is written


def target_files(tid: str, prevs: Sequence[str] = ("", "2")) -> list[str]:
    """Every file a target's runs, reruns and reviews name in the output folder: results, outputs and labels
    (each with its lock), their manifests, and the ``.prev`` files a rerun sets earlier ones aside as."""
    from ..results._files import manifest_path

    names = []
    for f in (f"{tid}.jsonl", f"{tid}.outputs.jsonl", f"{tid}.labels.jsonl"):
        names += [f, f + ".lock", manifest_path(f).name]
        for n in prevs:
            prev = f"{f.removesuffix('.jsonl')}.prev{n}.jsonl"
            names += [prev, manifest_path(prev).name]
    return names


def _colliding_files(ids: Sequence[str]) -> list[tuple[int, str]]:
    """Ids whose files would be the same file (``a`` and ``a.outputs`` share ``a.outputs.jsonl``: each run would
    move the other's aside), also on a case-insensitive file system."""
    # Every .prevN an id spells out, so that ``a`` and ``a.prev7`` are compared on ``a.prev7.jsonl`` too.
    prevs = sorted({"", "2", *(m for i in ids for m in re.findall(r"\.prev(\d+)", i))})
    owner: dict[str, tuple[int, str]] = {}
    problems: list[tuple[int, str]] = []
    for i, tid in enumerate(ids):
        clash = None
        for name in target_files(tid, prevs):
            first = owner.get(name.casefold())
            if first is not None and first[1] != tid and clash is None:
                clash = (first[1], name)
            owner.setdefault(name.casefold(), (i, tid))
        if clash is not None:
            other, name = clash
            same = "" if other.casefold() != tid.casefold() else " (on a case-insensitive file system)"
            problems.append((i, f"target ids '{other}' and '{tid}' would share {name} in the output folder{same}: "
                                "rename one"))
    return problems


def _validate(model: Any, entry: Any, loc: Loc, problems: list[tuple[Loc, str]]) -> Any:
    try:
        return model.model_validate(entry)
    except ValidationError as exc:
        for e in exc.errors():
            msg = e["msg"].removeprefix("Value error, ")
            if e.get("type") == "extra_forbidden":
                from .._util._hints import did_you_mean

                key = str(e["loc"][-1]) if e["loc"] else ""
                msg = "unknown key" + did_you_mean(key, [f.alias or n for n, f in model.model_fields.items()])
            problems.append(((*loc, *e["loc"]), msg))
        return None


def _path(base: Path, name: str) -> Path:
    p = Path(name)
    return p if p.is_absolute() else base / p


def select(specs: Sequence[TargetSpec], ids: Sequence[str] | None) -> list[TargetSpec]:
    """``--targets v1,v2``: these targets, in the order given; an unknown id is a usage error (exit 2)."""
    if not ids:
        return list(specs)
    by_id = {s.id: s for s in specs}
    unknown = [i for i in ids if i not in by_id]
    if unknown:
        raise UserError(f"--targets: unknown target id(s) {', '.join(unknown)} (the suite has: "
                        f"{', '.join(by_id) or 'no targets'})")
    return [by_id[i] for i in dict.fromkeys(ids)]


def build_target(spec: TargetSpec, base: Path, *, use_cache: bool = True, batch: bool = False) -> Target:
    """A runnable target. Raises UserError (exit 2) for what can be known before any call: a module that does not
    import, a missing API key, an unset header variable."""
    # The kinds (HTTP clients, the tool loop, subprocesses) load only when a target is built, not when a suite's
    # targets are read.
    from ._kinds import ExecTarget, HttpTarget, ModelTarget, PythonTarget, env_headers, import_attr

    if (spec.kind == "python" or spec.tool_results) and str(base) not in sys.path:
        # Modules beside the suite import as plugins do; a command, a service or a model imports nothing, so their
        # folder is not added (a command's own `agent.py` must not shadow another suite's module).
        sys.path.append(str(base))
    if spec.kind == "python":
        assert spec.python is not None
        return PythonTarget(spec, base, fn=import_attr(spec.python, f"target '{spec.id}': python:"))
    if spec.kind == "exec":
        argv = shlex.split(spec.exec) if isinstance(spec.exec, str) else list(spec.exec or [])
        if argv and argv[0] in ("python", "python3"):
            argv[0] = sys.executable  # the interpreter referee runs under, as a user's `python` would be
        return ExecTarget(spec, base, argv=argv)
    if spec.kind == "http":
        assert spec.http is not None
        try:
            headers = env_headers(spec.http.headers)
        except UserError as exc:
            raise UserError(f"target '{spec.id}': {exc}") from exc
        return HttpTarget(spec, base, headers=headers)
    template = _read(base, spec.prompt, spec) if spec.prompt is not None else (spec.template or "")
    system = _read(base, spec.system_file, spec) if spec.system_file is not None else spec.system
    tool_fn = import_attr(spec.tool_results, f"target '{spec.id}': tool_results:") if spec.tool_results else None
    # A tool loop needs each answer before the next turn: it stays live under --batch.
    return ModelTarget(spec, base, client=_client(spec, batch=batch and not spec.tools), template=template,
                       system=system,
                       prompt_path=spec.prompt, tool_fn=tool_fn, use_cache=use_cache)


def _read(base: Path, name: str, spec: TargetSpec) -> str:
    p = _path(base, name)
    try:
        return p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"target '{spec.id}': cannot read: {exc}", file=str(p)) from exc


def _client(spec: TargetSpec, *, batch: bool = False) -> Any:
    """The shared client (retries, the response cache, prices) around the target's provider."""
    from ..errors import ProviderAuthError
    from ..providers import LOCAL_SERVERS, api_key_for, provider_class
    from ..runner import JudgeClient, ResponseCache, RetryPolicy

    name = spec.provider or "openai"
    try:
        cls: Any = provider_class(name)
        if spec.tools:
            from ._wire import with_tools

            cls = with_tools(cls)
        base_url = spec.base_url or LOCAL_SERVERS.get(name)
        provider = cls(spec.model, base_url=base_url, api_key=api_key_for(name), timeout=spec.timeout)
    except ProviderAuthError as exc:
        raise UserError(f"target '{spec.id}': {exc}") from exc
    except UserError as exc:
        raise UserError(f"target '{spec.id}': {exc}") from exc
    return JudgeClient(provider, cache=ResponseCache(), retry=RetryPolicy(max_retries=spec.max_retries),
                       input_price_per_mtok=spec.input_price_per_mtok,
                       output_price_per_mtok=spec.output_price_per_mtok, batch=batch)


def load_target_file(path: str | Path) -> tuple[list[TargetSpec], Path]:
    """Targets of a file holding ``targets:`` (a suite works too) or a single target mapping."""
    from .._util._yaml import load as load_yaml

    p = Path(path)
    if not p.is_file():
        raise InputError("file not found", file=str(p))
    data = load_yaml(str(p))
    if isinstance(data, dict) and not any(k in data for k in TARGET_KEYS) and "id" in data:
        data = {"targets": [data]}
    if not isinstance(data, dict) or not any(k in data for k in TARGET_KEYS):
        raise InputError("expected 'targets:' (a list of targets) or 'prompts:' and 'models:'", file=str(p))
    base = p.resolve().parent
    specs, problems = parse_targets(data, base)
    if problems:
        raise UserError("\n".join(f"{p}: {_fmt(loc)}: {msg}" for loc, msg in problems))
    if not specs:
        raise InputError("no targets", file=str(p))
    return specs, base


def _fmt(loc: Loc) -> str:
    s = ""
    for part in loc:
        s += f"[{part}]" if isinstance(part, int) else (f".{part}" if s else str(part))
    return s
