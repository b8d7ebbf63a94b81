"""``did you mean`` for a misspelt name: the closest known one, when it is close."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from ..errors import UserError


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest known name (rapidfuzz WRatio >= 80), else ``""``."""
    from rapidfuzz import fuzz, process, utils

    best = process.extractOne(name, [k for k in known if k != name], scorer=fuzz.WRatio,
                              processor=utils.default_process, score_cutoff=80)
    return f" (did you mean '{best[0]}'?)" if best else ""


def refuse_unknown(part: Mapping[str, Any], known: Collection[str], where: str, *, noun: str = "key") -> None:
    """A ``UserError`` at the first key of ``part`` (in the file's order) that is not ``known``, with the name it
    is closest to and any other unknown keys. ``known`` is listed sorted when it is a set, else in its order."""
    unknown = [str(k) for k in part if k not in known]
    if unknown:
        first, rest = unknown[0], unknown[1:]
        also = f"; also unknown: {', '.join(rest)}" if rest else ""
        listed = sorted(known) if isinstance(known, set | frozenset) else list(known)
        raise UserError(f"{where}.{first}: unknown {noun}{did_you_mean(first, known)}{also} "
                        f"(known: {', '.join(listed)})")
