"""Evaluator options as pydantic models derived from the evaluators' dataclass fields.

They type-check what a suite file or a Python call gives (``ignore_case: "yes"`` is an error naming the
option), reject unknown options, and provide the per-evaluator JSON Schema published for editors.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
import warnings
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from .._util._hints import did_you_mean
from ..errors import OptionError, UserError
from ._base import Evaluator


def _field_doc(cls: type, name: str) -> str | None:
    """The attribute docstring under a dataclass field (what the source says it means), if any."""
    try:
        src = inspect.getsource(cls)
    except (OSError, TypeError):
        return None
    lines = src.splitlines()
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith(f"{name}:") and i + 1 < len(lines):
            nxt = lines[i + 1].strip()
            if nxt.startswith('"""'):
                doc = nxt.strip('"').strip()
                return doc or None
    return None


_MODELS: dict[tuple[type, bool], type[BaseModel] | None] = {}


def options_model(cls: type[Evaluator], *, docs: bool = False) -> type[BaseModel] | None:
    """A pydantic model of ``cls``'s options (its init dataclass fields); None if it is not a dataclass.

    ``docs``: with each option's description from the source (for the published JSON Schema); validating a
    suite does not need them, and reading them parses the class's source (tens of ms of every run's start-up)."""
    key = (cls, docs)
    if key not in _MODELS:
        _MODELS[key] = _make_options_model(cls, docs)
    return _MODELS[key]


def _make_options_model(cls: type[Evaluator], docs: bool) -> type[BaseModel] | None:
    if not dataclasses.is_dataclass(cls):
        return None
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001 - unresolvable annotations: accept anything rather than refuse to run
        hints = {}
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if not f.init or f.name.startswith("_") or f.name in getattr(cls, "internal_options", ()):
            continue
        # A suite file names a rubric by its path; Python may also pass the loaded object (option_types).
        tp = getattr(cls, "option_types", {}).get(f.name, hints.get(f.name, Any))
        desc = _field_doc(cls, f.name) if docs else None
        if f.default is not dataclasses.MISSING:
            default: Any = Field(default=f.default, description=desc)
        elif f.default_factory is not dataclasses.MISSING:
            default = Field(default_factory=f.default_factory, description=desc)
        else:
            default = Field(..., description=desc)
        fields[f.name] = (tp, default)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an option named like a BaseModel attribute ("schema") is fine here
        return create_model(
            f"{cls.__name__}Options", __config__=ConfigDict(extra="forbid", strict=False, allow_inf_nan=False),
            __doc__=(cls.__doc__ or "").strip() or None, **fields,
        )


def _loc(err: Any) -> str:
    return ".".join(str(x) for x in err.get("loc", ()))


def build_evaluator(cls: type[Evaluator], options: dict[str, Any]) -> Evaluator:
    """Validate ``options`` against ``cls``'s option model and instantiate it.

    Raises :class:`~referee.errors.OptionError` listing every wrong option (type errors, unknown names, and
    the evaluator's own from ``__post_init__``, e.g. an invalid regex).
    """
    model = options_model(cls)
    kwargs = dict(options)
    if model is not None:
        try:
            validated = model.model_validate(options)
        except ValidationError as exc:
            problems = []
            for e in exc.errors():
                if e.get("type") == "extra_forbidden":
                    loc = e.get("loc") or ("",)
                    hint = did_you_mean(str(loc[-1]), list(model.model_fields))
                    msg = f"unknown option{hint} (options: {', '.join(model.model_fields) or 'none'})"
                else:
                    msg = e.get("msg", "invalid")
                problems.append((_loc(e), msg))
            raise OptionError.of(problems) from None
        kwargs = {k: getattr(validated, k) for k in options}
    try:
        return cls(**kwargs)
    except OptionError:
        raise
    except (UserError, TypeError, ValueError) as exc:
        raise OptionError("", str(exc)) from None


def options_json_schema(cls: type[Evaluator]) -> dict[str, Any]:
    """The JSON Schema of ``cls``'s options (what the suite schema publishes for editors)."""
    model = options_model(cls, docs=True)
    if model is None:
        return {"type": "object"}
    schema = model.model_json_schema()
    schema.pop("title", None)
    return schema

