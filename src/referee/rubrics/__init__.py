"""Rubrics as data: YAML files describing criteria, scales, composites, pass rules and verdict bands."""

from ._loader import (
    RubricInfo,
    list_rubrics,
    load_rubric,
    parse_rubric,
    read_text_file,
    rubric_hash,
    rubric_source,
)
from ._model import SCALES, UNGROUNDED_MODES, Band, Criterion, Rubric, normalise

__all__ = [
    "Band",
    "Criterion",
    "Rubric",
    "RubricInfo",
    "SCALES",
    "UNGROUNDED_MODES",
    "list_rubrics",
    "load_rubric",
    "normalise",
    "parse_rubric",
    "read_text_file",
    "rubric_hash",
    "rubric_source",
]
