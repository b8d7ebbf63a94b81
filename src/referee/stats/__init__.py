"""Statistics: bootstrap and Wilson intervals, paired tests, multiple-comparison control, agreement."""

from .bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED, Interval, bootstrap_ci, bootstrap_stat

__all__ = ["DEFAULT_N_BOOT", "DEFAULT_SEED", "Interval", "bootstrap_ci", "bootstrap_stat"]
