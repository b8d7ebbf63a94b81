"""Where a run ran: commit, branch, dirty (tracked files only), remotes without credentials, CI allow-list."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from referee.store._git import ci_facts, git_facts, strip_credentials


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    r.mkdir()
    _git(r, "init", "-q", "-b", "main")
    _git(r, "config", "user.email", "t@example.com")
    _git(r, "config", "user.name", "t")
    (r / "a.txt").write_text("one\n")
    _git(r, "add", "a.txt")
    _git(r, "commit", "-q", "-m", "one")
    _git(r, "remote", "add", "origin", "https://user:ghp_abcdefghijklmnopqrstuvwxyz@github.com/o/r.git")
    return r


def test_commit_branch_clean_and_remote_without_credentials(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("GITHUB_ACTIONS", "GITLAB_CI", "CIRCLECI", "BUILDKITE", "TF_BUILD", "JENKINS_URL"):
        monkeypatch.delenv(var, raising=False)
    f = git_facts(repo)
    assert f.commit == _git(repo, "rev-parse", "HEAD") and len(f.commit) == 40
    assert f.branch == "main" and f.dirty is False
    assert f.remote == "https://github.com/o/r.git"


def test_untracked_files_do_not_make_it_dirty_tracked_changes_do(repo: Path) -> None:
    (repo / "new.txt").write_text("untracked\n")
    assert git_facts(repo).dirty is False
    (repo / "a.txt").write_text("changed\n")
    assert git_facts(repo).dirty is True


def test_outside_a_repository_nothing_is_invented(tmp_path: Path) -> None:
    f = git_facts(tmp_path)
    if f.commit is not None:
        pytest.skip("the temporary folder is inside a git repository here")
    assert (f.branch, f.dirty, f.remote) == (None, None, None)


def test_ci_variables_come_from_the_allow_list_only() -> None:
    env = {"GITHUB_ACTIONS": "true", "GITHUB_SHA": "b" * 40, "GITHUB_REF": "refs/pull/7/merge",
           "GITHUB_RUN_ID": "123", "GITHUB_TOKEN": "ghs_secret", "OTHER": "x\x1b[2J"}
    assert ci_facts(env) == ("github", "b" * 40, "refs/pull/7/merge", "123")
    assert ci_facts({"GITLAB_CI": "1", "CI_COMMIT_SHA": "c\x00" * 3}) == ("gitlab", "ccc", None, None)
    assert ci_facts({}) == (None, None, None, None)


@pytest.mark.parametrize(("url", "want"), [
    ("https://tok@github.com/o/r.git", "https://github.com/o/r.git"),
    ("https://u:p@host:8443/r?token=x", "https://host:8443/r"),
    ("git@github.com:o/r.git", "github.com:o/r.git"),
    ("/local/path", "/local/path"),
])
def test_credentials_are_stripped_from_remotes(url: str, want: str) -> None:
    assert strip_credentials(url) == want


def test_detached_head_has_no_branch_and_a_repository_without_commits_has_no_commit(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("GITHUB_ACTIONS", "GITLAB_CI", "CIRCLECI", "BUILDKITE", "TF_BUILD", "JENKINS_URL"):
        monkeypatch.delenv(var, raising=False)
    head = _git(repo, "rev-parse", "HEAD")
    (repo / "a.txt").write_text("two\n")
    _git(repo, "commit", "-q", "-am", "two")
    _git(repo, "checkout", "-q", "--detach", head)
    f = git_facts(repo)
    assert (f.commit, f.branch, f.dirty) == (head, None, False)
    (repo / "a.txt").write_text("staged\n")
    _git(repo, "add", "a.txt")  # a staged change is a tracked change too
    assert git_facts(repo).dirty is True

    empty = tmp_path / "empty"
    empty.mkdir()
    _git(empty, "init", "-q", "-b", "main")
    (empty / "b.txt").write_text("b\n")
    _git(empty, "add", "b.txt")
    f = git_facts(empty)
    assert (f.commit, f.branch, f.dirty) == (None, None, None)


def test_a_branch_name_with_slashes_and_unicode_is_kept(repo: Path) -> None:
    _git(repo, "checkout", "-q", "-b", "feature/naïve-été")
    assert git_facts(repo).branch == "feature/naïve-été"
