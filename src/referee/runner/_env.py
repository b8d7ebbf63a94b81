"""The documented number knobs in the environment, read through one parser: a value that is not a finite number
in the knob's range is a usage error naming the variable (``nan`` would spin a loop, ``inf`` wait forever, ``0``
poll a server as fast as it answers)."""

from __future__ import annotations

import math
import os

from ..errors import UserError

KNOBS: dict[str, tuple[float, float, float]] = {
    "REFEREE_RETRY_BASE_DELAY": (0.5, 0.0, 60.0),
    "REFEREE_BATCH_WINDOW_S": (0.5, 0.0, 600.0),
    "REFEREE_BATCH_POLL_S": (5.0, 0.05, 3600.0),
}
"""name -> (default, minimum, maximum), in seconds."""


def env_seconds(name: str) -> float:
    """The knob ``name`` from the environment (its default when unset or empty); UserError when it is not a finite
    number within the knob's range."""
    default, low, high = KNOBS[name]
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise UserError(f"{name}={raw!r}: expected a number of seconds from {low:g} to {high:g}") from None
    if not math.isfinite(value) or not low <= value <= high:
        raise UserError(f"{name}={raw}: expected a finite number of seconds from {low:g} to {high:g}")
    return value


def check_env() -> None:
    """Every knob parsed once, so a bad value stops a command before any call (not at the first retry)."""
    for name in KNOBS:
        env_seconds(name)
