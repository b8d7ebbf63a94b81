"""Loading rubric files (shipped by name, or the user's own path) with errors naming file, line and field."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from .._util._yaml import parse_nodes
from ..errors import InputError
from ._model import SCALES, Rubric

SHIPPED = Path(__file__).parent / "files"
# Fields only a rubric has: a file with any of them is a rubric whatever command reads it.
_RUBRIC_ONLY = ("composite", "bands", "scale", "fail_below", "weights_sum_to_one", "actions_from",
                "evidence_required")


@dataclass(frozen=True)
class RubricInfo:
    """One line of ``referee rubrics``: a rubric's name, kind, criteria count, description and file."""

    name: str
    kind: str
    criteria: int
    description: str
    path: str


def _node_line(node: Any, loc: tuple[Any, ...]) -> int | None:
    """The 1-based line of the YAML node at ``loc`` (the deepest one found)."""
    line = None
    for part in loc:
        if node is None:
            break
        line = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            node = next((v for k, v in node.value if getattr(k, "value", None) == part), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            node = node.value[part] if part < len(node.value) else None
        else:
            break
    if node is not None:
        line = node.start_mark.line + 1
    return line


def _field_name(loc: tuple[Any, ...]) -> str | None:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif str(part).startswith(("function-", "__")):  # pydantic validator frames, not fields
            continue
        else:
            out += ("." if out else "") + str(part)
    return out or None


def parse_rubric(text: str, source: str, *, kind: str | None = None) -> Rubric:
    """Validate rubric YAML text; ``source`` names the file in errors. ``kind`` (``gold``) is how a file
    that does not say what it is gets read (``referee gold`` reads any file it is given as criteria)."""
    node, data = parse_nodes(text, source)
    if not isinstance(data, dict):
        raise InputError("expected a mapping with a 'criteria' list", file=source)
    if "criteria" not in data or data["criteria"] is None:
        raise InputError("missing: the rubric has no criteria", file=source, field="criteria")
    if kind is not None and "kind" not in data and not any(k in data for k in _RUBRIC_ONLY):
        data["kind"] = kind
    if not data.get("name") and not data.get("skill"):
        data["name"] = Path(source).stem
    crit = data["criteria"]
    if isinstance(crit, list):
        seen: dict[str, int] = {}
        for i, c in enumerate(crit):
            cid = c.get("id") if isinstance(c, dict) else None
            if isinstance(cid, str) and cid in seen:
                raise InputError(f"duplicate criterion id '{cid}' (also criteria[{seen[cid]}])", file=source,
                                 line=_node_line(node, ("criteria", i, "id")), field=f"criteria[{i}].id")
            if isinstance(cid, str):
                seen[cid] = i
    try:
        rubric = Rubric.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(err.get("loc", ()))
        msg = str(err.get("msg", exc)).removeprefix("Value error, ")
        fld = _field_name(loc)
        if fld is None and ("weight" in msg or "criteria without" in msg):
            fld, loc = "criteria[].weight", ("criteria",)
        elif fld is None and "actions_from" in msg:
            fld, loc = "actions_from", ("actions_from",)
        elif fld is None and "band" in msg:
            fld, loc = "bands", ("bands",)
        line = _node_line(node, loc) if loc else None
        if err.get("type") == "literal_error" and loc and loc[-1] == "scale":
            msg = f"unknown scale {err.get('input')!r}; use one of binary, 0-1, 0-2, 1-5"
        raise InputError(msg, file=source, line=line, field=fld) from exc
    for i, c in enumerate(rubric.criteria):
        lo, hi, _ = SCALES[rubric.criterion_scale(c)]
        if c.pass_at is not None and not lo <= c.pass_at <= hi:
            raise InputError(f"pass_at {c.pass_at:g} is outside the criterion's {rubric.criterion_scale(c)} scale",
                             file=source, line=_node_line(node, ("criteria", i, "pass_at")),
                             field=f"criteria[{i}].pass_at")
    return rubric


def load_rubric(name_or_path: str | Path, *, kind: str | None = None) -> Rubric:
    """A shipped rubric by name (``agent-evaluation``) or a YAML file by path (``kind``: see parse_rubric)."""
    p = Path(name_or_path)
    if not p.exists():
        shipped = SHIPPED / f"{name_or_path}.yaml"
        if shipped.exists():
            p = shipped
        else:
            names = ", ".join(r.name for r in list_rubrics())
            raise InputError(f"no such file, and not a shipped rubric (shipped: {names})", file=str(name_or_path))
    if p.is_dir():
        raise InputError("is a directory, expected a rubric YAML file", file=str(p))
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError("not valid UTF-8", file=str(p)) from exc
    return parse_rubric(text, str(p), kind=kind)


def rubric_source(name_or_path: str | Path) -> str:
    """The YAML text of a shipped rubric (by name) or of a rubric file, validated first (an unknown name
    raises :class:`InputError` listing the shipped ones): to copy when writing one's own."""
    load_rubric(name_or_path)
    shipped = SHIPPED / f"{name_or_path}.yaml"
    path = shipped if shipped.parent == SHIPPED and shipped.exists() else Path(name_or_path)
    return path.read_text(encoding="utf-8")


def list_rubrics() -> list[RubricInfo]:
    """The rubrics and criteria files shipped with referee."""
    out = []
    for f in sorted(SHIPPED.glob("*.yaml")):
        r = parse_rubric(f.read_text(encoding="utf-8"), str(f))
        desc = (r.description or "").strip().splitlines()
        out.append(RubricInfo(name=f.stem, kind=r.kind, criteria=len(r.criteria),
                              description=desc[0] if desc else "", path=str(f)))
    return out


def rubric_hash(rubric: Rubric) -> str:
    """The identity of a rubric's content (recorded in manifests; a changed rubric is never resumed)."""
    from ..results._manifest import text_sha256

    return text_sha256(rubric.model_dump_json())


def read_text_file(path: str, what: str) -> str:
    """A text file the user named (an output, a context, a document): errors say which and why."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"{what} not found", file=path)
    if p.is_dir():
        raise InputError(f"{what} is a directory, expected a file", file=path)
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} is not valid UTF-8", file=path) from exc
