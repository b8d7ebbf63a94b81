"""``referee gold``: grade generated documents against gold standards with a criteria file.

Single: ``referee gold --criteria C.yaml --generated out.md --gold gold.md --output DIR``.
Batch: ``referee gold --criteria C.yaml --dataset cases/ --results-dir output/ --output DIR``: every case
directory of the dataset holds ``input.yaml`` and the gold file; the generated artifact is looked up under
``results-dir/<case>/`` with the criteria file's ``generated_file_patterns`` (then under ``results-dir``
itself, keeping matches whose path names the case). A case missing either is skipped with a message.
Writes ``results.jsonl`` (the common rows), ``results.json`` and ``report.html`` in DIR; exits 1 when a case
FAILs or could not be graded.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import click

from .. import grade_gold
from ..errors import UserError
from ..evaluators import discover_gold_cases, gold_results_json, single_gold_case, threshold_warning
from ..gates import GateResult
from ..reports import gold_case_text, gold_run_notes
from ..rubrics import load_rubric
from . import invoked_argv, keep_until_exit
from ._common import JudgeOptions, api_judge, echo_err, flag_errors, judge_options, result_exit, store_options


@click.command("gold")
@click.option("--criteria", required=True, help="Criteria YAML file (or a shipped one by name).")
@click.option("--generated", type=click.Path(dir_okay=False), default=None, help="The generated artifact.")
@click.option("--gold", type=click.Path(dir_okay=False), default=None, help="The gold-standard document.")
@click.option("--dataset", type=click.Path(file_okay=False), default=None,
              help="Batch: directory of case directories (input.yaml + the gold file).")
@click.option("--results-dir", type=click.Path(file_okay=False), default=None,
              help="Batch: where the generated artifacts are (found with generated_file_patterns).")
@click.option("--output", required=True, type=click.Path(file_okay=False),
              help="Output directory: results.jsonl, results.json, report.html.")
@click.option("--single-call", is_flag=True, help="Grade all criteria in one judge call per case (cheaper).")
@click.option("--mlflow", "mlflow_uri", default=None, help="MLflow tracking URI: log one run per case.")
@click.option("--mlflow-experiment", default="forge-skill-eval", show_default=True)
@click.option("--judge-pass-only", is_flag=True,
              help="Decide each criterion by the judge's own pass flag alone, as the original evaluator did "
                   "(by default a score of 0 fails the criterion whatever pass says).")
@judge_options(default_concurrency=4)
@store_options()
def command(criteria: str, generated: str | None, gold: str | None, dataset: str | None, results_dir: str | None,
            output: str, single_call: bool, mlflow_uri: str | None, mlflow_experiment: str,
            judge_pass_only: bool, judge: JudgeOptions) -> int:
    """Grade generated documents against gold standards, one judge call per criterion."""
    system_model = judge.system_model
    rubric = load_rubric(criteria, kind="gold")
    if rubric.kind != "gold":
        raise UserError(f"{criteria} is a rubric, not a gold criteria file: use `referee evaluate --rubric`")
    single = generated is not None or gold is not None
    batch = dataset is not None or results_dir is not None
    if single == batch:
        raise UserError("give either --generated and --gold, or --dataset and --results-dir")
    warnings: list[str] = []
    w = threshold_warning(rubric)
    if w:
        warnings.append(w)
        echo_err(f"warning: {w}")
    skipped: list[str] = []
    if single:
        if generated is None or gold is None:
            raise UserError("single mode needs both --generated and --gold")
        cases = [single_gold_case(generated, gold)]
    else:
        if dataset is None or results_dir is None:
            raise UserError("batch mode needs both --dataset and --results-dir")
        cases, skipped = discover_gold_cases(dataset, results_dir, rubric, criteria)
        for msg in skipped:
            echo_err(msg)
        if not cases:
            raise UserError(f"no gradable cases in {dataset} ({len(skipped)} skipped)")
    out_dir = Path(output)
    out_dir.mkdir(parents=True, exist_ok=True)
    model = judge.model or rubric.judge_model
    if not judge.model and judge.provider != "anthropic" and "claude" in (model or "").lower():
        # The file's default names an Anthropic model; another provider would reject it.
        echo_err(f"note: judge_model '{model}' is an Anthropic model; using the {judge.provider} default "
                 "(pass --model to choose)")
        model = None
    results_path = out_dir / "results.jsonl"
    with flag_errors():
        result = grade_gold(cases, criteria, dataclasses.replace(api_judge(judge), model=model),
                            single_call=single_call, judge_pass_only=judge_pass_only, out=results_path,
                            source=dataset or str(generated), skipped=len(skipped), system_model=system_model,
                            command=invoked_argv())
    keep_until_exit(result)
    if result.resume_note:
        echo_err(result.resume_note)
    rows = result.rows
    for r in rows:
        click.echo(gold_case_text(r))
    info = next((r.judge for r in rows if r.judge is not None), None)  # the provider as the client named it
    judge_desc = {"provider": info.provider if info else judge.provider,
                  "model": result.manifest.judge.model if result.manifest.judge else model}
    data = gold_results_json(rows, rubric, criteria, judge_desc, skipped, warnings)
    rj = out_dir / "results.json"
    rj.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    from ..reports import write_html

    write_html(rows, out_dir / "report.html", title=f"referee gold: {rubric.skill or rubric.name}",
               source=str(results_path), manifest=result.manifest)
    if mlflow_uri:
        from ..reports import log_gold_runs

        try:
            ids = log_gold_runs(rows, uri=mlflow_uri, experiment=mlflow_experiment, results_json=rj)
        except UserError:
            raise
        except Exception as exc:  # noqa: BLE001 - any tracking-server failure, reported on one line
            raise UserError(f"could not log to MLflow at {mlflow_uri} ({type(exc).__name__}: {exc}); the "
                            f"results are in {out_dir}") from exc
        echo_err(f"logged {len(ids)} MLflow run(s) to experiment '{mlflow_experiment}'")
    for line in gold_run_notes(rows, skipped=len(skipped), out_dir=out_dir, totals=result.manifest.totals,
                               judge_pass_only=judge_pass_only):
        echo_err(line)
    # The command's own check: a FAIL, or a case that could not be graded, is never a pass; then the verdict rule.
    bad = [r.id for r in rows if r.passed is False or (r.status != "scored" and r.passed is None)]
    checks = [GateResult("gold verdicts", True, f"{len(bad)} case(s) FAIL or could not be graded: "
                         + ", ".join(bad[:10]) + (" ..." if len(bad) > 10 else ""))] if bad else []
    return result_exit(result, checks)
