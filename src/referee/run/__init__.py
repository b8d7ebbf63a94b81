"""The one place that turns cases + evaluators (+ targets) into rows: manifests, judge binding, engine choice,
the target step, resume, totals and the sync bridge. Every entry point (each CLI command, ``referee.evaluate``,
the ``grade``/``compare`` functions, ``run_targets``, ``redteam run``, ``assert_eval``) calls into it.

Users reach it through ``referee``'s top-level names (``evaluate``, ``grade``, ``run_targets``, ...); the
names below are what the CLI needs beyond those, and the engines are ``referee.run.engines``."""

from typing import TYPE_CHECKING

from .._util._moved import forward

if TYPE_CHECKING:  # the lazy names below, typed for type checkers and editors
    from ._suite import bind_settings, run_suite

# Loaded on first use: the runner imports the evaluators, the engines and the targets.
_NAMES = {
    "bind_settings": "referee.run._suite",
    "run_suite": "referee.run._suite",
}
__getattr__ = forward(__name__, _NAMES)

__all__ = ["bind_settings", "run_suite"]
