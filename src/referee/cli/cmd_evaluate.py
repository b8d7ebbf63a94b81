"""``referee evaluate``: grade one output (or a cases file) against a rubric, with the evidence for every score.

Single output: ``referee evaluate answer.md --task "..." [--context FILE ...]`` prints the "Evaluation Verdict"
markdown, writes JSON with ``--json-out`` and exits 1 when the composite is below ``--fail-below`` (the
agent-evaluation rework rule, 2.5) or the output could not be graded.
Batch: ``referee evaluate --cases cases.jsonl --out results.jsonl`` writes the common result rows.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from .. import grade_rubric
from ..errors import InputError, UserError
from ..evaluators import describe_ungrounded
from ..gates import GateResult, exit_code, verdict
from ..results import ResultRow
from ..rubrics import UNGROUNDED_MODES, Rubric, load_rubric, read_text_file, rubric_hash
from ..runner import FatalRunError, totals_line
from . import invoked_argv, keep_until_exit
from ._common import JudgeOptions, api_judge, echo_err, flag_errors, judge_options, result_exit, store_options

__all__ = ["command", "read_text_file", "rubric_hash"]  # the helpers moved to the library; kept importable


def _read_contexts(paths: tuple[str, ...]) -> dict[str, str]:
    return {p: read_text_file(p, "context file") for p in paths}


def _row_json(row: ResultRow, rubric: Rubric) -> dict[str, Any]:
    d = row.to_json_dict()
    d["rubric"] = rubric.name
    d["verdict"] = row.details.get("verdict")
    d["composite"] = row.details.get("composite")
    return d


@click.command("evaluate")
@click.argument("output", required=False)
@click.option("--task", default=None, help="The task the output answers (single-output mode).")
@click.option("--context", "contexts", multiple=True, type=click.Path(dir_okay=False),
              help="A file the output should be grounded in; evidence is also verified against it. Repeatable.")
@click.option("--rubric", default="agent-evaluation", show_default=True,
              help="A shipped rubric name (see `referee rubrics`) or a rubric YAML file.")
@click.option("--json-out", type=click.Path(dir_okay=False), default=None, help="Write the verdict as JSON.")
@click.option("--fail-below", type=float, default=None,
              help="Exit 1 when the composite is below this (default: the rubric's, 2.5 for agent-evaluation).")
@click.option("--cases", "cases_path", type=click.Path(dir_okay=False), default=None,
              help="Batch mode: a cases file (input = the task, output, optional context).")
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Batch mode: results JSONL.")
@click.option("--html", "html_out", type=click.Path(dir_okay=False), default=None,
              help="Also write the self-contained HTML report.")
@click.option("--category", default=None, help="Category of cases that have none (batch mode; a case's own category wins).")
@click.option("--ungrounded", "ungrounded_mode", type=click.Choice(UNGROUNDED_MODES), default=None,
              help="What an evidence quote not found in the judged text costs (default: the rubric's; invalid for "
                   "agent-evaluation: re-asked once, then that dimension and the composite are unscored). "
                   "reask: re-ask once, then keep the score flagged 'ungrounded'; keep: flag only.")
@click.option("--output-evaluated", "evaluated", default=None,
              help="The verdict's 'Output Evaluated' line: a brief description of what was evaluated "
                   "(default: the file name).")
@click.option("--evaluator", "evaluator_name", default=None,
              help="The verdict's 'Evaluator' line: agent name or task id (default: referee, the rubric and the "
                   "judge model).")
@judge_options(default_concurrency=4)
@store_options()
def command(output: str | None, task: str | None, contexts: tuple[str, ...], rubric: str,
            json_out: str | None, fail_below: float | None, cases_path: str | None, out: str | None,
            html_out: str | None, category: str | None, ungrounded_mode: str | None, evaluated: str | None,
            evaluator_name: str | None, judge: JudgeOptions) -> int:
    """Grade OUTPUT (a file, or - for stdin) against a rubric (default: the 5-dimension agent-evaluation)."""
    system_model = judge.system_model
    rb = load_rubric(rubric)
    if rb.kind == "gold":
        raise UserError(f"{rubric} is a gold-standard criteria file: use `referee gold --criteria {rubric}`")
    if ungrounded_mode is not None:
        rb = rb.model_copy(update={"ungrounded": ungrounded_mode})  # part of rubric_hash: no stale resume
    ctx = _read_contexts(contexts)
    threshold = fail_below if fail_below is not None else rb.fail_below
    if cases_path is not None:
        if output is not None:
            raise UserError("give either OUTPUT or --cases, not both")
        if out is None:
            raise UserError("--cases needs --out RESULTS.jsonl")
        if evaluated or evaluator_name:
            raise UserError("--output-evaluated and --evaluator set the single verdict's header; batch mode "
                            "(--cases) writes no verdict markdown")
        return _batch(cases_path, out, rubric, ungrounded_mode, ctx, threshold, html_out, system_model, category,
                      judge)
    if output is None:
        raise UserError("give the OUTPUT to evaluate (a file, or - for stdin), or --cases for batch mode")
    if task is None:
        raise UserError("--task is required: the task the output answers (never evaluate without it)")
    text = sys.stdin.read() if output == "-" else read_text_file(output, "output file")
    if not text.strip():
        raise InputError("the output to evaluate is empty", file=output)
    cid = Path(output).name if output != "-" else "stdin"
    case = {"id": cid, "input": task, "output": text,
            "metadata": {"system_model": system_model} if system_model else {}}
    try:
        with flag_errors():
            result = grade_rubric([case], rubric, api_judge(judge), contexts=ctx, fail_below=threshold,
                                  ungrounded=ungrounded_mode, progress=False, command=invoked_argv())
    except FatalRunError as exc:  # a bad key, an unknown model, a server that is down
        raise UserError(f"the judge could not be called: {exc.__cause__ or exc}") from exc
    row = result.rows[0]
    from ..reports import render_verdict

    click.echo(render_verdict(row, rb, evaluated=evaluated or cid, evaluator=evaluator_name or ""))
    if json_out:
        Path(json_out).write_text(json.dumps(_row_json(row, rb), indent=2, ensure_ascii=False) + "\n",
                                  encoding="utf-8")
    if html_out:
        from ..reports import write_html

        write_html([row], html_out, title=f"referee evaluate: {cid}", source="referee evaluate")
    # The command's own checks (the first that applies is said), then the verdict rule over them.
    checks: list[GateResult] = []
    composite = row.details.get("composite")
    if row.status != "scored" and row.passed is False:
        msg = f"a critical criterion failed; the rest could not be graded ({row.error})"
        echo_err(f"referee: FAIL: {msg}")
        checks.append(GateResult("critical criteria", True, msg))
    elif row.status != "scored":  # nothing was graded: the verdict rule fails it
        echo_err(f"referee: the output could not be graded ({row.status}: {row.error}); not a pass")
    elif threshold is not None and composite is not None and composite < threshold:
        msg = f"composite {composite:.2f} is below --fail-below {threshold:g}"
        echo_err(f"{msg}: rework needed")
        checks.append(GateResult("--fail-below", True, msg))
    elif row.passed is False and row.details.get("critical_failures"):
        msg = f"critical criterion failed: {', '.join(row.details['critical_failures'])}"
        echo_err(f"FAIL: {msg}")
        checks.append(GateResult("critical criteria", True, msg))
    return exit_code(verdict([*result.gates, *checks], result.scored))


def _batch(cases_path: str, out: str, rubric_arg: str, ungrounded_mode: str | None, ctx: dict[str, str],
           threshold: float | None, html_out: str | None, system_model: str | None, category: str | None,
           judge: JudgeOptions) -> int:
    with flag_errors():
        # The rubric as the flag named it (the manifest records that), with the flags' overrides resolved.
        result = grade_rubric(cases_path, rubric_arg, api_judge(judge), contexts=ctx, fail_below=threshold,
                              ungrounded=ungrounded_mode, out=out, category=category,
                              on_invalid=lambda problem: echo_err(f"invalid: {problem}"), system_model=system_model,
                              progress=None, command=invoked_argv())
    keep_until_exit(result)
    if result.resume_note:
        echo_err(result.resume_note)
    rows = result.rows
    for r in result.new_rows:
        if r.status != "scored":
            echo_err(f"warning: case '{r.id}' {r.status}: {r.error}")
    if html_out:
        from ..reports import write_html

        write_html(rows, html_out, title=f"referee evaluate: {Path(cases_path).name}", source=out)
    t = result.manifest.totals
    below = [r for r in rows if r.status == "scored" and threshold is not None
             and (r.details.get("composite") is not None and r.details["composite"] < threshold)]
    critical = [r for r in rows if r.passed is False and r.details.get("critical_failures") and r not in below]
    ungrounded = sum("ungrounded" in r.flags for r in rows)
    echo_err(totals_line(t, out))
    if ungrounded:
        echo_err(f"{ungrounded} case(s) cite evidence not found in the judged text (flag 'ungrounded'); "
                 f"{describe_ungrounded(rows)}")
    checks: list[GateResult] = []
    if critical:
        msg = (f"{len(critical)} case(s) FAIL on a critical criterion: "
               + ", ".join(r.id for r in critical[:10]) + (" ..." if len(critical) > 10 else ""))
        echo_err(msg)
        checks.append(GateResult("critical criteria", True, msg))
    if below:
        assert threshold is not None
        msg = (f"{len(below)} case(s) have a composite below {threshold:g}: "
               + ", ".join(r.id for r in below[:10]) + (" ..." if len(below) > 10 else ""))
        echo_err(msg)
        checks.append(GateResult("--fail-below", True, msg))
    return result_exit(result, checks)
