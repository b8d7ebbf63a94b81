"""Every evaluator by name, in one place: the built-in and ``@register``-ed classes, the ``referee.evaluators``
entry point group and dotted paths (``package.module:attr``) all resolve here (:func:`resolve`), and every one is
built the same way (:func:`instantiate`, :func:`build`), from a suite file and from Python alike.

A plugin object may be an :class:`~referee.evaluators._base.Evaluator` subclass (options are its dataclass
fields), an Evaluator instance, or a function ``fn(case, output, **options) -> bool | float | CheckResult``
(sync or async). Entry points are only read when a suite names an evaluator no built-in provides, so
importing referee stays cheap.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._util._hints import did_you_mean
from ..errors import OptionError, UserError
from ._base import Evaluator, lookup, registry
from ._options import build_evaluator

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

ENTRY_POINT_GROUP = "referee.evaluators"

_EP_CACHE: dict[str, EntryPoint] | None = None


def entry_points() -> dict[str, EntryPoint]:
    """Entry points of the ``referee.evaluators`` group by name (not yet loaded)."""
    global _EP_CACHE
    if _EP_CACHE is None:
        from importlib.metadata import entry_points as _eps

        _EP_CACHE = {ep.name: ep for ep in _eps(group=ENTRY_POINT_GROUP)}
    return _EP_CACHE


def is_dotted(name: str) -> bool:
    return ":" in name


def import_dotted(path: str) -> Any:
    """``pkg.mod:attr`` (or ``pkg.mod:Class.attr``) -> the object; UserError naming what is missing."""
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise UserError(f"'{path}' is not a dotted path of the form package.module:attribute")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise UserError(f"cannot import module '{module_name}' for plugin '{path}': {exc}") from exc
    except Exception as exc:  # noqa: BLE001 - a plugin module that fails while importing is the user's code
        raise UserError(f"module '{module_name}' of plugin '{path}' failed while importing: "
                        f"{type(exc).__name__}: {exc}") from exc
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise UserError(f"module '{module_name}' has no attribute '{attr}' (plugin '{path}')") from None
    return obj


def resolve(name: str) -> Any:
    """What a suite's evaluator name refers to: a built-in/registered class, an entry point or a dotted path.

    Raises UserError listing the known names when nothing matches.
    """
    cls = lookup(name)
    if cls is not None:
        return cls
    if is_dotted(name):
        return import_dotted(name)
    eps = entry_points()
    if name in eps:
        try:
            return eps[name].load()
        except Exception as exc:  # noqa: BLE001 - a broken plugin is the user's config problem
            raise UserError(f"plugin '{name}' (entry point {eps[name].value}) failed to load: "
                            f"{type(exc).__name__}: {exc}") from exc
    known = sorted({*registry(), *eps})
    hint = did_you_mean(name, known)
    raise UserError(f"unknown evaluator '{name}'{hint} (known: {', '.join(known)}; or a dotted path module:attr)")




def function_option_names(fn: Callable[..., Any]) -> tuple[set[str], bool]:
    """Keyword options a function plugin accepts beyond ``case`` and ``output``, and whether it takes **kwargs."""
    from ._functions import option_names

    return option_names(fn)


def from_function(fn: Callable[..., Any], name: str, options: dict[str, Any]) -> Evaluator:
    """Wrap a function plugin (``fn(case, output, **options)``, by the one rule of
    :mod:`referee.evaluators._functions`), binding its options as keyword arguments."""
    from ._functions import function_adapter

    return function_adapter(fn, name, options=options, unnamed_pair_refused=True)


def instantiate(target: Any, name: str, options: dict[str, Any]) -> Evaluator:
    """``target`` (what :func:`resolve` found) as an evaluator with ``options``: a class built with its options
    type-checked, an instance as it is, a function through the one function adapter; OptionError naming each
    bad option."""
    if inspect.isclass(target) and issubclass(target, Evaluator):
        return build_evaluator(target, options)
    if isinstance(target, Evaluator):
        if options:
            raise OptionError("", f"'{name}' is an evaluator instance and takes no options")
        return target
    if callable(target):
        accepted, var_kw = function_option_names(target)
        unknown = sorted(set(options) - accepted) if not var_kw else []
        if unknown:
            raise OptionError.of([(u, f"unknown option (options: {', '.join(sorted(accepted)) or 'none'})")
                                  for u in unknown])
        return from_function(target, name, options)
    raise OptionError("", f"'{name}' is a {type(target).__name__}, not an evaluator class, instance or "
                          "function")


def build(name: str, options: dict[str, Any] | None = None, *, where: str = "") -> Evaluator:
    """An evaluator by any name a suite file accepts (a built-in or registered class, an entry point, a dotted
    path) with its options, checked as a suite file's are; UserError naming what is wrong."""
    try:
        target = resolve(name)
    except UserError as exc:
        raise UserError(f"{where}{exc}") from exc
    try:
        return instantiate(target, name, dict(options or {}))
    except UserError as exc:
        raise UserError(f"{where}evaluator '{name}': {exc}") from exc
