"""Shared fixtures: an isolated environment per test, the local fake LLM server, and the shared data folder."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from referee.testing import FakeLLMServer

# pytester drives the tests of referee's own pytest plugin (tests/testing); the targets' fixtures (a user module,
# a local HTTP service) and the store's (SQLite and a PostgreSQL server, `store_url`) serve tests in several
# folders. Plugins must be named at the top level.
pytest_plugins = ["pytester", "tests.support.targets", "tests.support.postgres"]

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("REFEREE_SHARED_DATA", REPO.parent / "shared" / "data"))

_KEY_VARS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "REFEREE_PROVIDER",
             "REFEREE_MODEL", "REFEREE_BASE_URL", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "GEMINI_BASE_URL")


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No real keys or endpoints leak into tests; each test gets its own cache; retries back off fast."""
    for var in _KEY_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("REFEREE_DEBUG", raising=False)
    monkeypatch.setenv("REFEREE_CACHE_DIR", str(tmp_path / ".referee"))
    monkeypatch.setenv("REFEREE_RETRY_BASE_DELAY", "0.01")
    # The run history is off for tests that do not test it (tests/store turn it on, into a store of their own):
    # the suite neither slows down nor writes into the clone's .referee/.
    monkeypatch.setenv("REFEREE_STORE", "off")


@pytest.fixture(scope="session")
def _shared_fake_server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


@pytest.fixture
def fake_server(_shared_fake_server: FakeLLMServer) -> FakeLLMServer:
    """A server on 127.0.0.1 speaking the OpenAI, Anthropic and Gemini wire formats: one for the whole session,
    reset to a fresh server's state for each test (a test that needs a private one starts its own)."""
    _shared_fake_server.reset()
    return _shared_fake_server


@pytest.fixture
def shared_data() -> Path:
    """``../shared/data`` beside the clone (CI has it); tests that need it skip with the reason otherwise."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared evaluation data not found at {SHARED_DATA} (set REFEREE_SHARED_DATA or place "
                    "the shared/ folder beside the clone)")
    return SHARED_DATA
