"""referee's folder: `.referee/` at the git top level, else the working folder, never above the repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from referee._util._home import ensure_dir, referee_dir, repo_top
from referee.runner import default_cache_path


def _git_init(path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(path)], check=True)


def test_inside_a_repository_the_folder_is_at_its_top_level(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _git_init(tmp_path / "repo")
    deep = tmp_path / "repo" / "a" / "b"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    assert repo_top() == (tmp_path / "repo").resolve()
    assert referee_dir() == (tmp_path / "repo" / ".referee").resolve()


def test_never_above_the_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # An outer repository holding an inner one: the inner one's top level wins, nothing is placed above it.
    _git_init(tmp_path / "outer")
    _git_init(tmp_path / "outer" / "inner")
    monkeypatch.chdir(tmp_path / "outer" / "inner")
    assert referee_dir() == (tmp_path / "outer" / "inner" / ".referee").resolve()


def test_outside_a_repository_the_working_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "plain"
    work.mkdir()
    monkeypatch.chdir(work)
    if repo_top() is not None:
        pytest.skip("the temporary folder is inside a git repository here")
    assert referee_dir() == (work / ".referee").resolve()


def test_the_folder_ignores_itself_and_keeps_an_existing_gitignore(tmp_path: Path) -> None:
    folder = ensure_dir(tmp_path / ".referee")
    assert (folder / ".gitignore").read_text().splitlines()[-1] == "*"
    (folder / ".gitignore").write_text("mine\n")
    ensure_dir(folder)
    assert (folder / ".gitignore").read_text() == "mine\n"


def test_the_response_cache_follows_the_same_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _git_init(tmp_path / "repo")
    (tmp_path / "repo" / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "repo" / "sub")
    monkeypatch.delenv("REFEREE_CACHE_DIR")
    assert default_cache_path() == (tmp_path / "repo" / ".referee" / "cache.sqlite").resolve()
