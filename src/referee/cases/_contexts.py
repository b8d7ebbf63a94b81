"""Retrieved contexts of a case (``contexts``): the chunks a RAG answer was built from, in retrieval order.

A case's ``contexts`` is a list whose items are strings (their ids are ``ctx1``, ``ctx2``, ... by rank) or records
``{id, text}`` / ``{id, text, source}`` (``id`` optional: the rank's id). :func:`check_contexts` validates the field
when a case is loaded (errors name file, line and ``contexts[i].field``); :func:`chunks_of` gives the chunks typed.
An empty or whitespace-only chunk is kept in its rank (it was retrieved) and never supports anything. A chunk may
be an image part (``{"type": "image", ...}``, checked as every image is): it keeps its rank and is shown and sent
to judges that take images, but it has no text, so no quote can come from it and it supports no text claim.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import InputError

CONTEXTS_FIELD = "contexts"
MAX_CHUNKS = 10_000
"""More chunks than this in one case are refused (no retriever returns that many for one question)."""


@dataclass(frozen=True)
class Chunk:
    """One retrieved chunk: its id (unique in the case), its text and where it came from (optional)."""

    id: str
    text: str
    rank: int
    """1-based retrieval rank."""
    source: str | None = None
    image: dict[str, Any] | None = None
    """The image part, for a chunk that is an image (its ``text`` is empty)."""

    @property
    def empty(self) -> bool:
        return not self.text.strip()


def default_id(rank: int) -> str:
    return f"ctx{rank}"


def check_contexts(value: Any, path: str, line: int | None) -> None:
    """Raise :class:`InputError` naming file, line and field when ``value`` is not a valid ``contexts`` list."""
    if value is None:
        return
    if not isinstance(value, list):
        raise InputError(f"must be a list of strings or {{id, text}} records, got {type(value).__name__}",
                         file=path, line=line, field=CONTEXTS_FIELD)
    if len(value) > MAX_CHUNKS:
        raise InputError(f"{len(value):,} chunks; at most {MAX_CHUNKS:,}", file=path, line=line, field=CONTEXTS_FIELD)
    seen: dict[str, int] = {}
    for i, item in enumerate(value):
        where = f"{CONTEXTS_FIELD}[{i}]"
        if isinstance(item, str) or (isinstance(item, dict) and item.get("type") == "image"):
            cid = default_id(i + 1)  # an image part is checked with every image of the case
        elif isinstance(item, dict):
            unknown = sorted(set(item) - {"id", "text", "source"})
            if unknown:
                raise InputError(f"unknown key(s) {', '.join(unknown)} (a chunk is {{id, text, source}})", file=path,
                                 line=line, field=f"{where}.{unknown[0]}")
            if not isinstance(item.get("text"), str):
                raise InputError("must be a string (the chunk's text)", file=path, line=line, field=f"{where}.text")
            raw = item.get("id")
            if raw is None or raw == "":
                cid = default_id(i + 1)
            elif isinstance(raw, bool) or not isinstance(raw, str | int):
                raise InputError("must be a string or integer", file=path, line=line, field=f"{where}.id")
            else:
                cid = str(raw)
            src = item.get("source")
            if src is not None and not isinstance(src, str):
                raise InputError("must be a string", file=path, line=line, field=f"{where}.source")
        else:
            raise InputError(f"must be a string or an {{id, text}} record, got {type(item).__name__}", file=path,
                             line=line, field=where)
        if cid in seen:
            raise InputError(f"duplicate chunk id '{cid}' (first at {CONTEXTS_FIELD}[{seen[cid]}])", file=path,
                             line=line, field=f"{where}.id")
        seen[cid] = i


def chunks_of(value: Any) -> list[Chunk]:
    """The chunks of a (validated) ``contexts`` value in retrieval order; ``[]`` when there are none."""
    if not isinstance(value, list):
        return []
    out: list[Chunk] = []
    for i, item in enumerate(value):
        if isinstance(item, str):
            out.append(Chunk(default_id(i + 1), item, i + 1))
        elif isinstance(item, dict) and item.get("type") == "image":
            out.append(Chunk(default_id(i + 1), "", i + 1, image=item))
        elif isinstance(item, dict):
            raw = item.get("id")
            cid = default_id(i + 1) if raw is None or raw == "" else str(raw)
            src = item.get("source")
            out.append(Chunk(cid, str(item.get("text") or ""), i + 1, src if isinstance(src, str) else None))
    return out
