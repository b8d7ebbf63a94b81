"""Baselines by name: main (any branch), last, a run id, @COMMIT; a file wins with a note; nothing found is exit 2
saying what was searched; a run judged differently is named, not matched."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from referee.store import open_store
from tests.support.cli import run_cli

CASES = [{"id": f"c{i}", "output": "yes" if i % 4 else "no"} for i in range(8)]


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    r = tmp_path / "repo"
    r.mkdir()
    _git(r, "init", "-q", "-b", "main")
    _git(r, "config", "user.email", "t@example.com")
    _git(r, "config", "user.name", "t")
    (r / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES))
    (r / "suite.yaml").write_text("name: demo\ncases: cases.jsonl\nevaluators:\n  - contains: {value: 'yes'}\n")
    (r / ".gitignore").write_text("*.jsonl.*\nout/\n.referee/\n")
    _git(r, "add", ".")
    _git(r, "commit", "-q", "-m", "one")
    monkeypatch.chdir(r)
    for var in ("GITHUB_ACTIONS", "GITLAB_CI", "CIRCLECI", "BUILDKITE", "TF_BUILD", "JENKINS_URL",
                "GITHUB_BASE_REF"):
        monkeypatch.delenv(var, raising=False)
    return r


def _run(capsys: pytest.CaptureFixture[str], store_url: str, *extra: str, out: str = "out/r.jsonl") -> tuple[int, str]:
    code, _, err = run_cli(["run", "suite.yaml", "--out", out, "--store", store_url, *extra], capsys)
    return code, err


def _commit(repo: Path, msg: str) -> str:
    (repo / "notes.txt").write_text(msg)
    _git(repo, "add", "notes.txt")
    _git(repo, "commit", "-q", "-m", msg)
    return _git(repo, "rev-parse", "HEAD")


def _last_id(store_url: str) -> str:
    with open_store(store_url) as st:
        return st.list_runs(limit=1)[0].id


def test_main_is_the_newest_run_on_mains_first_parent_history_up_to_the_merge_base(
        repo: Path, store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(capsys, store_url)[0] == 0
    b = _commit(repo, "two")
    assert _run(capsys, store_url)[0] == 0
    on_b = _last_id(store_url)
    _git(repo, "checkout", "-q", "-b", "feature")
    _commit(repo, "three")
    _git(repo, "checkout", "-q", "main")
    _commit(repo, "main moves on after the branch point")
    assert _run(capsys, store_url)[0] == 0  # a run on main past the merge base: not the feature's baseline
    _git(repo, "checkout", "-q", "feature")
    code, err = _run(capsys, store_url, "--baseline", "main", "--tag", "pr")
    assert code == 0, err
    assert f"baseline: run {on_b[:12]}" in err and b[:12] in err and "merge base" in err and "clean tree" in err


def test_a_clean_run_is_preferred_to_a_dirty_one_at_the_same_commit(
        repo: Path, store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(capsys, store_url)[0] == 0
    clean = _last_id(store_url)
    (repo / "suite.yaml").write_text((repo / "suite.yaml").read_text() + "# local edit\n")
    assert _run(capsys, store_url, out="out/dirty.jsonl")[0] == 0
    with open_store(store_url) as st:
        assert st.list_runs(limit=1)[0].git_dirty is True
    code, err = _run(capsys, store_url, "--baseline", "main", out="out/third.jsonl")
    assert code == 0 and f"baseline: run {clean[:12]}" in err


def test_last_a_run_id_and_a_commit(repo: Path, store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(capsys, store_url)[0] == 0
    first = _last_id(store_url)
    head = _commit(repo, "two")
    assert _run(capsys, store_url)[0] == 0
    second = _last_id(store_url)
    code, err = _run(capsys, store_url, "--baseline", "last")
    assert code == 0 and f"baseline: run {second[:12]}" in err, err  # the newest other than this run itself
    code, err = _run(capsys, store_url, "--baseline", first[:8])
    assert code == 0 and f"baseline: run {first[:12]}" in err and "named by its id" in err
    newest_at_head = _last_id(store_url)
    code, err = _run(capsys, store_url, "--baseline", "@" + head[:7])
    assert code == 0 and f"baseline: run {newest_at_head[:12]}" in err and "at commit" in err
    code, err = _run(capsys, store_url, "--baseline", "@" + "f" * 7)
    assert code == 2 and "at commit fffffff" in err


def test_score_accepts_a_run_name(repo: Path, store_url: str, capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    assert _run(capsys, store_url)[0] == 0
    first = _last_id(store_url)
    (repo / "cases.jsonl").write_text("".join(json.dumps({**c, "output": "no"}) + "\n" for c in CASES))
    assert _run(capsys, store_url, out="out/worse.jsonl")[0] == 0
    monkeypatch.setenv("REFEREE_STORE", store_url)
    code, out, err = run_cli(["score", "out/worse.jsonl", "--baseline", first[:10], "--fail-on-regression"], capsys)
    assert code == 1 and f"baseline: run {first[:12]}" in err
    assert "regress" in (out + err).lower()


def test_an_existing_file_wins_with_a_note(repo: Path, store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(capsys, store_url)[0] == 0
    (repo / "last").write_text((repo / "out" / "r.jsonl").read_text())
    code, err = _run(capsys, store_url, "--baseline", "last", out="out/again.jsonl")
    assert code == 0 and "is a file here" in err and "baseline: run" not in err


def test_nothing_found_is_exit_2_saying_what_was_searched(repo: Path, store_url: str,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _run(capsys, store_url, "--baseline", "main")
    assert code == 2
    assert "first-parent history of 'main'" in err and "suite 'demo'" in err
    code, err = _run(capsys, store_url, "--baseline", "no-such-branch", out="out/x.jsonl")
    assert code == 2 and "recorded on branch 'no-such-branch'" in err
    code, err = _run(capsys, store_url, "--baseline", "@zzzz", out="out/y.jsonl")
    assert code == 2 and "commit hash" in err
    # Too long for a file name: looked up as a name, not an OSError's "[Errno 36] File name too long".
    code, err = _run(capsys, store_url, "--baseline", "@" + "a" * 300, out="out/w.jsonl")
    assert code == 2 and "commit hash" in err and "Errno" not in err, err
    # A name starting with "-" is no branch (git refuses one) and never reaches git, which would read an option.
    code, err = _run(capsys, store_url, "--baseline=-h", out="out/z.jsonl")
    assert code == 2 and "not a run name" in err


def test_a_run_judged_differently_is_named_not_matched(repo: Path, store_url: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(capsys, store_url)[0] == 0
    other = _last_id(store_url)
    (repo / "suite.yaml").write_text("name: demo\ncases: cases.jsonl\nevaluators:\n  - contains: {value: 'no'}\n")
    code, err = _run(capsys, store_url, "--baseline", "last", out="out/changed.jsonl")
    assert code == 2 and other[:12] in err and "different evaluator or judge configuration" in err


def test_the_history_off_says_so(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["run", "suite.yaml", "--out", "out/r.jsonl", "--baseline", "main"], capsys)
    assert code == 2 and "run history is off" in err


def test_a_suites_gates_baseline_may_name_a_run(repo: Path, store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(capsys, store_url)[0] == 0
    first = _last_id(store_url)
    (repo / "suite.yaml").write_text((repo / "suite.yaml").read_text() + "gates:\n  baseline: last\n"
                                     "  fail_on_regression: true\n")
    code, err = _run(capsys, store_url, out="out/gated.jsonl")
    # the gates' baseline is part of the suite, not of its identity: the earlier run matches
    assert code == 0, err
    assert f"baseline: run {first[:12]}" in err


def test_a_targets_run_never_takes_another_target_of_the_same_run_as_its_baseline(
        repo: Path, store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    # Targets are what is compared, never part of a run's identity: both targets' runs match `last`. The other
    # target of the same invocation finished first, but a baseline comes from the history before this run.
    (repo / "agents.py").write_text("def good(case):\n    return 'yes'\n\ndef bad(case):\n    return 'no'\n")
    (repo / "suite.yaml").write_text("name: demo\ncases: cases.jsonl\ntargets:\n  - id: good\n    python: agents:good\n"
                                     "  - id: bad\n    python: agents:bad\nevaluators:\n  - contains: {value: 'yes'}\n")
    assert _run(capsys, store_url, out="out1")[0] in (0, 1)
    with open_store(store_url) as st:
        before = {r.id for r in st.list_runs()}
    assert len(before) == 2
    _, err = _run(capsys, store_url, "--baseline", "last", out="out2")
    chosen = [line.split("baseline: run ", 1)[1][:12] for line in err.splitlines() if "baseline: run " in line]
    assert len(chosen) == 2, err
    assert all(any(r.startswith(c) for r in before) for c in chosen), (chosen, before)


def _record(st: object, run_id: str, *, commit: str, branch: str, dirty: bool, started: str) -> None:
    from referee.results import RunManifest
    from referee.store._recorder import run_values

    m = RunManifest(kind="suite", run_id=run_id, extra={"suite": {"name": "lib"}})
    v = run_values(m, results_path=None, git={"commit": commit, "branch": branch, "dirty": dirty})
    st.begin_run({**v, "started_at": started})  # type: ignore[attr-defined]
    st.finish_run(run_id, {"status": "complete"})  # type: ignore[attr-defined]


def test_the_newest_commit_with_a_run_wins_however_far_back_it_is(repo: Path, store_url: str) -> None:
    # Runs ten and more commits below the merge base, in the history's second chunk of commits: the newest
    # commit's clean run is chosen over a newer dirty run at that commit, an older commit's run and a run on main
    # past the merge base.
    from referee.store import find_run

    commits = [_commit(repo, f"c{i}") for i in range(12)]
    _git(repo, "checkout", "-q", "-b", "feature", commits[9])
    _commit(repo, "feature work")
    with open_store(store_url) as st:
        _record(st, "a" * 32, commit=commits[2], branch="main", dirty=False, started="2026-01-03T00:00:00")
        _record(st, "b" * 32, commit=commits[5], branch="main", dirty=False, started="2026-01-05T00:00:00")
        _record(st, "c" * 32, commit=commits[5], branch="main", dirty=True, started="2026-01-06T00:00:00")
        _record(st, "d" * 32, commit=commits[11], branch="main", dirty=False, started="2026-01-11T00:00:00")
        assert find_run(st, "main", cwd=repo).id == "b" * 32


def test_without_git_history_the_newest_clean_run_recorded_on_the_branch_wins(repo: Path, store_url: str) -> None:
    from referee.store import find_run

    with open_store(store_url) as st:
        _record(st, "a" * 32, commit="1" * 40, branch="elsewhere", dirty=False, started="2026-01-01T00:00:00")
        _record(st, "b" * 32, commit="2" * 40, branch="elsewhere", dirty=False, started="2026-01-02T00:00:00")
        _record(st, "c" * 32, commit="3" * 40, branch="elsewhere", dirty=True, started="2026-01-03T00:00:00")
        _record(st, "d" * 32, commit="4" * 40, branch="other", dirty=False, started="2026-01-04T00:00:00")
        assert find_run(st, "elsewhere", cwd=repo).id == "b" * 32


def test_a_branch_named_like_a_run_id_prefix_is_found_as_baseline_finds_it(repo: Path, store_url: str) -> None:
    # `--baseline 1234` found branch 1234's run, but `runs show 1234` (and `score 1234`, `runs compare`) said
    # "no run '1234'": a name of hex digits was read as an id only. An ambiguous id prefix is still said as such.
    from referee.errors import UserError
    from referee.store import find_run

    with open_store(store_url) as st:
        _record(st, "ab12" + "0" * 28, commit="1" * 40, branch="1234", dirty=False, started="2026-01-01T00:00:00")
        _record(st, "ab12" + "f" * 28, commit="2" * 40, branch="other", dirty=False, started="2026-01-02T00:00:00")
        assert find_run(st, "1234", cwd=repo).id == "ab12" + "0" * 28
        with pytest.raises(UserError, match="run id 'ab12' is ambiguous"):
            find_run(st, "ab12", cwd=repo)
        with pytest.raises(UserError, match="no run 'beef' in .*, nor a complete run on a branch 'beef'"):
            find_run(st, "beef", cwd=repo)


def test_latest_pair_is_the_newest_complete_run_and_the_one_before_it_of_its_identity(
        repo: Path, store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    from referee.errors import UserError
    from referee.store import latest_pair

    assert _run(capsys, store_url, out="out/a.jsonl")[0] == 0
    first = _last_id(store_url)
    with open_store(store_url) as st, pytest.raises(UserError, match="is the only complete run of its suite"):
        latest_pair(st)
    assert _run(capsys, store_url, out="out/b.jsonl")[0] == 0
    second = _last_id(store_url)
    # A third run judged by another evaluator is the newest run, and has no earlier run of its own configuration.
    (repo / "suite.yaml").write_text("name: demo\ncases: cases.jsonl\nevaluators:\n  - contains: {value: 'ye'}\n")
    assert _run(capsys, store_url, out="out/c.jsonl")[0] == 0
    with open_store(store_url) as st:
        with pytest.raises(UserError, match="only complete run"):
            latest_pair(st)
        # Marked incomplete (killed), the newest is passed over: the pair is the two complete runs before it.
        st.finish_run(_last_id(store_url), {"status": "incomplete"})
        baseline, candidate = latest_pair(st, suite="demo")
        assert (baseline.id, candidate.id) == (first, second)
        with pytest.raises(UserError, match="no complete run of suite 'other'"):
            latest_pair(st, suite="other")


def test_a_run_added_later_from_its_files_keeps_where_it_ran(repo: Path, store_url: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A store that cannot be written leaves a run to `runs import` later: its manifest carries the commit and the
    branch, so `--baseline main` finds it as it finds a run recorded as it went; an export carries them too."""
    head = _git(repo, "rev-parse", "HEAD")
    (repo / "blocked").mkdir()  # a folder where the store's file should be: the run goes on, unrecorded
    code, err = _run(capsys, f"sqlite:///{repo / 'blocked'}", out="out/first.jsonl")
    assert code == 0 and "run history not recorded" in err, err
    written = json.loads((repo / "out" / "first.manifest.json").read_text())["extra"]["git"]
    assert written == {"commit": head, "branch": "main", "dirty": False}
    code, _, err = run_cli(["runs", "import", "out/first.jsonl", "--store", store_url], capsys)
    assert code == 0, err
    with open_store(store_url) as st:
        (imported,) = st.list_runs()
    assert (imported.git_commit, imported.git_branch, imported.git_dirty) == (head, "main", False)
    _git(repo, "checkout", "-q", "-b", "feature")
    _commit(repo, "on the feature")
    code, err = _run(capsys, store_url, "--baseline", "main", out="out/pr.jsonl")
    assert code == 0 and f"baseline: run {imported.id[:12]}" in err, err
    # Exported and imported into another store, the run is still at its commit (and so is `@COMMIT`).
    code, _, err = run_cli(["runs", "export", imported.id, "--out", "out/again.jsonl", "--store", store_url], capsys)
    assert code == 0, err
    other = f"sqlite:///{repo / 'other.sqlite'}"
    assert run_cli(["runs", "import", "out/again.jsonl", "--store", other], capsys)[0] == 0
    with open_store(other) as st:
        (again,) = st.list_runs()
    assert (again.id, again.git_commit, again.git_branch) == (imported.id, head, "main")


def test_where_an_imported_manifest_says_it_ran_is_read_as_untrusted(repo: Path, store_url: str,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    rows = "".join(json.dumps({"id": c["id"], "score": 1.0, "passed": True}) + "\n" for c in CASES)
    (repo / "r.jsonl").write_text(rows)
    (repo / "r.manifest.json").write_text(json.dumps({
        "manifest_version": 2, "run_id": "a" * 32, "kind": "judge", "status": "complete",
        "extra": {"git": {"commit": "'; DROP TABLE runs; --", "branch": "ma\x1b[31min", "dirty": "yes",
                          "remote": "https://user:s3cret-token@git.example.com/team/repo.git", "shell": "rm -rf /"}}}))
    code, _, err = run_cli(["runs", "import", "r.jsonl", "--store", store_url], capsys)
    assert code == 0, err
    with open_store(store_url) as st:
        (r,) = st.list_runs()
    assert r.git_commit is None and r.git_dirty is None  # not a commit, not a flag: left out
    assert r.git_branch == "ma[31min"  # the escape character dropped, the text kept
    assert r.git_remote == "https://git.example.com/team/repo.git"
