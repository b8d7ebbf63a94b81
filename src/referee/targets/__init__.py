"""Targets: the prompt, model or agent under test, run by referee before the evaluators.

``targets:`` in a suite (or a targets file) names each system under test: a model with a prompt template (and
tools: the tool loop), an HTTP service, a Python callable or a command. ``generate_outputs`` runs one on cases
from Python; ``referee run suite.yaml`` runs them all, evaluates, and compares them.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..cases import Case
from ._kinds import Generation, Target
from ._run import merged_case
from .loader import build_target, load_target_file, parse_targets, select
from .model import HttpSpec, ModelEntry, PromptEntry, TargetSpec, ToolSpec


def as_spec(target: TargetSpec | dict[str, Any]) -> TargetSpec:
    return target if isinstance(target, TargetSpec) else TargetSpec.model_validate(target)


async def generate_outputs_async(target: TargetSpec | dict[str, Any], cases: Iterable[Case | dict[str, Any]], *,
                                 base_dir: str | Path = ".", concurrency: int = 8,
                                 use_cache: bool = True) -> list[tuple[Case, Generation]]:
    """Run ``target`` on ``cases``: each case with the target's output filled in (``case.output``), and the
    :class:`Generation` (cost, latency, trajectory, error). A failed generation keeps the case unchanged and sets
    ``Generation.error``."""
    import asyncio

    spec = as_spec(target)
    base = Path(base_dir).resolve()
    t = build_target(spec, base, use_cache=use_cache)
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


def generate_outputs(target: TargetSpec | dict[str, Any], cases: Iterable[Case | dict[str, Any]], *,
                     base_dir: str | Path = ".", concurrency: int = 8,
                     use_cache: bool = True) -> list[tuple[Case, Generation]]:
    """:func:`generate_outputs_async` from synchronous code."""
    import asyncio

    return asyncio.run(generate_outputs_async(target, cases, base_dir=base_dir, concurrency=concurrency,
                                              use_cache=use_cache))


__all__ = [
    "Generation", "HttpSpec", "ModelEntry", "PromptEntry", "Target", "TargetSpec", "ToolSpec", "as_spec",
    "build_target", "generate_outputs", "generate_outputs_async", "load_target_file", "parse_targets", "select",
]
