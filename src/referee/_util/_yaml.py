"""YAML reading shared by cases, rubrics, suites, red-team data and option files.

Malformed YAML becomes one :class:`InputError` naming the file and line, the same everywhere. ``parse_nodes`` also
returns the node tree, whose marks give line numbers for field-level errors.
"""

from __future__ import annotations

from typing import Any

import yaml

from ..errors import InputError
from ._data import MAX_DEPTH, MAX_YAML_NODES, UnsafeData, check_data


def yaml_error(exc: yaml.YAMLError, source: str) -> InputError:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return InputError(f"malformed YAML ({problem})", file=source, line=(mark.line + 1) if mark is not None else None)


def _expanded_size(root: yaml.Node) -> int:
    """How many values the node tree stands for once every alias is expanded (memoised per node, so a
    "billion laughs" is measured without being built), capped just past :data:`MAX_YAML_NODES`; a
    recursive alias counts as too many."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if id(node) in sizes:
            continue
        children: list[yaml.Node] = []
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        if done or not children:
            open_nodes.discard(id(node))
            sizes[id(node)] = min(1 + sum(sizes.get(id(c), 1) for c in children), MAX_YAML_NODES + 1)
            continue
        if any(id(c) in open_nodes for c in children):
            return MAX_YAML_NODES + 1  # an alias inside itself: infinite once expanded
        open_nodes.add(id(node))
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in sizes)
    return sizes[id(root)]


def _depth(root: yaml.Node) -> int:
    deepest = 0
    stack: list[tuple[yaml.Node, int]] = [(root, 1)]
    seen: set[int] = set()
    while stack:
        node, d = stack.pop()
        deepest = max(deepest, d)
        if deepest > MAX_DEPTH or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend((c, d + 1) for c in node.value)
        elif isinstance(node, yaml.MappingNode):
            stack.extend((n, d + 1) for pair in node.value for n in pair)
    return deepest


def _load(text: str, source: str) -> tuple[yaml.Node | None, Any]:
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, None
        if _depth(node) > MAX_DEPTH:
            raise UnsafeData(f"nested deeper than {MAX_DEPTH} levels")
        if _expanded_size(node) > MAX_YAML_NODES:
            raise UnsafeData(f"its aliases expand to more than {MAX_YAML_NODES:,} values (a YAML alias bomb?)")
        return node, check_data(loader.construct_document(node))
    except yaml.YAMLError as exc:
        raise yaml_error(exc, source) from None
    except RecursionError:
        raise InputError(f"YAML nested deeper than {MAX_DEPTH} levels", file=source) from None
    except UnsafeData as exc:
        raise InputError(f"refused YAML: {exc}", file=source) from None
    finally:
        loader.dispose()


def parse(text: str, source: str) -> Any:
    """The data of YAML ``text``; ``source`` names the file in errors. Alias bombs, deep nesting and lone
    surrogates are refused (see :mod:`referee._util._data`)."""
    return _load(text, source)[1]


def parse_nodes(text: str, source: str) -> tuple[yaml.Node | None, Any]:
    """(node tree, data) of YAML ``text``, for errors that point at a field's line."""
    return _load(text, source)


def line_map(node: yaml.Node | None, path: tuple[str | int, ...] = (),
             out: dict[tuple[str | int, ...], int] | None = None) -> dict[tuple[str | int, ...], int]:
    """Line (1-based) of every mapping key and sequence item of a composed document, by its path of keys and
    indexes (``("monitor", "sampling", "rate")``): where a field-level error points. A repeated key has its last
    line, as its value is the last one. (Nesting is bounded by the loader: ``MAX_DEPTH``.)"""
    out = {} if out is None else out
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            out[(*path, k.value)] = k.start_mark.line + 1
            line_map(v, (*path, k.value), out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            out[(*path, i)] = item.start_mark.line + 1
            line_map(item, (*path, i), out)
    return out


def read_text(path: str) -> str:
    """A YAML file's text; bytes that are not UTF-8 are an InputError naming the line."""
    with open(path, "rb") as f:
        raw = f.read()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(f"not valid UTF-8 (byte 0x{raw[exc.start]:02x}); re-save the file as UTF-8",
                         file=path, line=line) from None


def load(path: str) -> Any:
    """The data of a YAML file, with file-and-line errors for bad bytes and bad YAML."""
    return parse(read_text(path), path)
