"""RAGChecker's meta-evaluation: the paper's Table 2 from the recorded scores, referee's results on the same pairs,
and the command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from referee.metaeval import RagCheckerMeta, ragchecker_meta, read_ragchecker
from referee.results import CriterionScore, ResultRow, Status
from tests.support.cli import run_cli

# The RAGChecker and human-human rows of Ru et al.'s Table 2 (arXiv 2408.08067) as the paper's method gives them on
# these files: Pearson and Spearman x100 of RAGChecker's metric for each aspect against the human labels. (The
# printed table could not be read here to compare; test_the_replay_agrees_with_an_independent_computation checks
# the figures against a computation written from the data folder's README alone.)
TABLE_2_RAGCHECKER = {"correctness": (49.66, 46.95), "completeness": (60.67, 58.11), "overall": (61.93, 60.90)}
TABLE_2_HUMAN = {"correctness": (63.67, 59.19), "completeness": (71.91, 68.36), "overall": (70.09, 68.89)}
METRICS = {"correctness": "claim_precision", "completeness": "claim_recall", "overall": "claim_f1"}


@pytest.fixture
def root(shared_data: Path) -> Path:
    path = shared_data / "ragchecker"
    if not (path / "human_labeled_data.json").is_file():
        pytest.skip(f"RAGChecker's meta-evaluation data not found at {path}")
    return path


@pytest.fixture
def baseline(root: Path) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads((root / "baseline_ragchecker.json").read_text(encoding="utf-8"))
    return data


def _cells(meta: RagCheckerMeta, evaluator: str) -> dict[str, tuple[float | None, float | None]]:
    rows = {"RAGChecker": meta.ragchecker, "human": meta.human, "referee": meta.referee}[evaluator]
    return {c.aspect: (c.pearson, c.spearman) for c in rows}


def test_table_2_is_reproduced_from_the_recorded_scores(root: Path) -> None:
    meta = ragchecker_meta(root)
    assert meta.instances == 280
    assert _cells(meta, "RAGChecker") == TABLE_2_RAGCHECKER
    assert [c.metric for c in meta.ragchecker] == ["precision", "recall", "F1"]
    assert all(c.pairs == 280 and c.left_out == 0 for c in meta.ragchecker)
    assert meta.referee == [] and meta.notes == []


def test_the_human_human_row(root: Path) -> None:
    assert _cells(ragchecker_meta(root), "human") == TABLE_2_HUMAN


def test_the_replay_agrees_with_an_independent_computation(root: Path) -> None:
    """The README's method written out here with numpy/scipy straight from the JSON files: deltas (model2 -
    model1, NaN -> median), mapped onto -2..2, repeated per annotator, correlated with the 560 labels."""
    import json

    import numpy as np
    from scipy import stats

    human = json.loads((root / "human_labeled_data.json").read_text(encoding="utf-8"))
    base = {r["instance_id"]: r for r in json.loads((root / "baseline_ragchecker.json").read_text(encoding="utf-8"))}
    for aspect, (pearson, spearman) in TABLE_2_RAGCHECKER.items():
        key = f"{aspect}_label"
        ids = [h["instance_id"] for h in human[::2]]
        d = np.array([base[i]["model2"]["ragchecker"][key] - base[i]["model1"]["ragchecker"][key] for i in ids],
                     dtype=float)
        d[np.isnan(d)] = np.nanmedian(d)
        d = ((d - d.min()) / (d.max() - d.min()) - 0.5) * 4
        ours = np.repeat(d, 2)
        labels = np.array([h[key] for h in human], dtype=float)
        assert round(float(stats.pearsonr(ours, labels)[0]) * 100, 2) == pearson
        assert round(float(stats.spearmanr(ours, labels)[0]) * 100, 2) == spearman
        first, second = labels[::2], labels[1::2]
        assert round(float(stats.pearsonr(first, second)[0]) * 100, 2) == TABLE_2_HUMAN[aspect][0]
        assert round(float(stats.spearmanr(first, second)[0]) * 100, 2) == TABLE_2_HUMAN[aspect][1]


def _rows(baseline: list[dict[str, Any]], *, as_criteria: bool = False,
          unscored: frozenset[tuple[int, str, str]] = frozenset()) -> list[ResultRow]:
    """referee rows whose scores are RAGChecker's recorded ones: one row per answer and metric, or one row per
    answer with a criterion per metric (what a suite of three evaluators writes)."""
    out: list[ResultRow] = []
    for inst in baseline:
        for side in ("model1", "model2"):
            cid = f"{inst['instance_id']}:{side}"
            rec = inst[side]["ragchecker"]
            crit = []
            for aspect, metric in METRICS.items():
                off = (inst["instance_id"], side, metric) in unscored
                score = None if off else float(rec[f"{aspect}_label"])
                status: Status = "unscored" if off else "scored"
                if as_criteria:
                    crit.append(CriterionScore(id=metric, status=status, score=score))
                else:
                    out.append(ResultRow(id=cid, evaluator=metric, status=status, score=score))
            if as_criteria:
                out.append(ResultRow(id=cid, evaluator="suite", score=0.5, criteria=crit))
    return out


def _write(path: Path, rows: list[ResultRow]) -> Path:
    path.write_text("".join(r.model_dump_json() + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("as_criteria", [False, True])
def test_a_results_file_of_the_recorded_scores_gives_the_replay_figures(
        root: Path, baseline: list[dict[str, Any]], tmp_path: Path, as_criteria: bool) -> None:
    results = _write(tmp_path / "results.jsonl", _rows(baseline, as_criteria=as_criteria))
    meta = ragchecker_meta(root, results=results)
    assert _cells(meta, "referee") == _cells(meta, "RAGChecker") == TABLE_2_RAGCHECKER
    assert [c.metric for c in meta.referee] == list(METRICS.values())
    assert all(c.pairs == 280 and c.left_out == 0 for c in meta.referee)
    assert meta.unscored_answers == 0


def _oracle(baseline: list[dict[str, Any]], labels: list[int], aspect: str,
            keep: list[bool]) -> tuple[float, float]:
    """The paper's method written out independently over the kept pairs."""
    key = f"{aspect}_label"
    d = np.array([b["model2"]["ragchecker"][key] - b["model1"]["ragchecker"][key]
                  for b, k in zip(baseline, keep, strict=True) if k])
    d = ((d - d.min()) / (d.max() - d.min()) - 0.5) * 4
    x = np.repeat(d, 2)
    y = np.array([lab for i, lab in enumerate(labels) if keep[i // 2]])
    return round(float(stats.pearsonr(x, y)[0]) * 100, 2), round(float(stats.spearmanr(x, y)[0]) * 100, 2)


def test_an_unscored_side_leaves_its_pair_out_and_is_counted(
        root: Path, baseline: list[dict[str, Any]], tmp_path: Path) -> None:
    first, second = baseline[0]["instance_id"], baseline[5]["instance_id"]
    off = {(first, "model2", "claim_precision"), (second, "model1", "claim_precision"),
           (second, "model2", "claim_precision")}
    rows = [r for r in _rows(baseline, unscored=frozenset(off))
            if not (r.id == f"{baseline[9]['instance_id']}:model1" and r.evaluator == "claim_f1")]
    meta = ragchecker_meta(root, results=_write(tmp_path / "results.jsonl", rows))
    cells = {c.aspect: c for c in meta.referee}
    assert (cells["correctness"].pairs, cells["correctness"].left_out) == (278, 2)
    assert (cells["overall"].pairs, cells["overall"].left_out) == (279, 1)  # a missing row: left out too
    assert (cells["completeness"].pairs, cells["completeness"].left_out) == (280, 0)
    assert meta.unscored_answers == 3
    human = json.loads((root / "human_labeled_data.json").read_text(encoding="utf-8"))
    keep = [b["instance_id"] not in (first, second) for b in baseline]
    expected = _oracle(baseline, [h["correctness_label"] for h in human], "correctness", keep)
    assert (cells["correctness"].pearson, cells["correctness"].spearman) == expected
    assert expected != TABLE_2_RAGCHECKER["correctness"]  # the left-out pairs did change the figures
    assert cells["completeness"].pearson == TABLE_2_RAGCHECKER["completeness"][0]


def test_cli_prints_table_2_in_80_columns(root: Path, capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    out_json = tmp_path / "figures.json"
    code, out, _ = run_cli(["metaeval", "ragchecker", str(root), "--json-out", str(out_json)], capsys)
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= 80
    for p, s in (*TABLE_2_RAGCHECKER.values(), *TABLE_2_HUMAN.values()):
        assert f"{p:.2f}" in out and f"{s:.2f}" in out
    figures = json.loads(out_json.read_text(encoding="utf-8"))
    assert {c["aspect"]: (c["pearson"], c["spearman"]) for c in figures["ragchecker"]} == TABLE_2_RAGCHECKER
    assert {c["aspect"]: (c["pearson"], c["spearman"]) for c in figures["human"]} == TABLE_2_HUMAN


def test_cli_write_cases_then_results_loop(root: Path, baseline: list[dict[str, Any]],
                                           capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    code, out, err = run_cli(["metaeval", "ragchecker", str(root), "--write-cases", str(cases)], capsys)
    assert code == 0 and "560 cases" in err
    recs = [json.loads(line) for line in cases.read_text(encoding="utf-8").splitlines()]
    assert len(recs) == 560 and len({r["id"] for r in recs}) == 560
    assert recs[1]["id"] == f"{baseline[0]['instance_id']}:model2"
    assert recs[1]["output"] == baseline[0]["model2"]["response"]
    assert recs[1]["reference"] == baseline[0]["gt_answer"] and recs[1]["input"] == baseline[0]["query"]
    from referee.cases import load_cases

    assert len(load_cases(cases).cases) == 560  # referee reads it as a cases file
    results = _write(tmp_path / "results.jsonl", _rows(baseline, as_criteria=True))
    code, out, _ = run_cli(["metaeval", "ragchecker", str(root), "--results", str(results)], capsys)
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= 80
    assert out.count("referee") >= 3 and "claim_precision" in out and "0 answer(s) unscored" in out


def test_cli_metric_names_can_be_chosen(root: Path, baseline: list[dict[str, Any]],
                                        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rows = [r.model_copy(update={"evaluator": "my_recall"}) if r.evaluator == "claim_recall" else r
            for r in _rows(baseline)]
    results = _write(tmp_path / "results.jsonl", rows)
    meta = ragchecker_meta(root, results=results,
                           metrics={**METRICS, "completeness": "my_recall"})
    assert _cells(meta, "referee")["completeness"] == TABLE_2_RAGCHECKER["completeness"]
    code, _, err = run_cli(["metaeval", "ragchecker", str(root), "--results", str(results),
                            "--metric", "recall=my_recall"], capsys)
    assert code == 2 and "ASPECT=NAME" in err


def _tiny(tmp_path: Path, human: Any, baseline: Any) -> Path:
    d = tmp_path / "rc"
    d.mkdir()
    for name, data in (("human_labeled_data.json", human), ("baseline_ragchecker.json", baseline)):
        (d / name).write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return d


def _inst(iid: int, **over: Any) -> dict[str, Any]:
    side = {"model_name": "m", "response": "r",
            "ragchecker": {"correctness_label": 0.5, "completeness_label": 0.5, "overall_label": 0.5}}
    return {"instance_id": iid, "query": "q", "gt_answer": "g", "model1": side, "model2": dict(side), **over}


def _label(iid: int, **over: Any) -> dict[str, Any]:
    return {"instance_id": iid, "correctness_label": 1, "completeness_label": 0, "overall_label": -1, **over}


@pytest.mark.parametrize(("human", "baseline", "where"), [
    ("[{", [_inst(0)], "human_labeled_data.json"),
    ([_label(0), _label(0)], {"not": "a list"}, "baseline_ragchecker.json"),
    ([_label(0)], [_inst(0)], "human_labeled_data.json"),
    ([_label(0), _label(0, overall_label="x")], [_inst(0)], "overall_label"),
    ([_label(0), _label(1)], [_inst(0)], "instance_id"),
    ([_label(0), _label(0)], [_inst(0, model2={"response": "r"})], "model2.ragchecker"),
])
def test_cli_malformed_files_are_exit_2_naming_file_and_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], human: Any, baseline: Any, where: str) -> None:
    code, out, err = run_cli(["metaeval", "ragchecker", str(_tiny(tmp_path, human, baseline))], capsys)
    assert code == 2 and where in err and out == ""


def test_cli_missing_folder_and_results_are_exit_2(root: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["metaeval", "ragchecker", str(tmp_path / "nope")], capsys)
    assert code == 2 and "nope" in err
    code, _, err = run_cli(["metaeval", "ragchecker", str(root), "--results", str(tmp_path / "r.jsonl")], capsys)
    assert code == 2 and "r.jsonl" in err and "not found" in err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "0:model1", "evaluator": "claim_f1", "score": 0.5}\n{oops\n', encoding="utf-8")
    code, _, err = run_cli(["metaeval", "ragchecker", str(root), "--results", str(bad)], capsys)
    assert code == 2 and "bad.jsonl:2" in err
    other = _write(tmp_path / "other.jsonl", [ResultRow(id="case-1", evaluator="claim_f1", score=0.5)])
    code, _, err = run_cli(["metaeval", "ragchecker", str(root), "--results", str(other)], capsys)
    assert code == 2 and "other.jsonl" in err and "model1" in err


def test_read_checks_pairing(root: Path) -> None:
    data = read_ragchecker(root)
    assert len(data.instances) == 280 and all(v.size == 560 for v in data.labels.values())


def test_referee_run_of_the_claim_metrics_with_a_scripted_judge_is_correlated(
        root: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The loop end to end: --write-cases, `referee run` of claim_precision / claim_recall / claim_f1 judged by the
    stand-in (deterministic claims and quotes, not a model), then --results; referee's rows are the paper's method
    applied to the scores that run wrote (computed here independently from the results file)."""
    cases = tmp_path / "cases.jsonl"
    assert run_cli(["metaeval", "ragchecker", str(root), "--write-cases", str(cases)], capsys)[0] == 0
    (tmp_path / "suite.yaml").write_text("cases: cases.jsonl\nevaluators:\n  - claim_precision\n  - claim_recall\n"
                                         "  - claim_f1\n", encoding="utf-8")
    results = tmp_path / "results.jsonl"
    code, _, err = run_cli(["run", str(tmp_path / "suite.yaml"), "--provider", "standin", "--out", str(results),
                            "--no-gates", "--no-cache"], capsys)
    assert code == 0, err
    meta = ragchecker_meta(root, results=results)
    rows = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    score = {(r["id"], c["id"]): c["score"] for r in rows for c in r.get("criteria", [])
             if c.get("status", "scored") == "scored"}
    human = json.loads((root / "human_labeled_data.json").read_text(encoding="utf-8"))
    ids = [h["instance_id"] for h in human[::2]]
    for cell in meta.referee:
        metric = METRICS[cell.aspect]
        keep = [(f"{i}:model1", metric) in score and (f"{i}:model2", metric) in score for i in ids]
        d = np.array([score[(f"{i}:model2", metric)] - score[(f"{i}:model1", metric)]
                      for i, k in zip(ids, keep, strict=True) if k])
        d = ((d - d.min()) / (d.max() - d.min()) - 0.5) * 4
        y = np.array([h[f"{cell.aspect}_label"] for n, h in enumerate(human) if keep[n // 2]], dtype=float)
        x = np.repeat(d, 2)
        assert (cell.pearson, cell.spearman) == (round(float(stats.pearsonr(x, y)[0]) * 100, 2),
                                                 round(float(stats.spearmanr(x, y)[0]) * 100, 2))
        assert cell.pairs == sum(keep) and cell.left_out == 280 - sum(keep)
        assert 250 < cell.pairs <= 280 and cell.pearson is not None and cell.pearson > 0
