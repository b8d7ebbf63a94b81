"""A package face's names resolved by module path on first use.

Two uses: names that moved to a higher package stay importable from their old face for one release (the old
face sits below, so the layer contract in ``.importlinter`` forbids importing it), and a face that should not
load its heavy modules until a name is asked for (``referee.run``).
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
