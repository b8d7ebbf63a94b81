"""``referee judge CASES --template T --out RESULTS``: grade cases with an LLM judge and a prompt template."""

from __future__ import annotations

from pathlib import Path

import click

from ..cases import Case, load_cases
from ..errors import InputError
from ..evaluators.judge import TemplateJudge
from ..results._manifest import RunManifest, TemplateInfo, text_sha256
from ..results._schema import ResultRow
from ..runner.session import error_row, execute, totals_line
from ..templates import placeholders, preflight
from . import invoked_argv
from ._common import JudgeOptions, build_client, echo_err, judge_options, report_preflight


def read_template(path: str) -> str:
    p = Path(path)
    if not p.exists():
        raise InputError("template file not found", file=path)
    try:
        return p.read_text(encoding="utf-8-sig")  # a BOM from a Windows editor is not prompt text
    except UnicodeDecodeError as exc:
        raise InputError("template is not valid UTF-8", file=path) from exc


def report_failures(rows: list[ResultRow], limit: int = 20) -> None:
    """The seed's habit: every failed case is a warning on stderr (never a fabricated score)."""
    bad = [r for r in rows if r.status != "scored"]
    for r in bad[:limit]:
        echo_err(f"warning: case '{r.id}' {r.status}: {r.error}")
    if len(bad) > limit:
        echo_err(f"warning: ... and {len(bad) - limit} more unscored/error cases (see the results file)")


@click.command("judge")
@click.argument("cases", type=click.Path(dir_okay=False))
@click.option("--template", "-t", required=True, type=click.Path(dir_okay=False),
              help="Judge prompt with {placeholders} filled from each case.")
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False), help="Results JSONL (appended).")
@click.option("--category", default=None, help="Category for every row (default: each case's own).")
@click.option("--skip-invalid", is_flag=True, help="Skip cases missing a field or with a duplicate id.")
@click.option("--repeat", type=click.IntRange(1), default=1, show_default=True,
              help="Judge every case N times with distinct seeds (bypasses the cache).")
@click.option("--criteria", default=None,
              help="Comma-separated criterion names the reply must contain (a reply missing one is invalid).")
@judge_options(default_concurrency=8)
def command(cases: str, template: str, out: str, category: str | None, skip_invalid: bool, repeat: int,
            criteria: str | None, judge: JudgeOptions) -> int:
    """Grade CASES (JSONL or YAML) with an LLM judge; rows are appended to --out as they complete."""
    tmpl = read_template(template)
    case_set = load_cases(cases)
    pf = preflight(case_set.cases, placeholders(tmpl))
    report_preflight(pf, cases, skip_invalid=skip_invalid)

    client = build_client(judge)
    model = client.provider.model
    tmpl_hash = text_sha256(tmpl)
    expected = [c.strip() for c in criteria.split(",") if c.strip()] if criteria else None
    tj = TemplateJudge(client, tmpl, template_hash=tmpl_hash, category=category, max_tokens=judge.max_tokens,
                       temperature=judge.temperature, seed=judge.seed, use_cache=not judge.no_cache,
                       expected_criteria=expected)
    manifest = RunManifest.for_cases(
        "judge", cases, [c.id for c in pf.valid], command=invoked_argv(),
        template=TemplateInfo(path=template, sha256=tmpl_hash),
        judge=judge.config(model, repeat), system_under_test=judge.system_model,
    )
    if expected:
        manifest.extra["config_hash"] = text_sha256(",".join(expected))
    items: list[tuple[Case, int | None]] = [
        (c, r if repeat > 1 else None) for c in pf.valid for r in range(repeat)
    ]
    outcome = execute(
        out=Path(out), manifest=manifest, items=items,
        key=lambda it: (it[0].id, it[1], None),
        evaluate=lambda it: tj.evaluate(it[0], it[1]),
        on_error=lambda it, exc: error_row(it[0].id, exc, evaluator="judge",
                                           category=category or it[0].category, repeat=it[1]),
        client=client, concurrency=judge.concurrency, label="judging", skipped=pf.skipped,
    )
    if outcome.resume_note:
        echo_err(outcome.resume_note)
    report_failures(outcome.new_rows)
    t = outcome.manifest.totals
    echo_err(totals_line(t, out))
    if t.scored == 0:
        echo_err("error: nothing was graded")
        return 1
    return 0
