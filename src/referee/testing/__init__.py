"""Test helpers shipped with referee: the fake provider and a local server speaking the real wire formats."""

from ..providers.fake import FakeProvider
from .server import FakeLLMServer, Reply, WireRequest, default_responder

__all__ = ["FakeLLMServer", "FakeProvider", "Reply", "WireRequest", "default_responder"]
