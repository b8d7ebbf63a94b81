"""RAGChecker's meta-evaluation set (Ru et al. 2024, arXiv 2408.08067, Table 2): 280 pairs of RAG answers, each
labelled by two annotators on correctness, completeness and overall (-2..2: how much better model2's answer is).

:func:`ragchecker_meta` recomputes the paper's correlations from RAGChecker's recorded scores (no model call)
and, given a referee results file over the same pairs, the same correlations for referee's own scores.

The method (the paper's script): per aspect, an evaluator's delta is its score of model2 minus its score of
model1; a missing delta takes the median delta; deltas are mapped linearly onto the human range
``((d - min) / (max - min) - 0.5) * 4`` (no correlation changes in exact arithmetic, but Spearman's ties follow the
floats); each delta is repeated for both annotators and correlated with the 560 labels (Pearson and Spearman,
x100, 2 decimals). The human row correlates the first annotators' labels with the second's.

Results-file convention (what :func:`write_cases` writes and :func:`results_deltas` reads): one case per answer,
id ``<instance_id>:model1`` or ``<instance_id>:model2``; an aspect's score is the ``score`` of the row whose
``evaluator`` is that aspect's metric name (:data:`REFEREE_METRICS`: ``claim_precision``, ``claim_recall``,
``claim_f1``), or of a criterion with that id in any row of the case. An unscored side leaves its pair out (counted,
never turned into a number).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InputError, UserError
from ..results._io import read_results

ASPECTS = ("correctness", "completeness", "overall")
"""The three aspects the annotators labelled (fields ``<aspect>_label`` in both files)."""
RAGCHECKER_METRICS = {"correctness": "precision", "completeness": "recall", "overall": "F1"}
"""RAGChecker's metric recorded for each aspect (claim precision, claim recall, their F1)."""
REFEREE_METRICS = {"correctness": "claim_precision", "completeness": "claim_recall", "overall": "claim_f1"}
"""Default metric (evaluator or criterion name) read from a referee results file for each aspect."""
HUMAN_FILE = "human_labeled_data.json"
BASELINE_FILE = "baseline_ragchecker.json"
SIDES = ("model1", "model2")


@dataclass(frozen=True)
class Correlation:
    """One cell of the table: Pearson and Spearman x100 (2 decimals), over ``pairs`` answer pairs."""

    aspect: str
    evaluator: str
    metric: str
    pearson: float | None
    spearman: float | None
    pairs: int
    left_out: int = 0
    """Pairs left out because a side was unscored (referee's results) or absent."""

    def to_dict(self) -> dict[str, Any]:
        return {"aspect": self.aspect, "evaluator": self.evaluator, "metric": self.metric,
                "pearson": self.pearson, "spearman": self.spearman, "pairs": self.pairs,
                "left_out": self.left_out}


@dataclass
class RagCheckerData:
    """The two files, checked: 280 instances in order, two annotators each."""

    instances: list[dict[str, Any]]
    """One record per instance (from the baseline file): ids, query, reference, both answers, recorded scores."""
    labels: dict[str, NDArray[np.float64]]
    """Aspect -> the 560 human labels in file order (records 2k and 2k+1 are instance k's two annotators)."""
    human_file: str = ""
    baseline_file: str = ""


@dataclass
class RagCheckerMeta:
    """The reproduced Table 2 rows, the human-human row and (with a results file) referee's rows."""

    ragchecker: list[Correlation]
    human: list[Correlation]
    referee: list[Correlation] = field(default_factory=list)
    instances: int = 0
    unscored_answers: int = 0
    """Answers (case ids) of the results file with no score for some aspect's metric."""
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"instances": self.instances, "ragchecker": [c.to_dict() for c in self.ragchecker],
                "human": [c.to_dict() for c in self.human], "referee": [c.to_dict() for c in self.referee],
                "unscored_answers": self.unscored_answers, "notes": list(self.notes)}


def _paths(root: str | Path | None, human: str | Path | None, baseline: str | Path | None) -> tuple[Path, Path]:
    if root is None and (human is None or baseline is None):
        raise UserError("give the RAGChecker folder, or both the human and the baseline file")
    r = Path(root) if root is not None else None
    if r is not None and not r.is_dir():
        raise InputError("not a folder (expected the folder holding human_labeled_data.json)", file=str(r))
    h = Path(human) if human is not None else r / HUMAN_FILE  # type: ignore[operator]
    b = Path(baseline) if baseline is not None else r / BASELINE_FILE  # type: ignore[operator]
    return h, b


def _load_list(path: Path) -> list[Any]:
    if not path.is_file():
        raise InputError("file not found", file=str(path))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"not valid JSON: {exc}", file=str(path)) from exc
    if not isinstance(data, list):
        raise InputError("expected a JSON list of records", file=str(path))
    return data


def _number(value: Any, path: Path, index: int, name: str, *, allow_nan: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"record {index}: not a number ({value!r})", file=str(path), field=name)
    x = float(value)
    if math.isinf(x) or (math.isnan(x) and not allow_nan):
        raise InputError(f"record {index}: not a finite number ({value!r})", file=str(path), field=name)
    return x


def read_ragchecker(root: str | Path | None = None, *, human: str | Path | None = None,
                    baseline: str | Path | None = None) -> RagCheckerData:
    """Read ``human_labeled_data.json`` and ``baseline_ragchecker.json`` (from the folder ``root``, or the paths
    given), checking the shape the method relies on; a problem is an :class:`InputError` naming file, record and
    field."""
    hp, bp = _paths(root, human, baseline)
    hrecs, brecs = _load_list(hp), _load_list(bp)
    if len(hrecs) != 2 * len(brecs):
        raise InputError(f"{len(hrecs)} human records for {len(brecs)} instances in {bp.name} (expected two "
                         "annotators per instance)", file=str(hp))
    labels: dict[str, list[float]] = {a: [] for a in ASPECTS}
    for i, rec in enumerate(hrecs):
        if not isinstance(rec, dict):
            raise InputError(f"record {i}: not an object", file=str(hp))
        inst = brecs[i // 2]
        if not isinstance(inst, dict) or rec.get("instance_id") != inst.get("instance_id"):
            raise InputError(f"record {i}: instance_id {rec.get('instance_id')!r} where {bp.name} record "
                             f"{i // 2} has {inst.get('instance_id') if isinstance(inst, dict) else None!r} "
                             "(records 2k and 2k+1 must be instance k's two annotators)", file=str(hp),
                             field="instance_id")
        for a in ASPECTS:
            labels[a].append(_number(rec.get(f"{a}_label"), hp, i, f"{a}_label"))
    seen: set[str] = set()
    for k, inst in enumerate(brecs):
        iid = str(inst.get("instance_id"))
        if iid in seen:
            raise InputError(f"record {k}: instance_id {iid} repeated", file=str(bp), field="instance_id")
        seen.add(iid)
        for side in SIDES:
            ans = inst.get(side)
            scores = ans.get("ragchecker") if isinstance(ans, dict) else None
            if not isinstance(scores, dict):
                raise InputError(f"record {k}: no recorded scores", file=str(bp), field=f"{side}.ragchecker")
            for a in ASPECTS:
                # NaN is the one gap the method fills (median); anything else that is not a number is an error
                _number(scores.get(f"{a}_label"), bp, k, f"{side}.ragchecker.{a}_label", allow_nan=True)
            if not isinstance(ans.get("response"), str):
                raise InputError(f"record {k}: no answer text", file=str(bp), field=f"{side}.response")
    return RagCheckerData(brecs, {a: np.asarray(v, dtype=np.float64) for a, v in labels.items()},
                          str(hp), str(bp))


def correlate(x: Any, y: Any) -> tuple[float | None, float | None]:
    """Pearson and Spearman x100, rounded to 2 decimals as the paper prints them; None when undefined (fewer
    than 3 values, or a constant side)."""
    from scipy import stats  # here, not at import: listing the commands must not load scipy

    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if a.size < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None, None
    p = float(stats.pearsonr(a, b)[0])
    s = float(stats.spearmanr(a, b)[0])
    return (round(p * 100, 2) if math.isfinite(p) else None, round(s * 100, 2) if math.isfinite(s) else None)


def to_human_range(delta: NDArray[np.float64]) -> NDArray[np.float64]:
    """The paper's linear map of deltas onto [-2, 2], after NaN deltas take the median (min, max and median are
    taken over the present deltas)."""
    d = np.array(delta, dtype=np.float64)
    present = d[~np.isnan(d)]
    if present.size == 0:
        return d
    lo, hi, med = float(present.min()), float(present.max()), float(np.median(present))
    d[np.isnan(d)] = med
    return ((d - lo) / (hi - lo) - 0.5) * 4 if hi != lo else d


def _against_humans(data: RagCheckerData, aspect: str, deltas: NDArray[np.float64],
                    keep: NDArray[np.bool_] | None = None) -> tuple[float | None, float | None]:
    x = np.repeat(to_human_range(deltas), 2)
    y = data.labels[aspect]
    if keep is not None:
        both = np.repeat(keep, 2)
        y = y[both]
    return correlate(x, y)


def ragchecker_deltas(data: RagCheckerData, aspect: str) -> NDArray[np.float64]:
    """RAGChecker's recorded score of model2 minus model1, per instance (NaN where a score is NaN)."""
    key = f"{aspect}_label"
    return np.asarray([float(i["model2"]["ragchecker"][key]) - float(i["model1"]["ragchecker"][key])
                       for i in data.instances], dtype=np.float64)


def human_row(data: RagCheckerData) -> list[Correlation]:
    """The annotators against each other: first annotators' labels (even records) vs the second's (odd)."""
    out = []
    for a in ASPECTS:
        lab = data.labels[a]
        p, s = correlate(lab[0::2], lab[1::2])
        out.append(Correlation(a, "human", "annotator 1 vs 2", p, s, len(data.instances)))
    return out


def ragchecker_rows(data: RagCheckerData) -> list[Correlation]:
    """Table 2's RAGChecker row: each aspect's recorded metric against the humans' labels of that aspect."""
    out = []
    for a in ASPECTS:
        d = ragchecker_deltas(data, a)
        p, s = _against_humans(data, a, d)
        out.append(Correlation(a, "RAGChecker", RAGCHECKER_METRICS[a], p, s, len(d)))
    return out


def metric_map(pairs: tuple[str, ...] | list[str] = ()) -> dict[str, str]:
    """:data:`REFEREE_METRICS` with ``ASPECT=NAME`` overrides (the CLI's ``--metric``); a malformed pair is a
    :class:`UserError`."""
    out = dict(REFEREE_METRICS)
    for p in pairs:
        aspect, sep, name = p.partition("=")
        if not sep or aspect.strip() not in out or not name.strip():
            raise UserError(f"--metric {p!r}: expected ASPECT=NAME with ASPECT one of {', '.join(out)}")
        out[aspect.strip()] = name.strip()
    return out


def case_id(instance_id: Any, side: str) -> str:
    """The case id of one answer: ``<instance_id>:model1`` or ``<instance_id>:model2``."""
    return f"{instance_id}:{side}"


def write_cases(data: RagCheckerData, path: str | Path) -> int:
    """Write the 560 answers as a JSONL cases file (``id`` as :func:`case_id`, ``input`` the query, ``output``
    the answer, ``reference`` the reference answer, plus ``dataset``, ``instance_id``, ``side``, ``model``);
    returns the number of cases written."""
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        for inst in data.instances:
            for side in SIDES:
                rec = {"id": case_id(inst["instance_id"], side), "input": inst.get("query", ""),
                       "output": inst[side]["response"], "reference": inst.get("gt_answer", ""),
                       "dataset": inst.get("dataset", ""), "instance_id": inst["instance_id"], "side": side,
                       "model": inst[side].get("model_name", "")}
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
                n += 1
    return n


def _answer_scores(path: str | Path, metrics: Mapping[str, str]) -> tuple[dict[str, dict[str, list[float]]],
                                                                           dict[str, set[str]], list[str]]:
    """Per case id and metric: the scored values found (a repeat adds one), and the metrics seen unscored."""
    loaded = read_results(path, strict=True)
    wanted = set(metrics.values())
    scored: dict[str, dict[str, list[float]]] = {}
    unscored: dict[str, set[str]] = {}
    for row in loaded.rows:
        if row.evaluator in wanted:
            if row.status == "scored" and row.score is not None:
                scored.setdefault(row.id, {}).setdefault(row.evaluator, []).append(float(row.score))
            else:
                unscored.setdefault(row.id, set()).add(row.evaluator)
        for c in row.criteria:
            name = c.id if c.id in wanted else c.name if c.name in wanted else None
            if name is None or name == row.evaluator:  # the row's own score already counted
                continue
            if c.status == "scored" and c.score is not None:
                scored.setdefault(row.id, {}).setdefault(name, []).append(float(c.score))
            else:
                unscored.setdefault(row.id, set()).add(name)
    return scored, unscored, loaded.warnings


def results_deltas(data: RagCheckerData, path: str | Path, metric: str) -> tuple[NDArray[np.float64],
                                                                                 NDArray[np.bool_]]:
    """Per instance, the results file's score of ``metric`` for model2 minus model1 (the mean over repeats), and
    which instances have both sides scored (the others are NaN and left out)."""
    scored, _, _ = _answer_scores(path, {"m": metric})
    return _deltas_from(data, scored, metric)


def referee_rows(data: RagCheckerData, path: str | Path, *,
                 metrics: Mapping[str, str] = REFEREE_METRICS) -> tuple[list[Correlation], int, list[str]]:
    """referee's rows: each aspect's metric from the results file at ``path`` against the humans, over the pairs
    with both answers scored. Returns the rows, the number of answers with some metric unscored, and notes."""
    unknown = set(metrics) - set(ASPECTS)
    if unknown:
        raise UserError(f"unknown aspect(s) {sorted(unknown)}: expected {', '.join(ASPECTS)}")
    scored, unscored, warnings = _answer_scores(path, metrics)
    ids = {case_id(i["instance_id"], s) for i in data.instances for s in SIDES}
    found = (set(scored) | set(unscored)) & ids
    if not found:
        raise InputError(f"no row of this file is a RAGChecker answer scored by {', '.join(metrics.values())} "
                         "(case ids '<instance_id>:model1' / ':model2'; write them with --write-cases)",
                         file=str(path))
    notes = list(warnings)
    stray = (set(scored) | set(unscored)) - ids
    if stray:
        notes.append(f"{len(stray)} case id(s) of {path} are not RAGChecker answers and were ignored")
    out = []
    for a in ASPECTS:
        if a not in metrics:
            continue
        m = metrics[a]
        d, keep = _deltas_from(data, scored, m)
        n = int(keep.sum())
        p, s = _against_humans(data, a, d[keep], keep) if n else (None, None)
        out.append(Correlation(a, "referee", m, p, s, n, left_out=len(d) - n))
        if n and p is None:
            notes.append(f"{m}: too few scored pairs, or every delta equal: no correlation")
    bad = {i for i in ids if any(m in unscored.get(i, set()) and not scored.get(i, {}).get(m)
                                 for m in metrics.values())}
    return out, len(bad), notes


def _deltas_from(data: RagCheckerData, scored: Mapping[str, Mapping[str, list[float]]],
                 metric: str) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    d = np.full(len(data.instances), np.nan)
    for k, inst in enumerate(data.instances):
        vals = [scored.get(case_id(inst["instance_id"], s), {}).get(metric) for s in SIDES]
        if vals[0] and vals[1]:
            d[k] = float(np.mean(vals[1])) - float(np.mean(vals[0]))
    return d, ~np.isnan(d)


def ragchecker_meta(root: str | Path | None = None, *, human: str | Path | None = None,
                    baseline: str | Path | None = None, results: str | Path | None = None,
                    metrics: Mapping[str, str] = REFEREE_METRICS) -> RagCheckerMeta:
    """The paper's Table 2 (RAGChecker and human-human rows) from the recorded scores, and with ``results`` (a
    referee results file over the cases :func:`write_cases` writes) referee's rows beside them."""
    data = read_ragchecker(root, human=human, baseline=baseline)
    meta = RagCheckerMeta(ragchecker_rows(data), human_row(data), instances=len(data.instances))
    nan = sum(int(np.isnan(ragchecker_deltas(data, a)).sum()) for a in ASPECTS)
    if nan:
        meta.notes.append(f"{nan} missing RAGChecker delta(s) took the median delta, as in the paper")
    if results is not None:
        meta.referee, meta.unscored_answers, notes = referee_rows(data, results, metrics=metrics)
        meta.notes.extend(notes)
    return meta
