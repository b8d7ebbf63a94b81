"""A user's stateful environment: tools with typed arguments over a state that can be copied, reset and hashed.

The environment is a class of the user's (``module:Class`` in a case's ``environment:``). Its tools are the
methods listed in its ``tools`` attribute or marked with :func:`tool`; each method's annotations are the tool's
argument types (its JSON schema, and the check applied before it runs). The state is ``get_state()`` when the
class has it, else its ``state`` attribute. Optional hooks: ``reset()`` (default: a new instance),
``copy_state(state)`` (default: a deep copy) and ``state_hash()`` (default: SHA-256 of the state as canonical
JSON).
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import inspect
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from .._util._redact import redact_text
from ..errors import RefereeError, UserError

_TOOL_MARK = "__referee_tool__"


def tool(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark an environment method as a tool the agent may call (its annotations type the arguments)."""
    setattr(fn, _TOOL_MARK, True)
    return fn


class EnvironmentFailed(RefereeError):
    """The environment cannot do what the episode needs (its state cannot be hashed, a hook raised)."""


@dataclass(frozen=True)
class ToolDef:
    """One tool: its name, description, argument schema and the model that checks a call's arguments."""

    name: str
    description: str
    parameters: dict[str, Any]
    args_model: type[BaseModel] | None

    def schema(self) -> dict[str, Any]:
        """The neutral tool shape the tool loop's wire formats take (``name``, ``description``, ``parameters``)."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


def _strip_titles(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _strip_titles(v) for k, v in schema.items() if k != "title"}
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)


def tool_def(name: str, fn: Callable[..., Any]) -> ToolDef:
    """The tool of a method: a model built from its signature (typed arguments, defaults), its doc's first
    paragraph as the description."""
    fields: dict[str, Any] = {}
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        ann = Any if p.annotation is inspect.Parameter.empty else p.annotation
        fields[p.name] = (ann, ... if p.default is inspect.Parameter.empty else p.default)
    model = create_model(f"{name}_arguments", __base__=_Args, **fields)
    params = _strip_titles(model.model_json_schema())
    params.setdefault("properties", {})
    doc = inspect.getdoc(fn) or ""
    return ToolDef(name=name, description=doc.split("\n\n")[0].strip(), parameters=params, args_model=model)


def canonical_json(value: Any, what: str) -> str:
    """The state as canonical JSON (sorted keys, no spaces); EnvironmentFailed when it is not JSON data."""
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise EnvironmentFailed(f"{what} cannot be hashed: {exc} (give the environment a state_hash() method, "
                                "or keep its state to JSON data: dicts, lists, strings, numbers)") from exc


def state_digest(value: Any, what: str = "the state") -> str:
    return hashlib.sha256(canonical_json(value, what).encode("utf-8")).hexdigest()


def jsonable(value: Any) -> Any:
    """A tool's result as JSON data (pydantic models dumped, anything else by its text) for the conversation."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    try:
        return json.loads(json.dumps(value, ensure_ascii=False, default=str, allow_nan=False))
    except ValueError:
        return str(value)


class Environment:
    """One live environment of an episode (wrapping the user's object)."""

    def __init__(self, factory: Callable[[], Any], label: str) -> None:
        self._factory = factory
        self.label = label
        self.obj = self._build()
        self._tools = self._discover()

    def _build(self) -> Any:
        try:
            return self._factory()
        except Exception as exc:  # noqa: BLE001 - the user's constructor failing is reported, named
            raise EnvironmentFailed(f"environment {self.label}: could not be created: "
                                    f"{type(exc).__name__}: {exc}") from exc

    def _discover(self) -> dict[str, tuple[ToolDef, Callable[..., Any]]]:
        custom = getattr(self.obj, "tool_defs", None)
        if callable(custom):  # an adapter (tau2's domains) that describes and runs its own tools
            return {t.name: (t, self.obj.call_tool) for t in custom()}
        names = list(getattr(type(self.obj), "tools", None) or [])
        for attr, member in inspect.getmembers(type(self.obj)):
            if getattr(member, _TOOL_MARK, False) and attr not in names:
                names.append(attr)
        out: dict[str, tuple[ToolDef, Callable[..., Any]]] = {}
        for n in names:
            fn = getattr(self.obj, n, None)
            if not callable(fn):
                raise UserError(f"environment {self.label}: tool '{n}' is not a method")
            out[n] = (tool_def(n, fn), fn)
        if not out:
            raise UserError(f"environment {self.label}: no tools (list method names in a 'tools' class attribute "
                            "or mark methods with referee.episodes.tool)")
        return out

    def tool_schemas(self) -> list[dict[str, Any]]:
        return [t.schema() for t, _ in self._tools.values()]

    def fresh(self) -> Environment:
        """A new environment in the initial state (``reset()`` on a new object when the class has it)."""
        env = Environment(self._factory, self.label)
        reset = getattr(env.obj, "reset", None)
        if callable(reset):
            reset()
        return env

    def state(self) -> Any:
        get = getattr(self.obj, "get_state", None)
        return get() if callable(get) else getattr(self.obj, "state", None)

    def snapshot(self) -> Any:
        """A copy of the state (the class's ``copy_state`` when it has one), as JSON data for the record."""
        cp = getattr(self.obj, "copy_state", None)
        state = cp(self.state()) if callable(cp) else copy.deepcopy(self.state())
        return jsonable(state)

    def state_hash(self) -> str:
        own = getattr(self.obj, "state_hash", None)
        if callable(own):
            try:
                h = own()
            except Exception as exc:  # noqa: BLE001 - the user's hook
                raise EnvironmentFailed(f"environment {self.label}: state_hash() raised "
                                        f"{type(exc).__name__}: {exc}") from exc
            if not isinstance(h, str) or not h:
                raise EnvironmentFailed(f"environment {self.label}: state_hash() returned {type(h).__name__}, "
                                        "not a non-empty string")
            return h
        return state_digest(self.state(), f"environment {self.label}: the state")

    def argument_names(self, name: str) -> list[str] | None:
        """The arguments tool ``name`` takes (None: no such tool)."""
        entry = self._tools.get(name)
        return None if entry is None else list(entry[0].parameters.get("properties") or {})

    def argument_problem(self, name: str, args: dict[str, Any]) -> tuple[str, str] | None:
        """Why a call of ``name`` with ``args`` could not run as written, checked without running it: ``(where,
        why)`` with ``where`` ``tool`` or ``args.<argument>``; None when it fits. The types are checked strictly
        (JSON values of the declared types: a bool is not an int, ``"3"`` is not 3), as the gold actions of a
        scenario are written by hand and compared with the agent's calls as they are."""
        entry = self._tools.get(name)
        if entry is None:
            return "tool", f"the environment has no tool '{name}' (tools: {', '.join(self._tools)})"
        tdef, _ = entry
        errors: list[dict[str, Any]] = []
        if tdef.args_model is not None:
            try:
                try:
                    text = json.dumps(args, allow_nan=False)
                except ValueError:
                    return "args", "a number that is not finite (NaN or infinity)"
                except TypeError:  # a YAML date, say: checked as the Python value it is
                    tdef.args_model.model_validate(args, strict=True)
                else:
                    tdef.args_model.model_validate_json(text, strict=True)
            except ValidationError as exc:
                errors = [{"loc": e["loc"], "msg": e["msg"]} for e in exc.errors()]
        else:  # an adapter's tool (tau2's): its JSON Schema
            from jsonschema import Draft202012Validator

            errors = [{"loc": tuple(e.absolute_path) or tuple(_missing(e)), "msg": e.message}
                      for e in Draft202012Validator(tdef.parameters).iter_errors(args)]
        if not errors:
            return None
        e = errors[0]
        loc = ".".join(str(x) for x in e["loc"])
        return ("args." + loc if loc else "args"), str(e["msg"])

    def call(self, name: str, args: Any) -> tuple[Any, str | None]:
        """Run one tool call: ``(result, None)``, or ``(None, error)`` for an unknown tool, arguments that do
        not fit its types, or the tool raising (the agent sees the error, as it would a real one)."""
        entry = self._tools.get(name)
        if entry is None:
            return None, f"unknown tool '{name}' (tools: {', '.join(self._tools)})"
        tdef, fn = entry
        if not isinstance(args, dict):
            return None, f"arguments are not a JSON object: {str(args)[:200]}"
        kwargs = args
        if tdef.args_model is not None:
            try:
                parsed = tdef.args_model.model_validate(args)
            except ValidationError as exc:
                probs = "; ".join(f"{'.'.join(str(x) for x in e['loc']) or 'arguments'}: {e['msg']}"
                                  for e in exc.errors())
                return None, f"invalid arguments for {name}: {probs}"
            kwargs = {k: getattr(parsed, k) for k in type(parsed).model_fields}
        try:
            if tdef.args_model is None:  # an adapter's own tool: its reply and error text, as it writes them
                res, err = fn(name, kwargs)
                return (None, err) if err is not None else (jsonable(res), None)
            result = fn(**kwargs)
        except Exception as exc:  # noqa: BLE001 - the tool failing is what the agent must handle
            return None, redact_text(f"{type(exc).__name__}: {exc}")
        return jsonable(result), None


def _missing(error: Any) -> list[str]:
    """The argument a JSON Schema ``required`` error names (it sits at the object's own path)."""
    if error.validator == "required":
        m = re.match(r"'([^']+)' is a required property", error.message)
        return [m.group(1)] if m else []
    return []


def state_diff(expected: Any, got: Any, path: str = "", out: list[dict[str, Any]] | None = None,
               limit: int = 50) -> list[dict[str, Any]]:
    """Where two JSON states differ: ``[{path, expected, got}]`` (at most ``limit`` entries; missing keys as
    ``None`` with ``missing`` naming the side)."""
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if isinstance(expected, dict) and isinstance(got, dict):
        for k in sorted(set(expected) | set(got), key=str):
            p = f"{path}.{k}" if path else str(k)
            if k not in got:
                out.append({"path": p, "expected": expected[k], "got": None, "missing": "got"})
            elif k not in expected:
                out.append({"path": p, "expected": None, "got": got[k], "missing": "expected"})
            else:
                state_diff(expected[k], got[k], p, out, limit)
            if len(out) >= limit:
                break
    elif isinstance(expected, list) and isinstance(got, list) and len(expected) == len(got):
        for i, (a, b) in enumerate(zip(expected, got, strict=True)):
            state_diff(a, b, f"{path}[{i}]", out, limit)
    elif expected != got:
        out.append({"path": path or "(state)", "expected": expected, "got": got})
    return out


def _static_function(cls: type, name: str) -> Any:
    """The method ``cls`` defines as ``name`` (a function, a staticmethod's or classmethod's, or a decorator's
    callable object), found without running a descriptor, a property or a metaclass hook; None when there is
    none or it is a class."""
    member = inspect.getattr_static(cls, name, None)
    if isinstance(member, staticmethod | classmethod):
        member = member.__func__
    return member if callable(member) and not inspect.isclass(member) else None


def declared_tools(cls: type) -> list[str]:
    """The tools a class declares, by inspection alone (nothing of it runs): the functions named in its ``tools``
    attribute, the ones marked with :func:`tool`, or its own ``tool_defs`` / ``call_tool`` pair (an adapter)."""
    if _static_function(cls, "tool_defs") is not None and _static_function(cls, "call_tool") is not None:
        return ["tool_defs()"]
    names: list[str] = []
    listed = inspect.getattr_static(cls, "tools", None)
    if type(listed) in (list, tuple):
        names += [n for n in listed if type(n) is str and _static_function(cls, n) is not None]
    for klass in inspect.getmro(cls):
        for attr in list(vars(klass)):
            fn = _static_function(klass, attr)
            if fn is not None and inspect.getattr_static(fn, _TOOL_MARK, False) is True and attr not in names:
                names.append(attr)
    return names


def environment_class(obj: Any, ref: str) -> type:
    """``obj`` (what ``ref`` names) when it is a class that declares its tools; UserError otherwise, decided by
    inspection before anything is called (so ``os:system`` or ``subprocess:Popen`` is refused, not run)."""
    if not inspect.isclass(obj):
        kind = "a function" if callable(obj) else f"a {type(obj).__name__}"
        raise UserError(f"environment {ref}: is {kind}, not a class; an environment is a class whose tools are "
                        "methods (marked with referee.episodes.tool or named in a 'tools' attribute); nothing was "
                        "called")
    if not declared_tools(obj):
        raise UserError(f"environment {ref}: the class declares no tools (mark methods with referee.episodes.tool "
                        "or name them in a 'tools' class attribute); it was not built")
    return obj


def resolve_environment(ref: str) -> type:
    """The class ``module:Class`` names (imported, then checked with :func:`environment_class`). The path after
    the colon is looked up without running any attribute hook and may not pass through another module
    (``shop:os.system`` is refused: name code where it is defined)."""
    module_name, _, attr = ref.partition(":")
    if not module_name or not attr:
        raise UserError(f"environment '{ref}' is not of the form module:Class")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise UserError(f"environment {ref}: cannot import module '{module_name}': {exc}") from exc
    except Exception as exc:  # noqa: BLE001 - the user's module failing while importing is reported, named
        raise UserError(f"environment {ref}: module '{module_name}' failed while importing: "
                        f"{type(exc).__name__}: {exc}") from exc
    missing = object()
    for i, part in enumerate(attr.split(".")):
        if i and inspect.ismodule(obj):
            raise UserError(f"environment {ref}: '{attr.split('.')[i - 1]}' is a module, not a class of "
                            f"'{module_name}'; name the class where it is defined")
        obj = inspect.getattr_static(obj, part, missing)
        if obj is missing:
            raise UserError(f"environment {ref}: module '{module_name}' has no class '{attr}'")
    return environment_class(obj, ref)


def load_environment(ref: str | type, options: dict[str, Any], label: str | None = None) -> Environment:
    """The environment class (``module:Class``, or the class itself) built with ``options`` as keyword
    arguments. It must declare its tools (:func:`declared_tools`); that is checked before it is called."""
    if isinstance(ref, str):
        cls = resolve_environment(ref)
        name = ref
    else:
        name = f"{getattr(ref, '__module__', '?')}:{getattr(ref, '__qualname__', type(ref).__name__)}"
        cls = environment_class(ref, name)
    return Environment(lambda: cls(**options), label or name)
