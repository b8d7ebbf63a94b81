"""Aligned judges as files: versioned, unknown fields refused, with the provenance that says what they were
fitted on and for which judge."""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import InputError, UserError
from ._map import ScoreMap

SCHEMA_VERSION: Literal[1] = 1
MAX_FILE_BYTES = 16 * 2**20


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class JudgeRef(_Strict):
    """The judge an alignment was fitted for: its rows' provider, model and prompt template hash."""

    provider: str | None = None
    model: str | None = None
    template_hash: str | None = None
    evaluator: str | None = None


class MapSpec(_Strict):
    knots: list[tuple[float, float]]
    levels: list[float] | None = None
    pass_mark: float | None = None
    """The lowest judge score (its own scale) whose mapped value passes: the threshold to run the judge with."""
    human_scale: tuple[float, float] | None = None
    """The labels' declared scale, when they were mapped onto 0-1 from it."""

    @field_validator("knots")
    @classmethod
    def _monotone(cls, knots: list[tuple[float, float]]) -> list[tuple[float, float]]:
        if not knots:
            raise ValueError("a map needs at least one knot")
        for (x0, y0), (x1, y1) in zip(knots, knots[1:], strict=False):
            if x1 <= x0 or y1 < y0:
                raise ValueError("knots must rise in the judge's score and never fall in the mapped value")
        return knots

    def score_map(self) -> ScoreMap:
        return ScoreMap(knots=[tuple(k) for k in self.knots], levels=self.levels)  # type: ignore[misc]


class Example(_Strict):
    """A labelled case shown to the judge before the case it grades."""

    id: str
    label: float
    rationale: str | None = None
    case: dict[str, str] = Field(default_factory=dict)
    """The fields shown (input, output, reference), as text."""


class LabelsRef(_Strict):
    path: str
    sha256: str
    n: int
    reviewers: list[str]
    no_consensus: int


class SplitRef(_Strict):
    seed: int
    holdout: float
    grouped: bool
    heldout_ids: list[str]


class AlignedJudge(_Strict):
    """One aligned judge. ``hash`` names it in rows and logs."""

    schema_version: Literal[1] = SCHEMA_VERSION
    kind: Literal["referee.aligned_judge"] = "referee.aligned_judge"
    method: list[str]
    judge: JudgeRef
    prompt: str | None = None
    """The rubric or template (``prompt_part``) as the instructions method rewrote it (None: the judge's own)."""
    prompt_part: Literal["rubric", "template"] | None = None
    prompt_diff: str | None = None
    """The rewrite as a unified diff against the judge's own rubric or template."""
    label_kind: Literal["binary", "ordinal", "continuous"] = "binary"
    """How the examples' labels are shown to the judge (pass/fail, or a score)."""
    examples: list[Example] = Field(default_factory=list)
    map: MapSpec | None = None
    labels: LabelsRef
    split: SplitRef
    optimizer_model: str | None = None
    heldout: dict[str, Any]
    """The held-out figures of the procedure that produced this judge (before the refit on all labels)."""

    @property
    def hash(self) -> str:
        text = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), allow_nan=False)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def map_score(self, raw: float) -> float:
        """The raw judge score on the human scale (the raw score itself without a map)."""
        return raw if self.map is None else float(self.map.score_map()([raw])[0])

    @property
    def changes_prompt(self) -> bool:
        return bool(self.examples) or self.prompt is not None

    def apply(self, evaluator: Any) -> Any:
        """``evaluator`` (the suite entry's judge) with this alignment's examples and rewritten rubric or template
        in its prompt; unchanged when the alignment is a score map only."""
        if not self.changes_prompt:
            return evaluator
        from ._prompt import aligned_judge

        return aligned_judge(evaluator, examples=[e.model_dump() for e in self.examples], kind=self.label_kind,
                             part=self.prompt_part, text=self.prompt)

    def save(self, path: str | Path) -> Path:
        p = Path(path)
        text = json.dumps(self.model_dump(mode="json"), indent=2, allow_nan=False) + "\n"
        p.write_text(text, encoding="utf-8")
        return p

    def check_judge(self, judge: JudgeRef, *, force: bool = False) -> None:
        """Refuse (or with ``force`` warn about) a judge other than the one this alignment was fitted for."""
        diffs = [f"{k} {getattr(self.judge, k)!r} (fitted) vs {getattr(judge, k)!r}"
                 for k in ("provider", "model", "template_hash")
                 if getattr(self.judge, k) is not None and getattr(judge, k) is not None
                 and getattr(self.judge, k) != getattr(judge, k)]
        if not diffs:
            return
        msg = f"the aligned judge {self.hash} was fitted for another judge: {'; '.join(diffs)}"
        if not force:
            raise UserError(msg + " (refit it on this judge's scores, or run with --force-aligned to use it anyway)")
        warnings.warn(msg + " (used anyway: --force-aligned)", UserWarning, stacklevel=2)


def load_aligned(path: str | Path) -> AlignedJudge:
    """Read an aligned judge file: an unknown schema version or field is an error naming the file and field."""
    p = Path(path)
    if not p.is_file():
        raise InputError("aligned judge file not found", file=str(p))
    if p.stat().st_size > MAX_FILE_BYTES:
        raise InputError("larger than an aligned judge file can be", file=str(p))
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"not JSON ({exc})", file=str(p)) from None
    if not isinstance(data, dict):
        raise InputError("expected a JSON object", file=str(p))
    if data.get("schema_version") != SCHEMA_VERSION:
        raise InputError(f"schema_version {data.get('schema_version')!r} is not one this referee reads "
                         f"({SCHEMA_VERSION})", file=str(p), field="schema_version")
    try:
        return AlignedJudge.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise InputError(err["msg"], file=str(p), field=where) from None
