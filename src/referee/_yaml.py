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


def read_text(path: str) -> str:
    """A YAML file's text; bytes that are not UTF-8 are an InputError naming the line."""
    raw = open(path, "rb").read()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(f"not valid UTF-8 (byte 0x{raw[exc.start]:02x}); re-save the file as UTF-8",
                         file=path, line=line) from None


def load(path: str) -> Any:
    """The data of a YAML file, with file-and-line errors for bad bytes and bad YAML."""
    return parse(read_text(path), path)
