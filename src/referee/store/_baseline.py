"""A baseline by name: ``main`` (any branch), ``last``, a run id, or ``@COMMIT``, resolved in the run history the
way a reviewer would; an existing file path still wins (with a note when it also reads as a name).

A run matches when its identity (suite + evaluators' and judge's configuration, ``_identity.py``) is the
candidate's; a run of the same suite judged differently is named, never matched silently."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UserError
from ._git import CI_BASE_REF, git
from ._settings import AmbiguousRun, StoreError

if TYPE_CHECKING:
    from ..results._manifest import RunManifest
    from ..results._schema import ResultRow
    from ._store import RunRecord, Store

MAX_FIRST_PARENT = 2000
"""How far back main's first-parent history is searched."""
_HEX = re.compile(r"^[0-9a-f]{4,64}$")


@dataclass
class Baseline:
    """What a ``--baseline`` named: a results file (``path``), or a stored run (``run`` and its ``rows``)."""

    spec: str
    path: Path | None = None
    run: RunRecord | None = None
    rows: list[ResultRow] = field(default_factory=list)
    manifest: RunManifest | None = None
    why: str = ""
    notes: list[str] = field(default_factory=list)

    def table(self) -> Any:
        """The baseline as ``summarize`` reads it: the file's path, or the stored run's rows as a table with its
        manifest, as the file beside its manifest reads (a red-team run's rows stay in the adversarial track)."""
        if self.path is not None:
            return self.path
        from ..aggregate._load import table_from_rows

        assert self.run is not None
        return table_from_rows(self.rows, name=f"run {self.run.id[:12]}", manifest=self.manifest)

    def describe(self) -> str:
        if self.run is None:
            return f"baseline: {self.path}"
        r = self.run
        dirty = " (dirty tree)" if r.git_dirty else ""
        return f"baseline: run {r.id[:12]} ({r.place()}{dirty}, {r.started_at}): {self.why}"


def file_note(spec: str) -> str | None:
    """The note when a baseline given as ``spec`` is a file but also reads as a run name."""
    if spec in ("last", "main", "master") or spec.startswith("@") or _HEX.fullmatch(spec):
        return f"note: {spec!r} is a file here, so the file is the baseline, not the run history's {spec!r}"
    return None


def _is_file(path: Path) -> bool:
    """``path.is_file()``, False for a name the system cannot look up (one too long): then it is no file."""
    try:
        return path.is_file()
    except OSError:
        return False


def looks_like_name(spec: str) -> bool:
    """Whether ``spec`` can name a run (``last``, ``@COMMIT``, a run id, a branch) rather than only a file."""
    # Never one starting with "-": git refuses such a branch name, and git's commands would read it as an option.
    return spec == "last" or spec.startswith("@") or bool(re.fullmatch(r"[\w./][\w./\-]*", spec))


def resolve_baseline(spec: str, *, base_dir: Path | str = ".", candidate: RunManifest | None = None,
                     store: Store | None = None, cwd: str | Path | None = None,
                     siblings: Collection[str] = ()) -> Baseline:
    """The baseline ``spec`` names. A file (relative to ``base_dir``) wins; else the run history is searched
    (``store``: default, the one in force). ``siblings``: runs made by the same invocation as the candidate (the
    other targets of a targets run), never its baseline. Raises ``UserError`` (exit 2) saying what was searched."""
    p = Path(spec)
    path = p if p.is_absolute() else Path(base_dir) / p
    if _is_file(path):
        b = Baseline(spec, path=path)
        note = file_note(spec)
        if note:
            b.notes.append(note)
        return b
    if not looks_like_name(spec):
        raise UserError(f"baseline {spec!r}: no such file, and not a run name (main, a branch, last, a run id, "
                        "@COMMIT)")
    if store is None:
        from ._settings import current, require_history
        from ._store import Store

        settings = current()
        if not settings.readable:
            raise UserError(f"baseline {spec!r}: no such file, and the run history is off (REFEREE_STORE=off), "
                            "so a run cannot be looked up by name")
        url = settings.resolved_url()
        try:
            require_history(url)
        except StoreError as exc:
            raise UserError(f"baseline {spec!r}: no such file, and {exc}") from None
        st = Store(url)
        try:
            return _resolve(st, spec, candidate, cwd, siblings)
        finally:
            st.close()
    return _resolve(store, spec, candidate, cwd, siblings)


def find_run(store: Store, spec: str, *, cwd: str | Path | None = None) -> RunRecord:
    """The run ``spec`` names in ``store``: a run id (or a unique prefix), ``last``, ``@COMMIT`` or a branch (its
    newest complete run). Never a file. Raises ``UserError`` (exit 2) saying what was searched."""
    no_id = None
    try:
        return store.get_run(spec)
    except KeyError as exc:
        # An ambiguous id prefix is said as such; one that matches no id may still be a branch ("1234", an issue's),
        # as `--baseline` reads it.
        no_id = str(exc.args[0])
        if not looks_like_name(spec) or isinstance(exc, AmbiguousRun):
            raise UserError(no_id) from None
    try:
        run = _resolve(store, spec, None, cwd).run
    except UserError as exc:
        if _HEX.fullmatch(spec):  # most often a mistyped id: said first
            raise UserError(f"{no_id}, nor a complete run on a branch {spec!r}") from None
        msg = str(exc)
        raise UserError("run" + msg[len("baseline"):] if msg.startswith("baseline ") else msg) from None
    assert run is not None  # _resolve raises when nothing is found
    return run


def latest_pair(store: Store, *, suite: str | None = None) -> tuple[RunRecord, RunRecord]:
    """(baseline, candidate): the newest complete run (of ``suite``, when given) and the newest complete run
    before it with the same suite, evaluators and judge, the pair a rerun most often means. Raises ``UserError``
    (exit 2) saying what was searched when there is no such pair."""
    where = store.display_url
    newest = store.list_runs(suite=suite, status="complete", limit=1)
    if not newest:
        raise UserError(f"no complete run{f' of suite {suite!r}' if suite else ''} in {where}")
    candidate = newest[0]
    # Its identity holds its suite: every other complete run of it is older, or the candidate would be another.
    earlier = store.list_runs(identity=candidate.identity, status="complete", exclude=candidate.id, limit=1)
    if not earlier:
        raise UserError(f"run {candidate.id[:12]} (suite {candidate.suite!r}) is the only complete run of its suite "
                        f"and configuration in {where}: nothing earlier to compare it with")
    return earlier[0], candidate


def _resolve(store: Store, spec: str, candidate: RunManifest | None, cwd: str | Path | None,
             siblings: Collection[str] = ()) -> Baseline:
    from ._identity import identity, suite_label

    ident = identity(candidate) if candidate is not None else None
    exclude = {*siblings, *([candidate.run_id] if candidate is not None and candidate.run_id else [])}
    suite = suite_label(candidate) if candidate is not None else None
    what = f"runs of suite {suite!r} with this configuration" if ident else "runs"
    where = store.display_url

    def complete(**filters: object) -> list[RunRecord]:
        return store.list_runs(identity=ident, status="complete", exclude=exclude,
                               **filters)  # type: ignore[arg-type]

    def found(run: RunRecord, why: str) -> Baseline:
        b = Baseline(spec, run=run, why=why)
        b.rows = store.rows(run.id)
        try:
            b.manifest = store.manifest(run.id)
        except StoreError as exc:  # the rows are what is compared: said, and read without it
            b.notes.append(f"note: ignored run {run.id[:12]}'s stored manifest: {exc}")
        return b

    def nothing(searched: str) -> UserError:
        msg = f"baseline {spec!r}: no complete {what} {searched} in {where}"
        if ident and suite:
            others = [r for r in store.list_runs(suite=suite, status="complete", limit=50)
                      if r.identity != ident and r.id not in exclude]
            if others:
                o = others[0]
                msg += (f"; run {o.id[:12]} of the same suite has a different evaluator or judge configuration "
                        f"(judge {o.judge or 'none'}) and is not matched")
        return UserError(msg)

    if spec == "last":
        runs = complete(limit=1)
        if not runs:
            raise nothing("at all")
        return found(runs[0], "the newest complete run" + (" of this suite and configuration" if ident else ""))
    if spec.startswith("@"):
        commit = spec[1:].lower()
        if not _HEX.fullmatch(commit):
            raise UserError(f"baseline {spec!r}: @ takes a commit hash (at least 4 hex digits)")
        runs = complete(commit=commit)
        if not runs:
            raise nothing(f"at commit {commit}")
        runs.sort(key=lambda r: (r.git_dirty is not True, r.started_at), reverse=True)
        return found(runs[0], f"the newest complete run at commit {commit}"
                              + (", from a clean tree" if runs[0].git_dirty is False else ""))
    if _HEX.fullmatch(spec):
        try:
            run = store.get_run(spec)
        except KeyError:
            run = None
        if run is not None:
            b = found(run, "named by its id")
            if ident and run.identity != ident:
                b.notes.append(f"note: run {run.id[:12]} has a different suite, evaluator or judge configuration "
                               f"(judge {run.judge or 'none'}) than this run")
            return b
    return _by_branch(store, spec, complete, found, nothing, cwd)


def _by_branch(store: Store, branch: str, complete: Callable[..., list[RunRecord]],
               found: Callable[[RunRecord, str], Baseline], nothing: Callable[[str], UserError],
               cwd: str | Path | None) -> Baseline:
    """The newest complete run on the first-parent history of ``branch`` up to the merge base with HEAD,
    preferring clean trees; without that history (a shallow checkout), ``origin/BRANCH`` or the CI's base ref;
    without git, the runs recorded on that branch."""
    notes: list[str] = []
    ref = None
    for cand in (branch, f"origin/{branch}"):
        if git(["rev-parse", "--verify", "--quiet", f"{cand}^{{commit}}"], cwd):
            ref = cand
            break
    if ref is None:
        base = next((os.environ[v] for v in CI_BASE_REF if os.environ.get(v)), None)
        if base and base != branch:
            for cand in (base, f"origin/{base}"):
                if git(["rev-parse", "--verify", "--quiet", f"{cand}^{{commit}}"], cwd):
                    ref = cand
                    notes.append(f"note: {branch!r} is not in this checkout; using the CI's base ref {cand!r}")
                    break
    elif ref != branch:
        notes.append(f"note: no local branch {branch!r}; using {ref!r} (a shallow or CI checkout)")
    if ref is None:
        runs = complete(branch=branch, clean_first=True, limit=1)
        if runs:
            b = found(runs[0], f"the newest complete run recorded on branch {branch!r} (no git history of it here)")
            b.notes = notes
            return b
        raise nothing(f"recorded on branch {branch!r} (and {branch!r} is not a file, a run id or a git ref here)")
    mb = git(["merge-base", "HEAD", ref], cwd) or git(["rev-parse", ref], cwd) or ref
    history = (git(["rev-list", "--first-parent", f"--max-count={MAX_FIRST_PARENT}", mb], cwd) or "").split()
    if not history:
        raise nothing(f"on {ref!r} (no history)")
    order = {c: i for i, c in enumerate(history)}
    best: tuple[tuple[int, bool, str], RunRecord] | None = None
    # Newest commits first, in chunks of 1, 8, 64, ... commits: the first chunk with a run holds the best one, and
    # a branch whose CI records every commit is answered by its merge base alone, not by reading every run.
    start, size = 0, 1
    while best is None and start < len(history):
        for r in complete(commits=history[start:start + size]):
            commit = r.git_commit if r.git_commit in order else r.ci_commit
            if commit not in order:
                continue
            key = (-order[commit], r.git_dirty is not True, r.started_at)
            if best is None or key > best[0]:
                best = (key, r)
        start, size = start + size, size * 8
    if best is None:
        raise nothing(f"on the first-parent history of {ref!r} up to the merge base {mb[:12]} "
                      f"({len(history)} commits)")
    run = best[1]
    clean = "a clean tree" if run.git_dirty is False else "a dirty tree (no clean run at that commit)"
    b = found(run, f"the newest complete run on {ref!r}'s first-parent history up to the merge base "
                   f"{mb[:12]}, from {clean}")
    b.notes = notes
    return b
