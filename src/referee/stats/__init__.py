"""Statistics: bootstrap and Wilson intervals, paired tests, multiple-comparison control, agreement.

The agreement statistics load on first use: they import scipy.stats (about 0.5 s), which `referee score`,
`referee view` and the judging commands never need.
"""

from typing import TYPE_CHECKING, Any

from ._bootstrap import DEFAULT_N_BOOT, DEFAULT_SEED, Interval, bootstrap_ci, bootstrap_stat
from ._counts import bootstrap_means, mean_interval
from ._intervals import wilson_interval
from ._multiple import benjamini_hochberg
from ._paired import McNemarResult, PairedResult, mcnemar_exact, paired_bootstrap
from ._power import cases_needed, min_detectable_drop
from ._ranking import Leaderboard, Standing, leaderboard, win_rate

if TYPE_CHECKING:  # the lazy names below, typed for type checkers and editors
    from ._agreement import Agreement, agreement, cohen_kappa, correlation, correlation_ci, kappa_ci

_LAZY = dict.fromkeys(("Agreement", "agreement", "cohen_kappa", "correlation", "correlation_ci", "kappa_ci"),
                      "._agreement")

__all__ = [
    "Agreement",
    "DEFAULT_N_BOOT",
    "DEFAULT_SEED",
    "Interval",
    "Leaderboard",
    "McNemarResult",
    "PairedResult",
    "Standing",
    "agreement",
    "benjamini_hochberg",
    "bootstrap_ci",
    "bootstrap_means",
    "bootstrap_stat",
    "cases_needed",
    "cohen_kappa",
    "correlation",
    "correlation_ci",
    "kappa_ci",
    "leaderboard",
    "mcnemar_exact",
    "mean_interval",
    "min_detectable_drop",
    "paired_bootstrap",
    "wilson_interval",
    "win_rate",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
