"""Statistics: bootstrap and Wilson intervals, paired tests, multiple-comparison control, agreement."""

from .bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED, Interval, bootstrap_ci, bootstrap_stat
from .counts import bootstrap_means, mean_interval
from .intervals import wilson_interval
from .multiple import benjamini_hochberg
from .paired import McNemarResult, PairedResult, mcnemar_exact, paired_bootstrap
from .power import cases_needed, min_detectable_drop

__all__ = [
    "DEFAULT_N_BOOT",
    "DEFAULT_SEED",
    "Interval",
    "McNemarResult",
    "PairedResult",
    "benjamini_hochberg",
    "bootstrap_ci",
    "bootstrap_means",
    "bootstrap_stat",
    "cases_needed",
    "mcnemar_exact",
    "mean_interval",
    "min_detectable_drop",
    "paired_bootstrap",
    "wilson_interval",
]
