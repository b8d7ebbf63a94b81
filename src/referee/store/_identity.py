"""What makes two runs comparable as baseline and candidate: the suite (its repository-relative path or
``name:``, else the cases file's), its evaluators' configuration and the judge's. Targets and prompts are what
is compared, never part of it. Read from the manifest only (the store knows nothing of suites)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._util._home import repo_top

if TYPE_CHECKING:
    from ..results._manifest import RunManifest


def _rel(path: str | None) -> str | None:
    if not path:
        return None
    p = Path(path)
    try:
        p = p.resolve()
    except OSError:
        return path
    top = repo_top(p.parent if p.parent.exists() else os.getcwd())
    if top is not None:
        try:
            return p.relative_to(top).as_posix()
        except ValueError:
            pass
    return p.name


def suite_label(m: RunManifest) -> str | None:
    suite = m.extra.get("suite")
    if isinstance(suite, dict) and (suite.get("name") or suite.get("path")):
        return label_of_suite(suite.get("path"), suite.get("name"))
    return _rel(m.eval_set.path) if m.eval_set else None


def label_of_suite(path: str | None, name: str | None = None) -> str | None:
    """How the history names a suite's runs: its ``name:``, else its repository-relative path."""
    return str(name) if name else _rel(str(path) if path else None)


_SUITE_BYTES = 4 << 20  # a suite file is a few kilobytes; a larger ".yaml" is not read to find a name


def suite_named(value: str) -> str:
    """What ``--suite VALUE`` names in the history: a suite file's label (its ``name:``, else its repository-relative
    path) when VALUE is a file, so ``--suite evals/suite.yaml`` finds a named suite's runs; else VALUE as given."""
    p = Path(value)
    try:
        if p.suffix.lower() not in (".yaml", ".yml") or not p.is_file() or p.stat().st_size > _SUITE_BYTES:
            return value
    except OSError:
        return value
    from .._util import _yaml
    from ..errors import RefereeError

    try:
        data = _yaml.load(str(p))
    except (OSError, RefereeError):  # not a suite to read: the value is the label given
        return value
    name = data.get("name") if isinstance(data, dict) and isinstance(data.get("name"), str) else None
    return label_of_suite(str(p), name) or value


def judge_key(m: RunManifest) -> str | None:
    if m.judge is None:
        return None
    j = m.judge
    return _hash({"provider": j.provider, "model": j.model, "base_url": j.base_url, "temperature": j.temperature,
                  "max_tokens": j.max_tokens, "seed": j.seed, "repeat": j.repeat,
                  "panel": m.extra.get("panel")})


def evaluators_key(m: RunManifest) -> Any:
    suite = m.extra.get("suite")
    return {"kind": m.kind,
            "evaluators": m.extra.get("evaluators_sha256") or (suite.get("evaluators") if isinstance(suite, dict)
                                                                else None),
            "scoring": suite.get("scoring") if isinstance(suite, dict) else None,
            "template": m.template.sha256 if m.template else None,
            "judge_template": m.extra.get("judge_template_sha256"),
            "mode": m.extra.get("mode"), "reconcile": m.extra.get("reconcile")}


def identity(m: RunManifest) -> str:
    return _hash({"suite": suite_label(m), "evaluators": evaluators_key(m), "judge": judge_key(m)})


def _hash(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode("utf-8")).hexdigest()
