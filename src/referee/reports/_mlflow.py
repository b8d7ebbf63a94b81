"""Logging gold-standard evaluations to MLflow (the optional extra ``mlflow``), as the skill evaluator does.

One run per case named ``eval — <case>``, tags ``case``/``skill``/``grade`` (plus ``verdict``), metrics ``total_score``,
``max_score``, ``score_pct``, ``criteria_passed``, ``criteria_total``, ``critical_failures`` and
``c_<criterion id>`` (the criterion's 0-2 score), and ``results.json`` as an artifact.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import MissingExtraError
from ..results._schema import ResultRow

DEFAULT_EXPERIMENT = "forge-skill-eval"


def _mlflow() -> Any:
    try:
        import mlflow
    except ImportError as exc:
        raise MissingExtraError("mlflow", "mlflow", "--mlflow (logging runs to MLflow)") from exc
    return mlflow


def run_metrics(row: ResultRow) -> dict[str, float]:
    d = row.details
    metrics: dict[str, float] = {}
    for key in ("total_score", "max_score", "score_pct", "criteria_passed", "criteria_total", "critical_failures"):
        if isinstance(d.get(key), int | float):
            metrics[key] = float(d[key])
    for c in row.criteria:
        if c.raw_score is not None:
            metrics[f"c_{c.id}"] = float(c.raw_score)
    return metrics


def log_gold_runs(rows: Sequence[ResultRow], *, uri: str, experiment: str = DEFAULT_EXPERIMENT,
                  results_json: str | Path | None = None) -> list[str]:
    """Log one MLflow run per case; returns the run ids."""
    if uri.startswith("file:") or "://" not in uri:
        # MLflow 3 refuses its file store unless opted in; a user passing a file URI has opted in.
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    mlflow = _mlflow()
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment(experiment)
    ids: list[str] = []
    for row in rows:
        d = row.details
        with mlflow.start_run(run_name=f"eval — {row.id}") as run:
            # grade is the seed's tag; an ungraded case has none (its status stands in), and verdict says
            # whether it FAILed anyway (a failed critical criterion beside an unscored one).
            mlflow.set_tags({"case": row.id, "skill": str(d.get("skill", "")),
                             "grade": str(d.get("grade") or row.status),
                             "verdict": str(d.get("verdict") or row.status.upper())})
            metrics = run_metrics(row)
            if metrics:
                mlflow.log_metrics(metrics)
            if results_json is not None and Path(results_json).exists():
                mlflow.log_artifact(str(results_json))
            ids.append(run.info.run_id)
    return ids
