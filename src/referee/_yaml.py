"""YAML reading shared by cases, rubrics, suites, red-team data and option files.

Malformed YAML becomes one :class:`InputError` naming the file and line, the same everywhere. ``parse_nodes`` also
returns the node tree, whose marks give line numbers for field-level errors.
"""

from __future__ import annotations

from typing import Any

import yaml

from .errors import InputError


def yaml_error(exc: yaml.YAMLError, source: str) -> InputError:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return InputError(f"malformed YAML ({problem})", file=source, line=(mark.line + 1) if mark is not None else None)


def parse(text: str, source: str) -> Any:
    """The data of YAML ``text``; ``source`` names the file in errors."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise yaml_error(exc, source) from None


def parse_nodes(text: str, source: str) -> tuple[yaml.Node | None, Any]:
    """(node tree, data) of YAML ``text``, for errors that point at a field's line."""
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader), yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise yaml_error(exc, source) from None
