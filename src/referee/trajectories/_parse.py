"""Helpers shared by the trajectory importers: tool arguments given as JSON strings, error results, numbers,
message roles."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from .._util import _data
from ._model import TrajectoryError

_N = TypeVar("_N", int, float)


# -- shared helpers -------------------------------------------------------------------------------------

def parse_args(raw: Any, *, case_id: str | None, at: int | str) -> Any:
    """Arguments as a JSON object: objects as they are, JSON text parsed; anything else is an error."""
    if raw is None or raw == "":
        return {}
    value = raw
    if isinstance(raw, str):
        try:
            value = _data.loads(raw)
        except _data.UnsafeData as exc:
            raise TrajectoryError(f"arguments refused: {exc}", case_id=case_id, step=at) from None
        except json.JSONDecodeError as exc:
            shown = raw if len(raw) <= 60 else raw[:60] + "..."
            raise TrajectoryError(f"arguments are not JSON ({exc.msg} at column {exc.colno}): {shown!r}",
                                  case_id=case_id, step=at) from exc
    if not isinstance(value, dict):
        raise TrajectoryError(f"arguments must be a JSON object, got {type(value).__name__}",
                              case_id=case_id, step=at)
    return value


def _maybe_json(value: Any) -> Any:
    if isinstance(value, str):
        s = value.strip()
        if s[:1] in ("{", "["):
            try:
                return _data.loads(s)
            except ValueError:  # not JSON, or refused (too deep, huge numbers): kept as the text it is
                return value
    return value


def result_error(result: Any) -> str | None:
    """The error carried by a tool result object (``{"error": ...}``), if any."""
    if isinstance(result, dict) and result.get("error") not in (None, "", False):
        err = result["error"]
        if isinstance(err, dict):
            return str(err.get("message") or json.dumps(err, sort_keys=True))
        return str(err)
    return None


def _number_or_none(v: Any, kind: type[_N]) -> _N | None:
    # Recorders write counts and costs as numbers or numeric text; anything else is "not recorded".
    if v is None or isinstance(v, bool):
        return None
    try:
        return kind(v)
    except (TypeError, ValueError):
        return None


def int_or_none(v: Any) -> int | None:
    """``int(v)``; None when absent, a boolean, or not a number."""
    return _number_or_none(v, int)


def float_or_none(v: Any) -> float | None:
    """``float(v)``; None when absent, a boolean, or not a number."""
    return _number_or_none(v, float)


def _role(msg: Any, roles: set[str], *, case_id: str | None, at: str) -> str:
    """The role of a chat message, which must be an object with one of ``roles``."""
    if not isinstance(msg, dict):
        raise TrajectoryError("a message must be an object", case_id=case_id, step=at)
    role = msg.get("role")
    if not isinstance(role, str) or role not in roles:  # a list or dict role would not even hash
        raise TrajectoryError(f"unknown role {role!r} (expected one of {', '.join(sorted(roles))})",
                              case_id=case_id, step=at)
    return role
