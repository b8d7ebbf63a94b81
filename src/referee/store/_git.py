"""Where a run ran: the git commit, branch and dirty flag (tracked changes only), the remotes without their
credentials, and the CI provider's commit, ref and run id read from an allow-list of its variables (nothing else
of the environment is read)."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .._util._redact import bare_url

# provider: (marker variable, commit, ref, run id). Only these variables are read.
CI_VARS: dict[str, tuple[str, str, str, str]] = {
    "github": ("GITHUB_ACTIONS", "GITHUB_SHA", "GITHUB_REF", "GITHUB_RUN_ID"),
    "gitlab": ("GITLAB_CI", "CI_COMMIT_SHA", "CI_COMMIT_REF_NAME", "CI_PIPELINE_ID"),
    "circleci": ("CIRCLECI", "CIRCLE_SHA1", "CIRCLE_BRANCH", "CIRCLE_WORKFLOW_ID"),
    "buildkite": ("BUILDKITE", "BUILDKITE_COMMIT", "BUILDKITE_BRANCH", "BUILDKITE_BUILD_ID"),
    "azure": ("TF_BUILD", "BUILD_SOURCEVERSION", "BUILD_SOURCEBRANCH", "BUILD_BUILDID"),
    "jenkins": ("JENKINS_URL", "GIT_COMMIT", "GIT_BRANCH", "BUILD_TAG"),
}
# The base branch of a pull request, where the CI names it (a shallow checkout's fallback for `main`).
CI_BASE_REF = ("GITHUB_BASE_REF", "CI_MERGE_REQUEST_TARGET_BRANCH_NAME", "BUILDKITE_PULL_REQUEST_BASE_BRANCH")
MAX_VALUE = 200
GIT_TIMEOUT_S = 5.0
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


@dataclass
class GitFacts:
    commit: str | None = None
    branch: str | None = None
    dirty: bool | None = None
    remote: str | None = None
    ci_provider: str | None = None
    ci_commit: str | None = None
    ci_ref: str | None = None
    ci_run_id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def git(args: list[str], cwd: str | Path | None = None) -> str | None:
    """``git args`` in ``cwd``: its stripped output, or None (no git, not a repository, a timeout)."""
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=GIT_TIMEOUT_S,
                              start_new_session=True, stdin=subprocess.DEVNULL,
                              env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"})
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip()


def _clip(v: str | None) -> str | None:
    if v is None:
        return None
    v = "".join(ch for ch in v if ch.isprintable())
    return v[:MAX_VALUE] or None


def ci_facts(environ: dict[str, str] | None = None) -> tuple[str | None, str | None, str | None, str | None]:
    env = os.environ if environ is None else environ
    for name, (marker, commit, ref, run_id) in CI_VARS.items():
        if env.get(marker):
            return name, _clip(env.get(commit)), _clip(env.get(ref)), _clip(env.get(run_id))
    return None, None, None, None


def git_facts(cwd: str | Path | None = None) -> GitFacts:
    """This working folder's commit, branch, dirty flag and first remote (credentials removed), and the CI's."""
    facts = GitFacts()
    facts.ci_provider, facts.ci_commit, facts.ci_ref, facts.ci_run_id = ci_facts()
    # One git process for the commit, the branch and the dirty flag: with the remote's, 7 ms of a run's start, not 13.
    status = git(["status", "--porcelain=v2", "--branch", "--untracked-files=no"], cwd)
    if status is None:  # not a repository, or no git
        return facts
    head = branch = None
    changed = False
    for line in status.splitlines():
        if line.startswith("# branch.oid "):
            head = line.removeprefix("# branch.oid ")
        elif line.startswith("# branch.head "):
            branch = line.removeprefix("# branch.head ")
        elif line and not line.startswith("#"):  # a tracked file's change (untracked ones are not listed)
            changed = True
    if head is None or head == "(initial)":  # a repository without a commit yet
        return facts
    facts.commit = head
    facts.branch = _clip(branch) if branch and branch != "(detached)" else None
    if facts.branch is None and facts.ci_ref:  # a detached CI checkout: the CI names the branch
        facts.branch = _clip(facts.ci_ref.removeprefix("refs/heads/"))
    facts.dirty = changed
    remote = git(["remote", "get-url", "origin"], cwd)
    if remote is None:
        names = (git(["remote"], cwd) or "").split()
        remote = git(["remote", "get-url", names[0]], cwd) if names else None
    facts.remote = _clip(strip_credentials(remote)) if remote else None
    return facts


def facts_of_manifest(value: Any) -> dict[str, Any]:
    """The git facts a results manifest carries (``extra["git"]``, written as the run ended), read as untrusted
    input: a commit of 40 or 64 hexadecimal digits, texts printable and bounded, the remote without credentials,
    anything else left out. A run added from its files (``referee runs import``) keeps where it ran, so ``main``
    and ``@COMMIT`` find it as they find a run recorded as it went."""
    if not isinstance(value, dict):
        return {}
    out: dict[str, Any] = {}
    commit = value.get("commit")
    if isinstance(commit, str) and _COMMIT.fullmatch(commit):
        out["commit"] = commit
    if isinstance(value.get("dirty"), bool):
        out["dirty"] = value["dirty"]
    for key in ("branch", "ci_provider", "ci_commit", "ci_ref", "ci_run_id"):
        if isinstance(value.get(key), str):
            out[key] = _clip(value[key])
    if isinstance(value.get("remote"), str):
        out["remote"] = _clip(strip_credentials(value["remote"]))
    return {k: v for k, v in out.items() if v is not None}


def strip_credentials(url: str) -> str:
    """A remote URL without user, password or token (``https://tok@host/x`` -> ``https://host/x``); scp-like
    ``git@host:x`` keeps only the host and path."""
    if "://" in url:
        return bare_url(url) or ""
    if "@" in url and ":" in url.split("@", 1)[1]:
        return url.split("@", 1)[1]
    return url
