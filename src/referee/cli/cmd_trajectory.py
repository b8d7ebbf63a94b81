"""``referee trajectory CASES --out R``: check agent trajectories by code, or grade them with the judge."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..cases import Case
from ..errors import InputError, UserError
from ..evaluators._base import build
from ..evaluators._trajectory import TrajectoryCheck, check_row
from ..evaluators._trajectory_judge import TRAJECTORY_CRITERIA, TrajectoryJudge
from ..results._manifest import TemplateInfo, text_sha256
from ..runner._session import error_row, execute
from ._agents import ensure_parent, new_manifest, read_criteria, read_yaml, summarise, unique_cases
from ._common import JudgeOptions, build_client, echo_err, judge_options


def _read_checks(path: str | None, cap: float | None) -> tuple[dict[str, Any], str]:
    data: dict[str, Any] = {}
    text = ""
    if path is not None:
        loaded = read_yaml(path)
        text = Path(path).read_text(encoding="utf-8")
        if isinstance(loaded, list):  # a bare list of check names
            loaded = {"checks": loaded}
        if not isinstance(loaded, dict):
            raise InputError("expected a mapping with 'checks', 'options' and/or 'cap'", file=path)
        data = loaded
    if cap is not None:
        data["cap"] = cap
    return data, text


@click.command("trajectory")
@click.argument("cases", type=click.Path(dir_okay=False))
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False), help="Results JSONL.")
@click.option("--checks", "checks_file", type=click.Path(dir_okay=False), default=None,
              help="YAML: {checks: [names], options: {check: {...}}, cap: 0.5}. Default: every check whose "
                   "expectation a case states (its 'expect' block), plus loop and error-handling checks.")
@click.option("--cap", type=click.FloatRange(0, 1), default=None,
              help="Highest score when a process check fails, even with a correct final answer (default 0.5).")
@click.option("--judge", "use_judge", is_flag=True,
              help="Grade with the trajectory judge (tool selection, arguments, efficiency, final output) "
                   "instead of the deterministic checks.")
@click.option("--criteria", "criteria_file", type=click.Path(dir_okay=False), default=None,
              help="With --judge: YAML mapping criterion id -> description (replaces the default rubric).")
@click.option("--max-chars", type=click.IntRange(20), default=200, show_default=True,
              help="With --judge: arguments and results longer than this are truncated in the prompt.")
@click.option("--category", default=None, help="Category for every row (default: each case's own).")
@judge_options(default_concurrency=8)
def command(cases: str, out: str, checks_file: str | None, cap: float | None, use_judge: bool,
            criteria_file: str | None, max_chars: int, category: str | None, judge: JudgeOptions) -> int:
    """Evaluate agent trajectories in CASES (seed shape, OpenAI / Anthropic messages or OTel GenAI spans).

    Without --judge no API key is needed: the checks run on each case's 'expect' block. A case whose
    trajectory cannot be read is an error row naming the case and step; the run continues.
    """
    case_list, skipped = unique_cases(cases)
    if use_judge:
        if checks_file is not None or cap is not None:
            raise UserError("--checks and --cap apply to the deterministic checks; leave them out with --judge")
        return _run_judge(cases, case_list, skipped, out, criteria_file, max_chars, category, judge)
    if criteria_file is not None:
        raise UserError("--criteria needs --judge")
    options, text = _read_checks(checks_file, cap)
    check = build("trajectory", options, where=f"{checks_file}: " if checks_file else "")
    assert isinstance(check, TrajectoryCheck)
    manifest = new_manifest("trajectory", cases, case_list)
    manifest.extra["config_hash"] = text_sha256(repr(sorted(options.items())) + text)

    async def evaluate(case: Case) -> Any:
        return check_row(case, check.evaluate(case, case.output), evaluator="trajectory", category=category)

    outcome = execute(out=ensure_parent(out), manifest=manifest, items=case_list, key=lambda c: (c.id, None, None),
                      evaluate=evaluate,
                      on_error=lambda c, exc: error_row(c.id, exc, evaluator="trajectory",
                                                        category=category or c.category),
                      client=None, concurrency=4, label="checking", skipped=skipped)
    if outcome.resume_note:
        echo_err(outcome.resume_note)
    summarise(outcome.rows, out)
    return 0 if any(r.status == "scored" for r in outcome.rows) else 1


def _run_judge(cases: str, case_list: list[Case], skipped: int, out: str, criteria_file: str | None,
               max_chars: int, category: str | None, judge: JudgeOptions) -> int:
    criteria = read_criteria(criteria_file) or TRAJECTORY_CRITERIA
    client = build_client(judge)
    rubric_hash = text_sha256(repr(sorted(criteria.items())) + f"|{max_chars}")
    tj = TrajectoryJudge(client, criteria, max_chars=max_chars, template_hash=rubric_hash,
                         max_tokens=judge.max_tokens, temperature=judge.temperature, seed=judge.seed,
                         use_cache=not judge.no_cache, category=category)
    manifest = new_manifest("trajectory-judge", cases, case_list, judge=judge.config(client.provider.model),
                            system_under_test=judge.system_model,
                            template=TemplateInfo(path=criteria_file, sha256=rubric_hash))
    outcome = execute(out=ensure_parent(out), manifest=manifest, items=case_list, key=lambda c: (c.id, None, None),
                      evaluate=tj.evaluate,
                      on_error=lambda c, exc: error_row(c.id, exc, evaluator="trajectory_judge",
                                                        category=category or c.category),
                      client=client, concurrency=judge.concurrency, label="judging", skipped=skipped)
    if outcome.resume_note:
        echo_err(outcome.resume_note)
    summarise(outcome.rows, out)
    t = outcome.manifest.totals
    echo_err(f"({t.provider_calls} judge calls, {t.cached_calls} from cache)")
    return 0 if t.scored else 1
