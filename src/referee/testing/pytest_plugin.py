"""pytest plugin for referee (registered through the ``pytest11`` entry point): keep evals beside unit tests.

Fixtures:

* ``referee_suite(path_or_mapping, base_dir=None)`` -> a loaded :class:`~referee.suites.Suite`.
* ``fake_judge(replies)`` -> a :class:`~referee.runner.JudgeClient` over
  :class:`~referee.testing.FakeProvider` (no network), to test LLM evaluators deterministically.
* ``assert_eval`` -> :func:`assert_eval` with ``out`` defaulting to a file in ``tmp_path``.

:func:`assert_eval` runs a suite (or cases + evaluators) through the same runner as ``referee run`` and the
same gates as ``referee score``, and fails the test with the failing cases and gates. This module is
imported by every pytest run, so it imports referee itself only inside the fixtures.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import RefereeError

if TYPE_CHECKING:
    from ..results._schema import ResultRow
    from ..runner import JudgeClient
    from ..suites import Suite


class EvalFailed(RefereeError, AssertionError):
    """An ``assert_eval`` gate failed; ``rows`` holds every result row."""

    def __init__(self, message: str, rows: list[ResultRow]) -> None:
        super().__init__(message)
        self.rows = rows


def _as_suite(suite: Any, cases: Any, evaluators: Any, base_dir: Path | None) -> Suite:
    from ..suites import Suite as _Suite
    from ..suites._loader import load_suite, suite_from_dict

    if isinstance(suite, _Suite):
        return suite
    if isinstance(suite, str | Path):
        return load_suite(suite)
    data: dict[str, Any] = dict(suite or {})
    if cases is not None:
        data["cases"] = [dict(c) for c in cases] if not isinstance(cases, str | Path) else str(cases)
    if evaluators is not None:
        data["evaluators"] = list(evaluators)
    return suite_from_dict(data, base_dir or Path.cwd())


def assert_eval(suite: Any = None, *, cases: Sequence[dict[str, Any]] | str | Path | None = None,
                evaluators: Sequence[Any] | None = None, judge: JudgeClient | None = None,
                threshold: float | None = None, fail_under: float | None = None, out: str | Path | None = None,
                base_dir: str | Path | None = None, store: str | bool | None = None, tags: Sequence[str] = (),
                **gates: Any) -> list[ResultRow]:
    """Evaluate and gate; returns the rows, raises :class:`EvalFailed` (an AssertionError) when a gate fails
    or nothing was graded.

    ``suite`` is a suite file, a mapping like one, or a loaded Suite; or give ``cases`` and ``evaluators``
    (entries as in a suite file: ``"is_json"``, ``{"regex": {"pattern": "..."}, "critical": True}``).
    Gates: the suite's own, overridden by ``fail_under`` and any other ``referee score`` gate given as a
    keyword (``fail_if_unscored_above=0``, ``baseline="main.jsonl"``, ...). With no gate at all, as with
    ``referee run``, the run passes when something was graded: give ``fail_under=1.0`` for "every case must
    pass". A run that graded nothing fails whatever the gates (the verdict rule). ``judge`` binds LLM
    evaluators to a client (e.g. the ``fake_judge`` fixture's). The run is recorded in the run history as
    ``referee.evaluate`` records it: ``store=`` (a URL or file, False for none) and ``tags=``.
    """
    import asyncio
    import dataclasses
    import tempfile

    from ..evaluators._base import JudgeSettings
    from ..results._io import ResultWriter
    from ..run._case import CaseEvaluator
    from ..run._suite import EVALUATOR_LABEL, bind_settings, build_manifest
    from ..runner._session import error_row, execute_async
    from ..store import scope
    from ..suites._gating import gate_verdicts

    s = _as_suite(suite, cases, evaluators, Path(base_dir) if base_dir else None)
    if judge is not None:
        s = bind_settings(s, JudgeSettings(client=judge))
    if threshold is not None:
        s = dataclasses.replace(s, scoring=s.scoring.model_copy(update={"threshold": threshold}))
    updates = dict(gates)
    if fail_under is not None:
        updates["fail_under"] = fail_under
    g = s.gates.model_validate({**s.gates.model_dump(), **updates}) if updates else s.gates

    ce = CaseEvaluator(s)

    manifest = build_manifest(s, command=["assert_eval", s.name])

    async def _all() -> list[ResultRow]:
        async def close_judge() -> None:
            if judge is not None:  # its connections belong to this call's own event loop: closed before it ends
                await judge.provider.aclose()

        # The one runner (rows recorded in the run history like every entry point's), all cases at once.
        with scope(store, tags):
            outcome = await execute_async(
                out=None, manifest=manifest, items=s.cases, key=lambda c: (c.id, None, None), evaluate=ce.evaluate,
                on_error=lambda c, exc: error_row(c.id, exc, evaluator=EVALUATOR_LABEL, category=c.category),
                client=None, concurrency=max(1, len(s.cases)), label="evaluating", show_progress=False,
                cleanup=close_judge)
        order = {c.id: i for i, c in enumerate(s.cases)}
        return sorted(outcome.rows, key=lambda r: order.get(r.id, len(order)))

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        rows = asyncio.run(_all())
    else:  # called from an async test: run on a loop of our own in a helper thread
        import concurrent.futures

        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            rows = pool.submit(asyncio.run, _all()).result()
    with tempfile.TemporaryDirectory(prefix="referee-eval-") as tmp:
        path = Path(out) if out is not None else Path(tmp) / "results.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        with ResultWriter(path, append=False) as w:
            for r in rows:
                w.write(r)
        code, verdicts = gate_verdicts(path, g, threshold=s.scoring.threshold, base_dir=s.base_dir,
                                       candidate=manifest)
    if code != 0:
        failed = [v for v in verdicts if v.failed]
        bad = [r for r in rows if r.status != "scored" or not (r.score is not None and
                                                             r.score >= (g.threshold or s.scoring.threshold))]
        lines = [f"{s.name}: {len(failed)} gate(s) failed"]
        lines += [f"  {v.flag}: {v.message}" for v in failed]
        lines += [f"  case {r.id} ({r.status}, score {r.score}): {r.rationale or r.error}" for r in bad[:10]]
        if len(bad) > 10:
            lines.append(f"  ... and {len(bad) - 10} more")
        raise EvalFailed("\n".join(lines), rows)
    return rows


@pytest.fixture
def referee_suite() -> Callable[..., Suite]:
    """Load a suite from a file or a mapping: ``referee_suite("evals/suite.yaml")``."""

    def load(source: Any, base_dir: str | Path | None = None) -> Suite:
        return _as_suite(source, None, None, Path(base_dir) if base_dir else None)

    return load


@pytest.fixture
def fake_judge() -> Callable[..., JudgeClient]:
    """``fake_judge(['{"overall_score": 0.9}'])`` or ``fake_judge(lambda request: ...)``: a judge client that
    answers from the given replies, with no network and no cache."""
    from ..providers._fake import FakeProvider
    from ..runner import JudgeClient

    def make(replies: Any = ('{"overall_score": 1.0}',), **kwargs: Any) -> JudgeClient:
        return JudgeClient(FakeProvider(replies, **kwargs), cache=None)

    return make


@pytest.fixture(name="assert_eval")
def assert_eval_fixture(tmp_path: Path) -> Callable[..., list[ResultRow]]:
    """:func:`assert_eval`, writing its results to ``tmp_path / "referee_results.jsonl"`` unless told."""

    def run(*args: Any, **kwargs: Any) -> list[ResultRow]:
        kwargs.setdefault("out", tmp_path / "referee_results.jsonl")
        return assert_eval(*args, **kwargs)

    return run
