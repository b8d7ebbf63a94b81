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


@pytest.mark.parametrize("word", ["off", "OFF", "false", "0", "no", "none"])
def test_the_off_word_where_a_store_is_named_records_nowhere(word: str, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    # `--store off` (and store="off" in Python) recorded every run into a SQLite file named "off" where it ran.
    import referee
    from tests.support.cli import run_cli

    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError, match=f"--store '{word}' names no store: to record nothing give --no-store"):
        normalise_url(word)
    with pytest.raises(UserError, match="store=False in Python"):
        referee.evaluate([{"id": "a", "output": "x"}], ["is_json"], store=word, progress=False)
    code, _, err = run_cli(["runs", "list", "--store", word], capsys)
    assert code == 2 and "names no store" in err
    assert normalise_url(f"./{word}") == f"sqlite:///{tmp_path / word}"  # a file of that name, said so
    assert list(tmp_path.iterdir()) == []


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


@pytest.mark.parametrize("url", ["sqlite:///", "sqlite://", "sqlite:///?mode=ro"])
def test_a_sqlite_url_naming_no_file_is_refused(url: str) -> None:
    # It was a database in memory: `referee run` "recorded" into it and `runs import` said "1 run added", then lost
    # them (REFEREE_STORE=sqlite:///$HISTORY with the variable unset).
    with pytest.raises(UserError, match="names no file"):
        normalise_url(url)
    assert normalise_url("sqlite:///:memory:") == "sqlite:///:memory:"  # asked for by name, it is one


@pytest.mark.parametrize("url", ["postgresql://alice:s3cret@db:notaport/evals",
                                 "postgresql://alice:s3cret@db:99999/evals", "postgresql://alice:s3cret@[::1/evals"])
def test_a_malformed_host_or_port_is_a_usage_error_without_the_password(url: str) -> None:
    # Reading the port raised ValueError: a traceback from `runs list`, and from the recording thread of a run.
    with pytest.raises(UserError, match="not a valid URL") as ei:
        normalise_url(url)
    assert "s3cret" not in str(ei.value) and "alice" not in str(ei.value)
    assert "s3cret" not in display_url(url) and "s3cret" not in scrub(f"{url} refused", url)


@pytest.mark.parametrize("name", ["REFEREE_STORE_TIMEOUT", "REFEREE_STORE_CONNECT_TIMEOUT"])
def test_a_timeout_from_the_environment_is_a_finite_number_of_seconds(name: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from referee.store import StoreError
    from referee.store._settings import connect_timeout_s, lock_timeout_s

    read = lock_timeout_s if name == "REFEREE_STORE_TIMEOUT" else connect_timeout_s
    monkeypatch.setenv(name, "0.5")
    assert read() == 0.5
    for bad in ("nan", "inf", "1e300", "0", "-1", "86400"):
        monkeypatch.setenv(name, bad)
        with pytest.raises(StoreError, match="must be a number of seconds above 0 and under 86400"):
            read()
    monkeypatch.setenv(name, "soon")
    with pytest.raises(StoreError, match="is not a number of seconds"):
        read()
