"""Judge alignment: fit a judge to a team's labels on some cases, measure it on the others, and keep it only
when the held-out gain over the raw judge and over a no-judge baseline is above zero with its interval.

``align`` (a run's results file + a labels file -> :class:`Alignment`), ``align_values`` (the same on values
already read), :class:`AlignedJudge` (the file: ``save``, ``load_aligned``, ``map_score``) and
``read_human_labels`` (each reviewer's labels and their consensus)."""

from ._align import (
    DEFAULT_EXAMPLES,
    DEFAULT_HOLDOUT,
    DEFAULT_TARGET_WIDTH,
    METHODS,
    MIN_LABELS,
    Alignment,
    align,
    align_values,
    methods_in_order,
)
from ._estimate import estimate_alignment
from ._figures import METRICS, Figures
from ._file import SCHEMA_VERSION, AlignedJudge, JudgeRef, load_aligned
from ._labels import HumanLabels, read_human_labels
from ._map import ScoreMap, fit_map
from ._prompt import MAX_EXAMPLES, AlignedLLMJudge
from ._rejudge import MAX_CANDIDATES, JudgeRunner
from ._split import Split, held_out_split

__all__ = [
    "AlignedJudge",
    "AlignedLLMJudge",
    "Alignment",
    "DEFAULT_EXAMPLES",
    "DEFAULT_HOLDOUT",
    "DEFAULT_TARGET_WIDTH",
    "Figures",
    "HumanLabels",
    "JudgeRef",
    "JudgeRunner",
    "MAX_CANDIDATES",
    "MAX_EXAMPLES",
    "METHODS",
    "METRICS",
    "MIN_LABELS",
    "SCHEMA_VERSION",
    "ScoreMap",
    "Split",
    "align",
    "align_values",
    "estimate_alignment",
    "fit_map",
    "held_out_split",
    "load_aligned",
    "methods_in_order",
    "read_human_labels",
]
