"""Red teaming: labelled adversarial cases (generator + seed cases and templates shipped as package data),
deterministic checks of the expected behaviour, and the red-team judge."""

from .generator import BEHAVIOURS, FAILURE_MODES, SURFACES, generate, load_seeds, load_templates, write_cases

__all__ = ["BEHAVIOURS", "FAILURE_MODES", "SURFACES", "generate", "load_seeds", "load_templates", "write_cases"]
