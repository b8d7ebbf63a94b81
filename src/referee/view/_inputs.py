"""What ``referee view`` is given, resolved to runs: results files or run folders, and cases files (shared, or
bound to one run as ``RUN=CASES``)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError, UserError

_NOT_RESULTS = (".outputs.jsonl", ".labels.jsonl", ".cases.jsonl", ".tmp")
"""Files a run folder holds beside its results: a target's outputs, labels, the cases a Python run wrote."""


_PREV = re.compile(r"\.prev\d*\.(jsonl|ndjson)$")


def is_results_file(p: Path) -> bool:
    """A results file in a run folder: not outputs, labels or cases, and not an earlier run set aside."""
    name = p.name
    return name.endswith((".jsonl", ".ndjson")) and not name.endswith(_NOT_RESULTS) and not _PREV.search(name)


def expand_inputs(paths: list[str]) -> tuple[list[Path], list[str]]:
    """Results files in the order given; a folder stands for the results files in it (a ``referee run``
    targets folder: one per target, sorted by name). Outputs and labels files named directly are left out
    with a note (``results/*.jsonl`` names them too). Returns (files, notes)."""
    out: list[Path] = []
    notes: list[str] = []
    for p in paths:
        pp = Path(p)
        if pp.is_dir():
            found = _folder_results(pp)
            if not found:
                raise InputError("a folder with no results file in it (*.jsonl beside a .manifest.json, or any "
                                 "*.jsonl that is not outputs or labels)" + _run_first(pp), file=p)
            out += found
        elif not pp.exists():
            raise InputError("file not found", file=p)
        elif not pp.is_file():
            raise InputError("not a file", file=p)
        elif pp.name.endswith(_NOT_RESULTS):
            notes.append(f"{p} is not a results file (a target's outputs, labels or cases): shown with its run, "
                         "not as one")
        else:
            out.append(pp)
    if not out and paths:  # none given at all: the run history alone (``referee view``)
        raise UserError("no results file to view: " + "; ".join(notes) if notes else "no results file to view")
    return out, notes


def _folder_results(folder: Path) -> list[Path]:
    """The results files of a folder: those with a run manifest beside them when there are any (a suite's
    folder such as ``referee init``'s holds its cases too), else every JSONL file that is not outputs or
    labels."""
    found = sorted(q for q in folder.iterdir() if q.is_file() and is_results_file(q))
    with_manifest = [q for q in found if q.with_name(q.name.rsplit(".", 1)[0] + ".manifest.json").is_file()]
    if with_manifest:
        return with_manifest
    if any(folder.glob("*.yaml")) or any(folder.glob("*.yml")):
        return []  # a suite's folder before its first run: its JSONL files are cases, not results
    return found


def _run_first(folder: Path) -> str:
    suites = sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")])
    if not suites:
        return ""
    return f"; run the suite first (referee run {suites[0]}), then view the folder again"


@dataclass
class CasesArgs:
    shared: list[Path] = field(default_factory=list)
    """Cases files for every run (after each run's own)."""
    bound: dict[int, list[Path]] = field(default_factory=dict)
    """Run index -> cases files for that run only (before anything else it has)."""


def parse_cases(args: list[str], runs: list[Path]) -> CasesArgs:
    """``--cases FILE`` (every run) or ``--cases RUN=FILE``: RUN is a results file's name, its stem (a target
    id), its path as given, or its 1-based position."""
    res = CasesArgs()
    for a in args:
        run, sep, file = a.partition("=")
        if not sep or Path(a).is_file():
            res.shared.append(_file(a))
            continue
        idx = _run_index(run, runs)
        res.bound.setdefault(idx, []).append(_file(file))
    return res


def _file(p: str) -> Path:
    pp = Path(p)
    if not pp.is_file():
        raise InputError("file not found" if not pp.exists() else "not a file", file=p, field="--cases")
    return pp


def _run_index(name: str, runs: list[Path]) -> int:
    if name.isdigit() and 1 <= int(name) <= len(runs):
        return int(name) - 1
    for i, r in enumerate(runs):
        stem = r.name.rsplit(".", 1)[0]
        if name in (r.name, stem, str(r)) or os.path.abspath(name) == os.path.abspath(r):
            return i
    names = ", ".join(r.name.rsplit(".", 1)[0] for r in runs)
    raise UserError(f"--cases {name}=...: no run {name!r} (runs: {names}; or a position 1-{len(runs)})")
