"""``did you mean`` for a misspelt name: the closest known one, when it is close."""

from __future__ import annotations

from collections.abc import Iterable


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest known name (rapidfuzz WRatio >= 80), else ``""``."""
    from rapidfuzz import fuzz, process, utils

    best = process.extractOne(name, [k for k in known if k != name], scorer=fuzz.WRatio,
                              processor=utils.default_process, score_cutoff=80)
    return f" (did you mean '{best[0]}'?)" if best else ""
