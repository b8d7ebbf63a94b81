""":func:`run_redteam`: the agent's replies to adversarial cases checked by code (leaked canaries, forbidden
tools, refusal or compliance as labelled), and by the red-team judge where code cannot tell (``referee
redteam run`` is one call of it). Results are adversarial: reported per attack type, never blended with
correctness.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..cases._case import Case, load_cases
from ..errors import UserError
from ..results._manifest import RunManifest, TemplateInfo, text_sha256
from ..results._schema import ResultRow
from ._evaluate import EvalResult
from ._judge import as_judge, sync_twin

if TYPE_CHECKING:
    from ..providers._base import Provider
    from ._judge import Judge

REPLY_KEYS = ("output", "final_output", "trajectory", "messages", "spans", "trajectory_format", "final_state",
              "cost_usd", "latency_ms")
"""The fields of a reply (``outputs=``) that replace the case's own."""


@dataclass
class RedteamRun:
    """The outcome of :func:`run_redteam`."""

    result: EvalResult
    """The rows (one per case), the manifest (``adversarial: true``) and the summary."""
    target_id: str | None = None
    """The target that answered the cases (``target=``), if any."""
    failed_generations: int = 0
    """Cases the target could not answer (error rows)."""

    @property
    def passed(self) -> bool:
        """The verdict rule (``result.passed``: something was graded and every gate passed), and every
        generation by the target succeeded (``referee redteam run``'s exit 0)."""
        return self.result.passed and self.failed_generations == 0


def merge_replies(cases: list[Case], outputs: str | Path | None,
                  on_note: Callable[[str], None] | None = None) -> list[Case]:
    """``cases`` with the agent's recorded replies of ``outputs`` (JSONL ``{id, output, trajectory?|messages?}``)
    merged in; reply ids matching no case are reported to ``on_note``."""
    if outputs is None:
        return cases
    replies = {c.id: c for c in load_cases(outputs)}
    unknown = sorted(set(replies) - {c.id for c in cases})
    if unknown and on_note is not None:
        on_note(f"warning: {len(unknown)} reply id(s) in {outputs} match no case: {', '.join(unknown[:5])}")
    merged = []
    for c in cases:
        r = replies.get(c.id)
        if r is None:
            merged.append(c)
            continue
        data = {**c.data, **{k: r.data[k] for k in REPLY_KEYS if k in r.data}}
        merged.append(Case(id=c.id, data=data, source=c.source, line=c.line))
    return merged


def load_target(path: str | Path, target_id: str | None = None) -> Any:
    """The one target of a targets file (or a suite with ``targets:``); ``target_id`` picks among several."""
    from ..targets._loader import build_target, load_target_file, select

    specs, base = load_target_file(str(path))
    if target_id is not None:
        specs = select(specs, [target_id])
    elif len(specs) > 1:
        raise UserError(f"{path} has {len(specs)} targets ({', '.join(s.id for s in specs)}): pick one with "
                        "--target-id")
    return build_target(specs[0], base)


async def run_redteam_async(
    cases: Any,
    judge: Judge | str | Provider | None = None,
    *,
    out: str | Path,
    outputs: str | Path | None = None,
    target: str | Path | None = None,
    target_id: str | None = None,
    concurrency: int | None = None,
    system_model: str | None = None,
    on_invalid: Callable[[str], None] | None = None,
    on_note: Callable[[str], None] | None = None,
    progress: bool | None = None,
    command: list[str] | None = None,
) -> RedteamRun:
    """:func:`run_redteam` for async code."""
    from ..evaluators._base import result_row
    from ..evaluators._redteam import RedteamCheck, RedteamJudge
    from ..runner._session import error_row, execute_async
    from ._grade import _cases_sha256, unique_cases

    source, case_list, skipped = unique_cases(cases, on_invalid=on_invalid)
    built_target = None
    if target is not None:
        if outputs is not None:
            raise UserError("give --target (referee runs the agent) or --outputs (its recorded replies), not both")
        built_target = load_target(target, target_id)
    case_list = merge_replies(case_list, outputs, on_note)
    if built_target is None and not any(c.output is not None for c in case_list):
        raise UserError(f"no case in {source} has an output (the agent's reply): record them in the cases or pass "
                        "--outputs replies.jsonl")
    j = as_judge(judge) if judge is not None else None
    client = j.client() if j is not None else None
    rj = RedteamJudge().bound(j.settings(client)) if j is not None and client is not None else None
    manifest = RunManifest.for_cases(
        "redteam", source, [c.id for c in case_list], command=command or ["referee.redteam.run_redteam"],
        sha256=_cases_sha256(cases, case_list), adversarial=True, judge=j.config(client.provider.model) if j is not None and client is not None else None,
        system_under_test=system_model)
    if rj is not None:
        manifest.template = TemplateInfo(sha256=rj.template_hash or "")
    manifest.extra["config_hash"] = text_sha256(f"outputs={outputs}|judge={j is not None}")
    manifest.extra["note"] = "adversarial results: report per attack type, never blended with correctness"
    in_flight = concurrency or (j.concurrency if j is not None else 8)
    out_p = Path(out)
    out_p.parent.mkdir(parents=True, exist_ok=True)
    run = None
    if built_target is not None:
        from ..targets._run import TargetRun, config_sha256, target_info

        run = TargetRun.open(built_target, out_p.parent, in_flight,
                             outputs=out_p.with_name(out_p.name.removesuffix(".jsonl") + ".outputs.jsonl"))
        info = target_info(built_target)
        manifest.extra["target"] = {**info.model_dump(exclude_none=True), "config_sha256": config_sha256(built_target)}
        manifest.extra["config_hash"] = text_sha256(manifest.extra["config_hash"] + config_sha256(built_target))
        manifest.system_under_test = info.model
        if run.store.note and on_note is not None:
            on_note(run.store.note)

    check = RedteamCheck(judge=rj)

    async def evaluate(case: Case) -> ResultRow:
        return result_row(case, await check.evaluate_async(case, case.output), evaluator=check.evaluator,
                          category=case.category)

    outcome = await execute_async(
        out=out_p, manifest=manifest, items=case_list, key=lambda c: (c.id, None, None),
        evaluate=run.evaluator(evaluate, "redteam") if run is not None else evaluate,
        on_error=lambda c, exc: error_row(c.id, exc, evaluator="redteam", category=c.category),
        client=client, concurrency=in_flight, label="red team", skipped=skipped, show_progress=progress,
        cleanup=run.aclose if run is not None else None)
    result = EvalResult(rows=outcome.rows, manifest=outcome.manifest, cases=case_list, path=out_p,
                        new_rows=outcome.new_rows, resume_note=outcome.resume_note)
    return RedteamRun(result=result, target_id=built_target.id if built_target is not None else None,
                      failed_generations=run.stats.failed if run is not None else 0)


run_redteam = sync_twin(
    run_redteam_async,
    """Check the agent's replies to adversarial ``cases`` (from ``redteam generate``); rows go to ``out`` as
    they complete (its manifest says ``adversarial: true``) and a rerun resumes.

    Args:
        cases: a path, a list of dicts or a DataFrame; a duplicate id goes to ``on_invalid`` and is skipped.
        judge: also ask the red-team judge where code cannot tell a refusal from compliance (None: code only).
        outputs: the agent's recorded replies (JSONL ``{id, output, trajectory?|messages?}``) to merge in.
        target: instead, a targets file (or a suite with ``targets:``) whose target answers every case (its
            ``setup`` applied); ``target_id`` picks one of several.
        concurrency: cases in flight (default: the judge's, else 8).
        on_note: warnings and notes as they arise (reply ids that match no case, the target's outputs file).
    """,
)
