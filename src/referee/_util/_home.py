"""Where referee keeps its own files (the response cache, the run history): one rule for all of them.

``.referee/`` at the top level of the git repository the working folder is in, else in the working folder; never
above the repository. The folder holds a ``.gitignore`` (``*``) so it is never committed by accident.
"""

from __future__ import annotations

import os
from pathlib import Path

DIR_NAME = ".referee"


def repo_top(start: str | Path | None = None) -> Path | None:
    """The top level of the git work tree holding ``start`` (default: the working folder), or None.

    Found by walking up to a ``.git`` entry (a folder, or the file a worktree or submodule has): no ``git``
    process on every command's start-up."""
    here = Path(start if start is not None else os.getcwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return None


def referee_dir(start: str | Path | None = None, *, create: bool = False) -> Path:
    """``.referee/`` at the repository's top level, else in ``start`` (the working folder). With ``create`` the
    folder is made, with its ``.gitignore``."""
    base = repo_top(start) or Path(start if start is not None else os.getcwd()).resolve()
    folder = base / DIR_NAME
    if create:
        ensure_dir(folder)
    return folder


def ensure_dir(folder: Path) -> Path:
    """Make ``folder`` (and its parents) with a ``.gitignore`` that ignores everything in it."""
    folder.mkdir(parents=True, exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        try:
            with open(ignore, "x", encoding="utf-8") as f:
                f.write("# referee's cache and run history: local to this machine, never committed\n*\n")
        except FileExistsError:  # another process made it first
            pass
    return folder
