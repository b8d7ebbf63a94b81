"""Agent trajectories: one normalised model and importers from the formats agents actually produce."""

from ._importers import (
    FORMATS,
    detect_format,
    from_anthropic,
    from_openai,
    from_otel,
    from_seed,
    import_trajectory,
    trajectory_of,
)
from ._model import Step, Trajectory, TrajectoryError
from ._otel import (
    GENAI_CONVENTIONS,
    OPENINFERENCE_CONVENTIONS,
    SpanView,
    case_from_span,
    case_from_spans,
    follows_convention,
    span_view,
)
from ._runs import ImportedRuns, import_runs

__all__ = [
    "FORMATS", "GENAI_CONVENTIONS", "ImportedRuns", "OPENINFERENCE_CONVENTIONS", "SpanView", "Step", "Trajectory",
    "TrajectoryError", "case_from_span", "case_from_spans", "detect_format", "follows_convention", "from_anthropic",
    "from_openai", "from_otel", "from_seed", "import_runs", "import_trajectory", "span_view", "trajectory_of",
]
