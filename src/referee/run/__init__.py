"""The one place that turns cases + evaluators (+ targets) into rows: manifests, judge binding, engine choice,
the target step, resume, totals and the sync bridge. Every entry point (each CLI command, ``referee.evaluate``,
the ``grade``/``compare`` functions, ``run_targets``, ``redteam run``, ``assert_eval``) calls into it.

Users reach it through ``referee``'s top-level names (``evaluate``, ``grade``, ``run_targets``, ...); the
names below are what the CLI needs beyond those, and the engines are ``referee.run.engines``."""

from .._util._moved import forward

# Loaded on first use: the runner imports the evaluators, the engines and the targets.
_NAMES = {
    "bind_settings": "referee.run._suite",
    "run_suite": "referee.run._suite",
}
__getattr__ = forward(__name__, _NAMES)

__all__ = sorted(_NAMES)
