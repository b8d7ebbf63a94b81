"""Names that moved to a higher package, kept importable from their old package face for one release.

The old face sits below the package the name now lives in, so it may not import it (the layer contract in
``.importlinter``); it resolves the name by its module path on first use instead.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any


def forward(face: str, moved: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``face`` that finds each name of ``moved`` in the module it names."""

    def __getattr__(name: str) -> Any:
        where = moved.get(name)
        if where is None:
            raise AttributeError(f"module {face!r} has no attribute {name!r}")
        return getattr(import_module(where), name)

    return __getattr__
