"""The one result row every evaluator writes (judge, rubric, pairwise, checks, trajectories).

A row is a superset of the seed tools' row ``{id, score, category, rationale, cost_usd, latency_ms}``.
Rows written by referee carry ``schema_version`` and reject unknown fields; rows without it are read as
seed ("legacy") rows, whose unknown keys are kept in ``metadata`` so nothing a user had is dropped.
"""

from __future__ import annotations

import json
import math
import re
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticSerializationError

if TYPE_CHECKING:
    from ._check import CheckResult

SCHEMA_VERSION = 1

Status = Literal["scored", "unscored", "error"]
"""``scored``: a real score. ``unscored``: the judge replied but the reply could not be used (never a pass or a
fail). ``error``: the evaluation itself failed (API error after retries, a check that raised)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Usage(_Model):
    """Token counts as reported by the provider (never estimated)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    calls: int = 0
    """Provider calls actually made (cache hits excluded)."""
    cached_calls: int = 0
    """Replies served from the response cache."""
    images: int = 0
    """Images sent in the calls made (each call counts its own; cache hits excluded). Their tokens are part of
    ``input_tokens``, as the provider counts them."""

    def __add__(self, other: Usage) -> Usage:
        def _sum(a: int | None, b: int | None) -> int | None:
            if a is None and b is None:
                return None
            return (a or 0) + (b or 0)

        return Usage(
            input_tokens=_sum(self.input_tokens, other.input_tokens),
            output_tokens=_sum(self.output_tokens, other.output_tokens),
            calls=self.calls + other.calls,
            cached_calls=self.cached_calls + other.cached_calls,
            images=self.images + other.images,
        )


class JudgeInfo(_Model):
    """Which judge produced a row."""

    provider: str
    model: str
    template_hash: str | None = None
    """sha256 of the judge prompt template (or rubric) text, so runs with different prompts are never compared
    unknowingly."""


class TargetInfo(_Model):
    """The system under test that produced the judged output (runs with ``targets:``), and what producing it
    cost: the row's own ``cost_usd``/``latency_ms`` are these (the output's), never the judge's."""

    id: str
    kind: str
    """model, http, python or exec."""
    provider: str | None = None
    model: str | None = None
    """The model name; for other kinds what was run (the callable, the command, the URL)."""
    prompt: str | None = None
    """The prompt template file of a model target."""
    usage: Usage | None = None
    """Tokens of the generation (the judge's are in the row's ``usage``)."""
    reused: bool | None = None
    """True when the output came from an earlier run's outputs file (nothing was generated)."""


class CriterionScore(_Model):
    """One criterion (rubric dimension, gold criterion, check) of a row."""

    id: str
    name: str | None = None
    status: Status = "scored"
    score: float | None = None
    """Normalised to 0-1."""
    raw_score: float | None = None
    """On the criterion's own scale (1-5, 0-2, ...)."""
    scale: str | None = None
    passed: bool | None = None
    weight: float | None = None
    critical: bool | None = None
    rationale: str | None = None
    evidence: list[str] = Field(default_factory=list)
    grounded: bool | None = None
    """Whether every evidence quote was found in the judged text; None when not verified."""
    error: str | None = None


class ResultRow(_Model):
    """One evaluated case (for one repeat, and one turn where turns are judged separately)."""

    schema_version: int = SCHEMA_VERSION
    id: str
    status: Status = "scored"
    score: float | None = None
    """0-1; present exactly when status is ``scored``."""
    passed: bool | None = None
    """The evaluator's own pass verdict where it has one (gold criteria, all-must-pass suites). Aggregation
    uses ``score >= threshold`` unless asked otherwise."""
    category: str | None = None
    rationale: str | None = None
    evaluator: str = "judge"
    criteria: list[CriterionScore] = Field(default_factory=list)
    judge: JudgeInfo | None = None
    usage: Usage | None = None
    cost_usd: float | None = None
    latency_ms: float | None = None
    repeat: int | None = None
    turn: int | None = None
    winner: Literal["a", "b", "tie"] | None = None
    """Pairwise rows: the reconciled winner over both orders."""
    position_bias_detected: bool | None = None
    error: str | None = None
    raw_reply: str | None = None
    """An excerpt of an unusable judge reply, kept so unscored rows can be inspected."""
    flags: list[str] = Field(default_factory=list)
    """Markers such as ``ungrounded``, ``self_grading``, ``cached``."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Copied from the case (and, for seed rows, any key referee does not know)."""
    details: dict[str, Any] = Field(default_factory=dict)
    """Evaluator-specific structured data (pairwise rationales, trajectory findings, ...)."""
    target: TargetInfo | None = None
    """Which target produced the output (runs with ``targets:``)."""

    @field_validator("score")
    @classmethod
    def _score_in_range(cls, v: float | None) -> float | None:
        if v is None:
            return v
        if isinstance(v, float) and math.isnan(v):
            raise ValueError("score is NaN")
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"score {v} is outside 0-1")
        return v

    @model_validator(mode="after")
    def _status_matches_score(self) -> ResultRow:
        if self.status == "scored" and self.score is None:
            raise ValueError("a scored row needs a score")
        if self.status != "scored" and self.score is not None:
            raise ValueError(f"a row with status '{self.status}' must not carry a score")
        return self

    @property
    def key(self) -> tuple[str, int | None, int | None]:
        """Identity of a row inside one results file."""
        return (self.id, self.repeat, self.turn)

    @property
    def checks(self) -> dict[str, CheckResult]:
        """Each evaluator's typed result (:class:`~referee.CheckResult`) by its label: on a one-evaluator row
        (``evaluator`` is the evaluator's name) the row itself; on a suite's combined row (``evaluator:
        suite``) one per evaluator, with its score, verdict, reason, criteria, winner and details."""
        return _checks_of(self)

    def check(self, label: str | None = None) -> CheckResult:
        """One evaluator's typed result on this row (see :attr:`checks`); ``label`` may be left out on a
        one-evaluator row. KeyError naming the labels there are."""
        checks = self.checks
        if label is None:
            if len(checks) != 1:
                raise KeyError(f"row {self.id!r} combines {len(checks)} evaluators: name one of "
                               f"{', '.join(checks)}")
            return next(iter(checks.values()))
        if label not in checks:
            raise KeyError(f"row {self.id!r} has no evaluator {label!r} (it has: {', '.join(checks) or 'none'})")
        return checks[label]

    def to_json_dict(self) -> dict[str, Any]:
        """The compact persisted form: defaults and empty collections are left out."""
        data = self.model_dump(mode="json", exclude_defaults=True)
        data = {"schema_version": SCHEMA_VERSION, **data}
        return data

    def to_json_text(self) -> str:
        """:meth:`to_json_dict` as one line of JSON text, the same JSON value (a test holds them equal).

        pydantic's own serializer writes it about seven times faster than ``json.dumps`` of the dict, which matters
        at a results file's rate. It writes a typed float that is not finite as null, where the dict's encoder
        refuses it, and it refuses a lone surrogate: such a row takes the dict's path, so both rules are kept. A lone
        surrogate (from a provider's reply) is not UTF-8: it becomes U+FFFD, not a crash."""
        if self.schema_version == SCHEMA_VERSION and _floats_finite(self):
            try:
                body = self.model_dump_json(exclude_defaults=True)
            except PydanticSerializationError:
                pass
            else:
                return _JSON_HEAD + body[1:]
        text = _ROW_ENCODER.encode(self.to_json_dict())
        return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


_JSON_HEAD = f'{{"schema_version":{SCHEMA_VERSION},'
_ROW_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False)
_SURROGATE = re.compile("[\ud800-\udfff]")


def _floats_finite(row: ResultRow) -> bool:
    """Every typed float of ``row`` (the score is already checked) finite or absent; a sum of finite values that
    overflows only sends the row down the slower path."""
    total = 0.0
    for v in (row.cost_usd, row.latency_ms):
        if v is not None:
            total += v
    for c in row.criteria:
        for v in (c.score, c.raw_score, c.weight):
            if v is not None:
                total += v
    return math.isfinite(total)


def criteria_of(items: list[Any]) -> list[CriterionScore]:
    """Criteria kept as plain dicts (a combined row's ``details``, a check's parts) as typed criteria."""
    out: list[CriterionScore] = []
    for c in items:
        if isinstance(c, dict) and "id" in c:
            status = c.get("status", "scored")
            out.append(CriterionScore.model_validate({
                **{k: v for k, v in c.items() if k in CriterionScore.model_fields},
                "score": c.get("score") if status == "scored" else None,
                "evidence": [str(e) for e in c.get("evidence") or []]}))
    return out


def _checks_of(row: ResultRow) -> dict[str, CheckResult]:
    """Each evaluator's typed result on ``row``, by its label: a one-evaluator row is that evaluator's result;
    a suite's combined row holds one per evaluator (its entry in ``criteria`` and its ``details["checks"]``)."""
    from ._check import SUITE_EVALUATOR, CheckResult  # plain data, no model

    if row.evaluator != SUITE_EVALUATOR:
        return {row.evaluator: CheckResult.from_row(row)}
    kept: dict[str, Any] = row.details.get("checks") or {}
    out: dict[str, CheckResult] = {}
    for c in row.criteria:
        d = dict(kept.get(c.id) or {})
        crit = d.pop("criteria", None)
        winner = d.pop("winner", None)
        bias = d.pop("position_bias_detected", None)
        out[c.id] = CheckResult(
            score=c.score if c.status == "scored" else None, passed=c.passed, reason=c.rationale or "",
            status=c.status, evidence=list(c.evidence), details=d,
            criteria=criteria_of(crit) if isinstance(crit, list) else [],
            winner=winner if winner in ("a", "b", "tie") else None,
            position_bias_detected=bias if isinstance(bias, bool) else None, error_message=c.error)
    return out
