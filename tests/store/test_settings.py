"""Choosing the store: flags, REFEREE_STORE, the default file; passwords never shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.errors import UserError
from referee.store import current, display_url, normalise_url, recording
from referee.store._settings import scrub


def test_off_by_env_and_by_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFEREE_STORE", "off")
    assert not current().enabled
    monkeypatch.setenv("REFEREE_STORE", "sqlite:///x.sqlite")
    assert current().enabled and current().url == "sqlite:///x.sqlite"
    with recording(enabled=False):
        assert not current().enabled
    with recording("postgres://u:p@h/db", tags=["a", "a", "b"]):
        s = current()
        assert s.url == "postgresql://u:p@h/db" and s.tags == ("a", "b")


def test_default_is_the_file_in_referees_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("REFEREE_STORE")
    monkeypatch.chdir(tmp_path)
    assert current().resolved_url().endswith("/.referee/history.sqlite")


def test_a_plain_path_is_a_sqlite_file(tmp_path: Path) -> None:
    assert normalise_url(str(tmp_path / "h.db")) == f"sqlite:///{(tmp_path / 'h.db').resolve()}"


@pytest.mark.parametrize("bad", ["", "   ", "mysql://u@h/db", "http://h/x"])
def test_unsupported_urls_are_refused(bad: str) -> None:
    with pytest.raises(UserError):
        normalise_url(bad)


@pytest.mark.parametrize("tag", ["", " ", "x" * 201])
def test_bad_tags_are_refused(tag: str) -> None:
    with pytest.raises(UserError), recording(tags=[tag]):
        pass


def test_the_password_never_shows() -> None:
    url = "postgresql://alice:s3cr%40t-pw@db.example:5433/evals"
    shown = display_url(url)
    assert "s3cr" not in shown and "alice" not in shown and "db.example:5433" in shown
    msg = scrub(f'connection to {url} failed: password "s3cr%40t-pw" rejected', url)
    assert "s3cr" not in msg
