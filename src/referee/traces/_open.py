"""Which sink a command writes to: the store, or memory when the store is turned off."""

from __future__ import annotations

from typing import Any

from ..errors import UserError
from ._sink import DEFAULT_MAX_SPANS_PER_TRACE, MemorySink


def open_sink(url: str | None = None, *, max_spans_per_trace: int = DEFAULT_MAX_SPANS_PER_TRACE,
              create: bool = True) -> Any:
    """The sink of ``referee collect`` / ``monitor``: the store at ``url``, else the store in force
    (``REFEREE_STORE``, else ``.referee/history.sqlite``); with the store turned off (``REFEREE_STORE=off``), a
    :class:`MemorySink` that keeps nothing past the process (and SQLAlchemy is never imported). ``create=False``
    (a command that only reads stored traces): no store there, or the store turned off, is a ``UserError``."""
    from ..store import current

    if url is None and not current().enabled:
        if not create:
            raise UserError("the run history is off (REFEREE_STORE=off), so no trace is stored: give --store URL "
                            "to read one")
        return MemorySink(max_spans_per_trace=max_spans_per_trace)
    from ..store import open_store
    from ._store_sink import StoreSink

    return StoreSink(open_store(url, create=create), max_spans_per_trace=max_spans_per_trace)
