"""The JSON Schema of suite files, published with the package as ``suite.schema.json`` for editors.

Generated from :class:`~referee.suites._model.SuiteFile` plus the options of every built-in check and of the
``rubric``, ``pairwise`` and ``gold`` judges and the ``tool_calls`` matcher, so an editor validates ``regex: {pattern: ...}`` entries too. Names
it does not know (trajectory checks, plugins, dotted paths) are accepted with any options; ``referee validate``
checks those.
Regenerate with ``python -m referee.suites.schema`` (a test fails when the file is stale).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ._model import EntryMeta, SuiteFile

SCHEMA_PATH = Path(__file__).with_name("suite.schema.json")
SCHEMA_ID = "https://referee.dev/schemas/suite.schema.json"


def _entry_schemas() -> list[dict[str, Any]]:
    from ..evaluators import ToolCalls
    from ..evaluators._base import Evaluator
    from ..evaluators.checks import BUILTIN_CHECKS
    from ..judges import Gold, Pairwise, Rubric

    checks: list[type[Evaluator]] = [*BUILTIN_CHECKS, Rubric, Pairwise, Gold, ToolCalls]
    from ..evaluators._options import options_json_schema, options_model

    meta = EntryMeta.model_json_schema()["properties"]
    out: list[dict[str, Any]] = []
    names = sorted(c.name for c in checks)
    out.append({"type": "string", "description": "An evaluator by name, with its default options."})
    for cls in sorted(checks, key=lambda c: c.name):
        opts = options_json_schema(cls)
        variants: list[dict[str, Any]] = [opts, {"type": "null"}]
        primary = getattr(cls, "primary", None)
        model = options_model(cls)
        if primary and model is not None:
            prim = opts.get("properties", {}).get(primary)
            if prim:
                variants.append({k: v for k, v in prim.items() if k not in ("default", "title")})
        out.append({
            "type": "object", "description": (cls.__doc__ or "").strip().splitlines()[0],
            "properties": {cls.name: {"anyOf": variants}, **meta},
            "required": [cls.name], "additionalProperties": False,
        })
    out.append({
        "type": "object", "description": "A trajectory check, a plugin (entry point or module:attr) with options.",
        "minProperties": 1, "not": {"anyOf": [{"required": [n]} for n in names]},
    })
    return out


def suite_json_schema() -> dict[str, Any]:
    schema = SuiteFile.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = SCHEMA_ID
    schema["properties"]["evaluators"]["items"] = {"anyOf": _entry_schemas()}
    return schema


def render() -> str:
    return json.dumps(suite_json_schema(), indent=2, sort_keys=True) + "\n"


def main() -> None:
    SCHEMA_PATH.write_text(render(), encoding="utf-8")
    print(f"wrote {SCHEMA_PATH}")


if __name__ == "__main__":
    main()
