"""Responders for :class:`FakeLLMServer` that answer any structured-output request with a valid reply.

``schema_responder`` reads the response schema the client sent (OpenAI ``json_schema``, Anthropic tool
``input_schema`` or Gemini ``responseSchema``) and builds a deterministic instance of it: scores vary with the
prompt (a hash), enums take one of their values, string arrays quote a few words of the prompt. Useful to run
every model-graded path end to end without a model.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from ._server import WireRequest, default_responder


def _h(text: str, salt: str) -> int:
    return int(hashlib.sha256((salt + "\x00" + text).encode()).hexdigest()[:12], 16)


def _type(schema: dict[str, Any]) -> str:
    t = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "string")
    return str(t).lower()


def instance_for_schema(schema: dict[str, Any], prompt: str, path: str = "") -> Any:
    """A deterministic value valid for ``schema`` (the subset judges use)."""
    if "enum" in schema and schema["enum"]:
        options = schema["enum"]
        return options[_h(prompt, path) % len(options)]
    if "const" in schema:
        return schema["const"]
    t = _type(schema)
    if t == "object":
        props: dict[str, Any] = schema.get("properties") or {}
        out = {k: instance_for_schema(v, prompt, f"{path}.{k}") for k, v in props.items()}
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and extra:
            out["quality"] = instance_for_schema(extra, prompt, f"{path}.quality")
        return out
    if t == "array":
        items = schema.get("items") or {"type": "string"}
        n = max(1, int(schema.get("minItems", 1)))
        return [instance_for_schema(items, prompt, f"{path}[{i}]") for i in range(n)]
    if t == "integer":
        lo = int(schema.get("minimum", 0))
        hi = int(schema.get("maximum", lo + 4))
        return lo + _h(prompt, path) % (hi - lo + 1)
    if t == "number":
        flo = float(schema.get("minimum", 0.0))
        fhi = float(schema.get("maximum", 1.0))
        return round(flo + (fhi - flo) * ((_h(prompt, path) % 101) / 100), 2)
    if t == "boolean":
        return bool(_h(prompt, path) % 2)
    if any(w in path.lower() for w in ("quote", "evidence")):
        # Evidence is quoted from the judged text (the delimited output block) as a real judge must: rubrics
        # treat a quote that is not in it as ungrounded.
        words = re.findall(r"\S+", _judged_text(prompt))
        if len(words) > 6:
            start = _h(prompt, path) % (len(words) - 6)
            return " ".join(words[start : start + 6])
        if words:
            return " ".join(words)
    return f"generated {path.strip('.') or 'text'}"


_BLOCK = re.compile(r"<([A-Za-z][\w-]*)>\n(.*?)\n</\1>", re.DOTALL)
_JUDGED = ("output", "generated", "answer", "response", "final")


def _judged_text(prompt: str) -> str:
    """The text under evaluation in a judge prompt: its output block when it has one, else the whole prompt."""
    blocks = [(name.lower(), body) for name, body in _BLOCK.findall(prompt) if body.strip()]
    for name, body in blocks:
        if name.startswith(_JUDGED):
            return str(body)
    return str(blocks[-1][1]) if blocks else prompt


def schema_responder(req: WireRequest) -> str:
    """Answer with an instance of the request's response schema (or a template verdict when it has none)."""
    schema = req.schema
    if not schema:
        return default_responder(req)
    return json.dumps(instance_for_schema(schema, req.last_user_text))
