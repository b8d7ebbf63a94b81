"""The run manifest written beside a results file: what was evaluated, with what, and the totals."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .._util._redact import redact_argv, redact_text, redact_url
from .._version import __version__
from ._files import file_sha256, manifest_path, utc_now_iso
from ._files import text_sha256 as text_sha256  # imported from here by many modules

MAX_MANIFEST_BYTES = 16 << 20
"""A manifest holds a run's settings and provenance, never its rows: a few KB. Past this it is not one."""

MANIFEST_VERSION = 2
"""2: ``run_id`` (the run's id in the run history)."""


def _redacted(value: Any) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {k: _redacted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted(v) for v in value]
    return value


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EvalSetInfo(_Model):
    """The cases a run evaluated: their file, its SHA-256 and the case ids."""

    path: str
    sha256: str
    n_cases: int
    case_ids: list[str]

    @classmethod
    def of(cls, path: str | Path, case_ids: list[str], *, sha256: str | None = None) -> EvalSetInfo:
        """The cases a run evaluates: their file (hashed, unless ``sha256`` gives the identity) and ids."""
        return cls(path=str(path), sha256=sha256 if sha256 is not None else file_sha256(path),
                   n_cases=len(case_ids), case_ids=case_ids)


class TemplateInfo(_Model):
    """The judge prompt template a run used (its path and SHA-256)."""

    path: str | None = None
    sha256: str


class JudgeConfig(_Model):
    """The judge configuration. Never holds a key: only where keys come from."""

    provider: str
    model: str
    base_url: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    repeat: int = 1
    concurrency: int | None = None
    timeout_s: float | None = None
    max_retries: int | None = None
    input_price_per_mtok: float | None = None
    output_price_per_mtok: float | None = None
    price_source: str | None = None
    """What priced the run: ``user`` (the two price flags), ``genai-prices <version>``, or None (no cost)."""
    batch: bool = False
    """Judged through the provider's batch API (``--batch``); the jobs are in ``extra["batch_jobs"]``."""

    @field_validator("base_url")
    @classmethod
    def _no_credentials(cls, v: str | None) -> str | None:
        return None if v is None else redact_url(v)


class Totals(_Model):
    """A run's counts by row status, tokens, cost, provider calls (cached ones apart) and wall time."""

    rows: int = 0
    scored: int = 0
    unscored: int = 0
    error: int = 0
    skipped_invalid: int = 0
    cost_usd: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    provider_calls: int = 0
    cached_calls: int = 0
    wall_s: float | None = None


class RunManifest(_Model):
    """What a run did, written beside its results file (``<results>.manifest.json``): the command, cases,
    template, judge, status and totals, so a run can be resumed, audited and reproduced. Never holds a key."""

    manifest_version: int = MANIFEST_VERSION
    referee_version: str = __version__
    run_id: str | None = None
    """The run's id in the run history (``referee runs show ID``); a resumed run keeps its id."""
    kind: str = "judge"
    """Which command wrote the run: judge, pairwise, rubric, gold, suite, redteam, ..."""
    status: Literal["running", "complete", "interrupted", "failed"] = "running"
    created_at: str = Field(default_factory=utc_now_iso)
    finished_at: str | None = None
    command: list[str] = Field(default_factory=list)
    eval_set: EvalSetInfo | None = None
    template: TemplateInfo | None = None
    judge: JudgeConfig | None = None
    system_under_test: str | None = None
    """Model of the system being evaluated, when known, so self-grading can be flagged."""
    adversarial: bool = False
    """Marks a red-team results file: `referee score` reports it per attack type, apart from correctness."""
    totals: Totals = Field(default_factory=Totals)
    extra: dict[str, Any] = Field(default_factory=dict)

    @field_validator("command")
    @classmethod
    def _redact_command(cls, v: list[str]) -> list[str]:
        # Commands are recorded from sys.argv by every subcommand: URLs with user:pass@ and key-shaped values
        # must never reach the manifest, whoever built the list.
        return redact_argv(v)

    def recorded(self) -> dict[str, Any]:
        """The manifest as every copy of it is written (the file beside the results, the run-history store).
        ``extra`` is filled by every command (agents, targets, endpoints), often after construction: whatever lands
        there, a URL's user:password@, a secret query value or a key-shaped token is masked on the way out."""
        data = self.model_dump(mode="json")
        data["extra"] = _redacted(data["extra"])
        return data

    def write(self, results_path: str | Path) -> Path:
        path = manifest_path(results_path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.recorded(), indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, path)
        return path

    @classmethod
    def for_cases(cls, kind: str, cases_path: str | Path, case_ids: list[str], *, command: list[str],
                  sha256: str | None = None, **fields: Any) -> RunManifest:
        """The manifest of a run over the cases of ``cases_path`` (the one builder every command uses)."""
        return cls(kind=kind, command=command, eval_set=EvalSetInfo.of(cases_path, case_ids, sha256=sha256),
                   **fields)

    @classmethod
    def read(cls, results_path: str | Path) -> RunManifest | None:
        """The manifest beside ``results_path`` (None when there is none). Raises ``ValueError`` for one that is
        not a manifest or is larger than one can be (a results folder imported from elsewhere is not trusted)."""
        path = manifest_path(results_path)
        if not path.exists():
            return None
        with path.open("rb") as fh:
            data = fh.read(MAX_MANIFEST_BYTES + 1)
        if len(data) > MAX_MANIFEST_BYTES:
            raise ValueError(f"{path}: larger than a run manifest can be ({MAX_MANIFEST_BYTES:,} bytes)")
        return cls.model_validate_json(data)
