"""Rubrics as data: YAML files describing criteria, scales, composites, pass rules and verdict bands."""

from ._loader import RubricInfo, list_rubrics, load_rubric, parse_rubric, rubric_source
from ._model import SCALES, Band, Criterion, Rubric, normalise

__all__ = [
    "Band", "Criterion", "Rubric", "RubricInfo", "SCALES", "list_rubrics", "load_rubric", "normalise",
    "parse_rubric", "rubric_source",
]
