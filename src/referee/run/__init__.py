"""The one place that turns cases + evaluators (+ targets) into rows: manifests, judge binding, engine choice,
the target step, resume, totals and the sync bridge. Every entry point (each CLI command, ``referee.evaluate``,
the ``grade``/``compare`` functions, ``run_targets``, ``redteam run``, ``assert_eval``) calls into it.

Private: users reach it through ``referee``'s top-level names (``evaluate``, ``grade``, ``run_targets``, ...);
the engines are public as ``referee.run.engines``."""

__all__: list[str] = []
