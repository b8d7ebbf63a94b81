"""The rubric format: criteria, scales, how the composite is formed, pass rules and verdict bands.

One format serves both the 5-dimension agent-evaluation rubric (weights, 1-5 scale, verdict bands) and the
gold-standard criteria files of the skill evaluator (``weight: critical|important``, 0-2 scale,
``pass_threshold``, ``fail_on_critical``): a gold file is a rubric whose ``kind`` is ``gold``.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..results._combine import composite, composite_normalised

Scale = Literal["binary", "0-1", "0-2", "1-5"]
SCALES: dict[str, tuple[float, float, bool]] = {
    # name: (lowest, highest, integer-only)
    "binary": (0.0, 1.0, True),
    "0-1": (0.0, 1.0, False),
    "0-2": (0.0, 2.0, True),
    "1-5": (1.0, 5.0, True),
}

Composite = Literal["weighted_sum", "weighted_mean", "mean", "sum"]
Ungrounded = Literal["keep", "reask", "invalid", "unscored"]
UNGROUNDED_MODES: tuple[str, ...] = ("keep", "reask", "invalid", "unscored")
DEFAULT_GOLD_JUDGE_MODEL = "claude-sonnet-4-6"
WEIGHT_TOLERANCE = 1e-6


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def scale_bounds(scale: str) -> tuple[float, float, bool]:
    return SCALES[scale]


def normalise(raw: float, scale: str) -> float:
    """A raw score on ``scale`` mapped to 0-1."""
    lo, hi, _ = SCALES[scale]
    return (raw - lo) / (hi - lo)


class Band(_Model):
    """A verdict band: composites ``>= min`` (and below the next band up) get ``label``. Half-open, so no
    composite falls between two bands."""

    min: float
    label: str
    action: str | None = None


class Criterion(_Model):
    """One criterion (a rubric dimension or a gold criterion)."""

    id: str = Field(min_length=1)
    name: str | None = None
    description: str | None = None
    checklist: list[str] = Field(default_factory=list)
    prompt: str | None = None
    """Instructions for the judge (the gold criteria files' field)."""
    weight: float | None = None
    """A number for weighted composites. In gold files ``weight`` is ``critical`` or ``important``: that is
    read into ``critical`` and the numeric weight stays unset."""
    critical: bool = False
    scale: Scale | None = None
    """Overrides the rubric's scale for this criterion."""
    pass_at: float | None = None
    """Raw score at or above which the criterion passes (rubrics without a judge pass flag)."""

    @model_validator(mode="before")
    @classmethod
    def _weight_word(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("weight"), str):
            word = data["weight"].strip().lower()
            if word in ("critical", "important"):
                data = {**data, "weight": None, "critical": word == "critical"}
        return data

    @field_validator("weight", mode="before")
    @classmethod
    def _weight_word_unknown(cls, v: Any) -> Any:
        if isinstance(v, str):  # critical/important were read above: any other word is a mistake
            raise ValueError(f"weight '{v}' must be a number, 'critical' or 'important'")
        return v

    @field_validator("weight")
    @classmethod
    def _weight_positive(cls, v: float | None) -> float | None:
        if v is not None and (math.isnan(v) or v < 0):
            raise ValueError("must be a number >= 0")
        return v

    @property
    def title(self) -> str:
        return self.name or self.id.replace("_", " ").replace("-", " ").title()

    @property
    def instructions(self) -> str:
        parts = [p for p in (self.description, self.prompt) if p]
        if self.checklist:
            parts.append("Checklist:\n" + "\n".join(f"- {c}" for c in self.checklist))
        return "\n".join(p.strip() for p in parts)


class Rubric(_Model):
    """A rubric file. Field names of the gold criteria files are accepted as written (``skill``,
    ``judge_model``, ``gold_standard_file``, ``generated_file_patterns``, ``pass_threshold``,
    ``fail_on_critical``)."""

    name: str = ""
    kind: Literal["rubric", "gold"] = "rubric"
    description: str | None = None
    version: str | None = None
    instructions: str | None = None
    """Extra guidance shown to the judge before the criteria."""
    scale: Scale = "1-5"
    criteria: list[Criterion]
    composite: Composite = "weighted_mean"
    """``weighted_sum``: sum(weight * raw), weights must sum to 1 (the agent-evaluation rule).
    ``weighted_mean``: sum(weight * raw) / sum(weights), equal weights when none given. ``mean``, ``sum``."""
    weights_sum_to_one: bool | None = None
    """Reject the file when the weights do not sum to 1 (implied by ``weighted_sum``)."""
    evidence_required: bool = True
    """Every score needs at least one evidence quote; a reply without one is invalid."""
    ungrounded: Ungrounded = "keep"
    """What to do when a quoted piece of evidence cannot be found: ``keep`` the score with the flag, ``reask``
    the judge once (then keep with the flag), ``invalid`` (re-ask once, then the criterion, and so the case,
    is unscored: "assertions without grounding are invalid"), or make it ``unscored`` at once."""
    bands: list[Band] = Field(default_factory=list)
    fail_below: float | None = None
    """Composite (on the rubric's scale) below which the case fails (the agent-evaluation rework rule)."""
    actions_from: str | None = None
    """The band label at and below which the verdict lists required actions (``ADEQUATE``)."""
    # Gold-standard criteria files.
    skill: str | None = None
    judge_model: str | None = None
    gold_standard_file: str | None = None
    generated_file_patterns: list[str] = Field(default_factory=list)
    pass_threshold: int | None = None
    fail_on_critical: bool = True

    @model_validator(mode="before")
    @classmethod
    def _gold_defaults(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        is_gold = data.get("kind") == "gold" or (
            "kind" not in data and any(k in data for k in ("skill", "gold_standard_file", "pass_threshold")))
        if is_gold:
            data = {"kind": "gold", "scale": "0-2", "pass_threshold": 6,
                    "judge_model": DEFAULT_GOLD_JUDGE_MODEL, "evidence_required": False, **data}
            if not data.get("name"):
                data["name"] = data.get("skill") or ""
        return data

    @field_validator("criteria")
    @classmethod
    def _criteria_ok(cls, v: list[Criterion]) -> list[Criterion]:
        if not v:
            raise ValueError("the rubric has no criteria")
        seen: set[str] = set()
        for c in v:
            if c.id in seen:
                raise ValueError(f"duplicate criterion id '{c.id}'")
            seen.add(c.id)
        return v

    @model_validator(mode="after")
    def _weights_ok(self) -> Rubric:
        must_sum = self.weights_sum_to_one if self.weights_sum_to_one is not None else (
            self.composite == "weighted_sum")
        if must_sum:
            missing = [c.id for c in self.criteria if c.weight is None]
            if missing:
                raise ValueError(f"criteria without a weight: {', '.join(missing)} (weights must sum to 1)")
            total = sum(c.weight or 0.0 for c in self.criteria)
            if abs(total - 1.0) > WEIGHT_TOLERANCE:
                raise ValueError(f"weights sum to {total:g}, not 1")
        if self.composite == "weighted_mean" and any(c.weight is not None for c in self.criteria) and \
                sum(c.weight or 0.0 for c in self.criteria) <= 0:
            raise ValueError("weights sum to 0")
        labels = [b.label for b in self.bands]
        if len(set(labels)) != len(labels):
            raise ValueError("duplicate verdict band labels")
        if self.actions_from is not None and self.actions_from not in labels:
            raise ValueError(f"actions_from '{self.actions_from}' is not a band label")
        return self

    # -- derived ---------------------------------------------------------------------------------------
    def criterion_scale(self, c: Criterion) -> str:
        return c.scale or self.scale

    def weight_of(self, c: Criterion) -> float:
        """The effective weight in the composite (equal weights when the rubric gives none)."""
        if c.weight is not None:
            return c.weight
        if any(x.weight is not None for x in self.criteria):
            return 0.0
        return 1.0 / len(self.criteria)

    def composite_of(self, raw: dict[str, float]) -> float:
        """The composite on the rubric's scale from raw criterion scores (every criterion present)."""
        return composite(self.composite, [(self.weight_of(c), raw[c.id]) for c in self.criteria])

    def composite_normalised(self, raw: dict[str, float]) -> float:
        """The composite as a 0-1 score (the result row's ``score``)."""
        return composite_normalised(self.composite, [(self.weight_of(c), normalise(raw[c.id], self.criterion_scale(c)))
                                                     for c in self.criteria])

    def band_for(self, composite: float) -> Band | None:
        """Half-open bands: the highest band whose ``min`` the composite reaches."""
        for b in sorted(self.bands, key=lambda b: b.min, reverse=True):
            if composite >= b.min - 1e-9:
                return b
        return None

    def needs_actions(self, label: str | None) -> bool:
        if self.actions_from is None or label is None:
            return False
        order = sorted(self.bands, key=lambda b: b.min)
        threshold = next(b.min for b in order if b.label == self.actions_from)
        band = next((b for b in order if b.label == label), None)
        return band is not None and band.min <= threshold
