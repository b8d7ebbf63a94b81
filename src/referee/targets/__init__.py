"""Targets: the prompt, model or agent under test, run by referee before the evaluators.

``targets:`` in a suite (or a targets file) names each system under test: a model with a prompt template (and
tools: the tool loop), an HTTP service, a Python callable or a command. ``generate_outputs`` runs one on cases
from Python; ``referee run suite.yaml`` runs them all, evaluates, and compares them.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._util._moved import forward
from ..cases._case import Case
from ._model import HttpSpec, ModelEntry, PromptEntry, TargetSpec, ToolSpec

if TYPE_CHECKING:
    from ._kinds import Generation, Target
    from ._loader import build_target, load_target_file, parse_targets, select


def as_spec(target: TargetSpec | dict[str, Any]) -> TargetSpec:
    """``target`` as a validated :class:`TargetSpec` (a mapping is checked as a suite's ``targets:`` entry)."""
    return target if isinstance(target, TargetSpec) else TargetSpec.model_validate(target)


def as_target(target: Any, *, base_dir: str | Path = ".", use_cache: bool = True) -> Target:
    """A runnable target from a :class:`TargetSpec`, its mapping (as in a suite's ``targets:``), a built
    :class:`Target`, or a plain Python function ``(input) | (case) | (input, case) -> str | dict``, sync or async
    (with a target's settings: ``{"python": fn, "timeout": 600, "concurrency": 4}``)."""
    from ..errors import UserError
    from ._kinds import PythonTarget, Target
    from ._loader import build_target

    if isinstance(target, Target):
        return target
    if isinstance(target, dict) and callable(target.get("python")):
        # {"python": fn, "timeout": 600, ...}: a function with a target's settings.
        fn = target["python"]
        spec = as_spec({"id": _function_id(fn), **target, "python": _function_ref(fn)})
        return PythonTarget(spec, Path(base_dir).resolve(), fn=fn)
    if isinstance(target, TargetSpec | dict):
        return build_target(as_spec(target), Path(base_dir).resolve(), use_cache=use_cache)
    if callable(target):
        return PythonTarget(TargetSpec(id=_function_id(target), python=_function_ref(target)),
                            Path(base_dir).resolve(), fn=target)
    raise UserError(f"target: expected a target mapping, a TargetSpec or a function, got {type(target).__name__}")


def _function_id(fn: Any) -> str:
    import re

    name = str(getattr(fn, "__name__", "") or type(fn).__name__)
    return re.sub(r"[^A-Za-z0-9._+-]+", "-", name).strip("-.") or "target"


def _function_ref(fn: Any) -> str:
    """``module:name`` for the records (``callable:target`` when the function has no usable name)."""
    import re

    name = str(getattr(fn, "__name__", "") or type(fn).__name__)
    module = str(getattr(fn, "__module__", "") or "callable")
    ref = f"{module}:{name}"
    return ref if re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*", ref) else "callable:target"


async def generate_outputs_async(target: Any, cases: Iterable[Case | dict[str, Any]], *,
                                 base_dir: str | Path = ".", concurrency: int = 8,
                                 use_cache: bool = True) -> list[tuple[Case, Generation]]:
    """Run ``target`` (see :func:`as_target`) on ``cases``: each case with the target's output filled in (``case.output``), and the
    :class:`Generation` (cost, latency, trajectory, error). A failed generation keeps the case unchanged and sets
    ``Generation.error``."""
    import asyncio

    from .._util._numbers import whole_number
    from ._run import merged_case

    whole_number(concurrency, "generate_outputs(concurrency=...)")
    t = as_target(target, base_dir=base_dir, use_cache=use_cache)
    t.start(concurrency)
    items = [c if isinstance(c, Case) else Case(id=str(c["id"]), data={**c, "id": str(c["id"])}) for c in cases]
    try:
        gens = await asyncio.gather(*(t.generate(c) for c in items))
    finally:
        await t.aclose()
        client = getattr(t, "client", None)
        if client is not None:
            await client.aclose()
    return [(merged_case(c, g) if g.error is None else c, g) for c, g in zip(items, gens, strict=True)]


def generate_outputs(target: Any, cases: Iterable[Case | dict[str, Any]], *,
                     base_dir: str | Path = ".", concurrency: int = 8,
                     use_cache: bool = True) -> list[tuple[Case, Generation]]:
    """:func:`generate_outputs_async` from synchronous code (also inside a running event loop, as in Jupyter)."""
    from ..runner._session import run_sync

    return run_sync(generate_outputs_async(target, cases, base_dir=base_dir, concurrency=concurrency,
                                              use_cache=use_cache))


__all__ = [
    "Generation", "HttpSpec", "ModelEntry", "PromptEntry", "Target", "TargetGate", "TargetSpec", "TargetsReporter",
    "TargetsRun", "ToolSpec", "as_spec", "as_target", "build_target", "generate_outputs", "generate_outputs_async",
    "load_target_file", "parse_targets", "render_comparison", "run_targets", "select",
]

# Running a target (its kinds, loader and run: HTTP clients, the tool loop, the row models) loads on first use, so
# that a suite without targets (a monitor's) reads its ``targets:`` models alone. Running targets side by side
# moved to referee.run (above this package); the old names stay importable from here for one release.
__getattr__ = forward(__name__, {**dict.fromkeys(("Generation", "Target"), "referee.targets._kinds"),
                                  **dict.fromkeys(("build_target", "load_target_file", "parse_targets", "select"),
                                                  "referee.targets._loader"),
                                  **dict.fromkeys(("TargetGate", "TargetsReporter", "TargetsRun", "run_targets"),
                                                  "referee.run._target_runs"),
                                  # the targets table's text: statistics imported when a comparison is shown
                                  "render_comparison": "referee.targets._compare"})
