"""A suite with ``targets:``: every target generates the outputs, the suite's evaluators judge them, one results
file per target under the run's output folder (``<out>/<id>.jsonl`` + manifest, ``<out>/<id>.outputs.jsonl``).

This drives the suite runner as it is today (``suites.runner.CaseEvaluator`` + ``runner.session.execute``);
generation is a wrapper around the per-case evaluation, so moving onto another runner only swaps those two.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..results.manifest import text_sha256
from ..results.schema import TargetInfo
from ..runner.session import Outcome, error_row, execute
from ._kinds import Target
from ._run import GenerationStats, TargetRun, config_sha256, outputs_path, target_info
from .loader import build_target
from .model import TargetSpec


@dataclass
class TargetOutcome:
    target: TargetInfo
    results: Path
    outputs: Path
    outcome: Outcome
    generation: GenerationStats
    notes: list[str]


def build_targets(specs: Sequence[TargetSpec], base: Path, *, use_cache: bool = True,
                  batch: bool = False) -> list[Target]:
    """Every target built before any call: a module that does not import or a missing key stops the run here.
    ``batch``: model targets generate through their provider's batch API (``--batch``)."""
    return [build_target(s, base, use_cache=use_cache, batch=batch) for s in specs]


def run_suite_targets(suite: Any, targets: Sequence[Target], out_dir: Path, *,
                      bind: Callable[[Any], tuple[Any, Any]], concurrency: int, command: list[str],
                      judge_config: Any = None, engine: Any = None) -> list[TargetOutcome]:
    """Run ``suite`` once per target. ``bind(suite) -> (suite with its LLM evaluators bound, judge client or
    None)`` is called per target: each run owns (and closes) its client. Generation runs here; the generated
    cases are evaluated where ``engine`` says (``referee.engines``: this process, or a Ray cluster)."""
    from ..engines import get_engine
    from ..suites.runner import EVALUATOR_LABEL, build_manifest

    eng = get_engine(engine)

    out_dir.mkdir(parents=True, exist_ok=True)
    results = []
    for target in targets:
        bound, client = bind(suite)
        run = TargetRun.open(target, out_dir, concurrency)
        manifest = build_manifest(bound, command=command, judge_config=judge_config)
        info = target_info(target)
        cfg = config_sha256(target)
        manifest.extra["target"] = {**info.model_dump(exclude_none=True), "config_sha256": cfg}
        manifest.extra["config_hash"] = text_sha256(str(manifest.extra.get("config_hash", "")) + cfg)
        manifest.system_under_test = info.model

        def on_error(c: Any, exc: BaseException, target: Target = target) -> Any:
            row = error_row(c.id, exc, evaluator=EVALUATOR_LABEL, category=c.category)
            return row.model_copy(update={"target": target_info(target)})

        path = out_dir / f"{target.id}.jsonl"
        target_batch = getattr(getattr(target, "client", None), "batch", None)
        if target_batch is not None:  # --batch: the target's jobs go in the manifest too, so a rerun resumes them
            target_batch.attach(manifest.extra.setdefault("batch_jobs", []),
                                save=lambda m=manifest, p=path: m.write(p))
        notes = [run.store.note] if run.store.note else []
        in_flight = max(concurrency, target.spec.concurrency or 0)
        with eng.start(bound, client=client, concurrency=in_flight) as where:
            evaluate = run.evaluator(where.evaluate, EVALUATOR_LABEL)
            outcome = execute(out=path, manifest=manifest, items=bound.cases, key=lambda c: (c.id, None, None),
                              evaluate=evaluate, on_error=on_error, client=client,
                              concurrency=max(in_flight, where.concurrency),
                              label=f"{target.id}: generating + judging", cleanup=run.aclose)
        if outcome.resume_note:
            notes.append(outcome.resume_note)
        g = run.stats
        outcome.manifest.extra["generation"] = {
            "generated": g.generated, "reused": g.reused, "failed": g.failed, "cost_usd": g.cost_usd,
            "provider_calls": g.calls, "cached_calls": g.cached_calls}
        judge_costs = [r.details.get("judge_cost_usd") for r in outcome.rows]
        outcome.manifest.extra["judge_cost_usd"] = (round(sum(c for c in judge_costs if c is not None), 10)
                                                    if any(c is not None for c in judge_costs) else None)
        outcome.manifest.write(path)
        results.append(TargetOutcome(target=info, results=path, outputs=outputs_path(out_dir, target.id),
                                     outcome=outcome, generation=g, notes=notes))
    return results
