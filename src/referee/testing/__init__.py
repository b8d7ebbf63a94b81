"""Test helpers shipped with referee: the fake provider and a local server speaking the real wire formats.

``python -m referee.testing --latency 0.2`` runs the fake server standalone (``bench/`` uses it);
``python -m referee.testing --standin`` serves the stand-in judge and model (to try referee without a key;
``--provider standin`` is the same without a server). The server
module is imported lazily so that this entry point does not import it twice (runpy's RuntimeWarning).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..providers._fake import FakeProvider
from ._compare import rows_without_timings

if TYPE_CHECKING:
    from ._responders import instance_for_schema, schema_responder
    from ._server import BatchPlan, FakeLLMServer, Reply, WireRequest, default_responder
    from ._standin import standin_judge, standin_responder

_SERVER_NAMES = ("BatchPlan", "FakeLLMServer", "Reply", "WireRequest", "default_responder")
_RESPONDER_NAMES = ("instance_for_schema", "schema_responder")
_STANDIN_NAMES = ("standin_judge", "standin_responder")


def __getattr__(name: str) -> Any:
    if name in _SERVER_NAMES:
        from . import _server as server

        return getattr(server, name)
    if name in _RESPONDER_NAMES:
        from . import _responders as responders

        return getattr(responders, name)
    if name in _STANDIN_NAMES:
        from . import _standin as standin

        return getattr(standin, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BatchPlan",
    "FakeLLMServer",
    "FakeProvider",
    "Reply",
    "WireRequest",
    "default_responder",
    "instance_for_schema",
    "rows_without_timings",
    "schema_responder",
    "standin_judge",
    "standin_responder",
]
