"""Agent trajectories: one normalised model and importers from the formats agents actually produce."""

from .importers import (
    FORMATS,
    detect_format,
    from_anthropic,
    from_openai,
    from_otel,
    from_seed,
    import_trajectory,
    trajectory_of,
)
from .model import Step, Trajectory, TrajectoryError

__all__ = [
    "FORMATS", "Step", "Trajectory", "TrajectoryError", "detect_format", "from_anthropic", "from_openai",
    "from_otel", "from_seed", "import_trajectory", "trajectory_of",
]
