"""Which sink a command writes to: the store, or memory when the store is turned off."""

from __future__ import annotations

from typing import Any

from ._sink import DEFAULT_MAX_SPANS_PER_TRACE, MemorySink


def open_sink(url: str | None = None, *, max_spans_per_trace: int = DEFAULT_MAX_SPANS_PER_TRACE) -> Any:
    """The sink of ``referee collect`` / ``monitor``: the store at ``url``, else the store in force
    (``REFEREE_STORE``, else ``.referee/history.sqlite``); with the store turned off (``REFEREE_STORE=off``), a
    :class:`MemorySink` that keeps nothing past the process (and SQLAlchemy is never imported)."""
    from ..store import current

    if url is None and not current().enabled:
        return MemorySink(max_spans_per_trace=max_spans_per_trace)
    from ..store import open_store
    from ._store_sink import StoreSink

    return StoreSink(open_store(url), max_spans_per_trace=max_spans_per_trace)
