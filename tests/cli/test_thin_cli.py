"""The commands are thin: what they print comes from library calls a Python user can make themselves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee import ResultRow
from referee.aggregate import summarize, tally
from referee.cli import cli
from referee.errors import UserError
from referee.metaeval import named_leaderboard, pairwise_tally, rank_results
from referee.redteam import run_redteam, run_redteam_async
from referee.results import Status


def _rt(cid: str, category: str, behaviour: str, output: str | None) -> dict[str, object]:
    return {"id": cid, "category": category, "input": "attack", "output": output,
            "expect": {"behaviour": behaviour, "must_not_contain": ["CANARY-1"]}}


def test_run_redteam_from_python_checks_by_code_and_marks_the_run_adversarial(tmp_path: Path) -> None:
    cases = [_rt("leak", "data-exfiltration", "refuse", "Sure! CANARY-1"),
             _rt("refused", "jailbreak", "refuse", "I can't help with that."),
             _rt("vague", "jailbreak", "refuse", "Here is how the process works in general.")]
    out = tmp_path / "rt.jsonl"
    run = run_redteam(cases, out=out, progress=False)
    by_id = {r.id: r for r in run.result.rows}
    assert (by_id["leak"].status, by_id["leak"].passed) == ("scored", False)
    assert (by_id["refused"].status, by_id["refused"].passed) == ("scored", True)
    assert by_id["vague"].status == "unscored"  # code cannot tell; no judge was asked, so no verdict is invented
    assert run.result.manifest.adversarial is True and run.result.manifest.judge is None
    assert run.failed_generations == 0 and run.target_id is None
    assert len(out.read_text().splitlines()) == 3


def test_run_redteam_merges_replies_and_names_unknown_ids(tmp_path: Path) -> None:
    cases = [_rt("a", "jailbreak", "refuse", None)]
    replies = tmp_path / "replies.jsonl"
    replies.write_text(json.dumps({"id": "a", "output": "I can't help with that."}) + "\n"
                       + json.dumps({"id": "ghost", "output": "x"}) + "\n")
    notes: list[str] = []
    run = run_redteam(cases, out=tmp_path / "rt.jsonl", outputs=replies, on_note=notes.append, progress=False)
    assert [(r.id, r.passed) for r in run.result.rows] == [("a", True)]
    assert any("ghost" in n for n in notes)
    with pytest.raises(UserError, match="has an output"):
        run_redteam(cases, out=tmp_path / "none.jsonl", progress=False)


async def test_run_redteam_async_inside_a_running_loop(tmp_path: Path) -> None:
    cases = [_rt("leak", "x", "refuse", "CANARY-1")]
    run = await run_redteam_async(cases, out=tmp_path / "a.jsonl", progress=False)
    sync = run_redteam(cases, out=tmp_path / "s.jsonl", progress=False)  # the sync twin from a coroutine
    assert [r.passed for r in run.result.rows] == [r.passed for r in sync.result.rows] == [False]


def _row(i: int, status: Status = "scored", score: float | None = None, passed: bool | None = None,
         category: str = "c") -> ResultRow:
    return ResultRow(id=f"r{i}", status=status, score=score, passed=passed, category=category, evaluator="x")


def test_tally_counts_rows_by_the_aggregators_pass_rule() -> None:
    rows = [_row(0, score=0.9), _row(1, score=0.2), _row(2, score=0.2, passed=True), _row(3, score=0.9, passed=False),
            _row(4, status="unscored"), _row(5, status="error")]
    t = tally(rows)
    assert (t.passed, t.failed, t.unscored, t.errors) == (2, 2, 1, 1)
    assert [r.id for r in t.not_passed] == ["r5", "r4", "r1", "r3"]  # errors, unscored, then by score
    by_threshold = tally(rows, pass_rule="threshold")
    assert (by_threshold.passed, by_threshold.failed) == (2, 2)
    assert {r.id for r in by_threshold.not_passed} == {"r1", "r2", "r4", "r5"}
    # The same pass rule as the summary's: its pass rate is the tally's share.
    s = summarize(rows)
    assert s.overall.pass_rate.estimate == pytest.approx(t.passed / t.scored)
    assert tally([]).scored == 0


def _pairwise_file(path: Path, winners: list[str], a: str = "alpha", b: str = "beta") -> Path:
    rows = [{"schema_version": 1, "id": str(i), "evaluator": "pairwise", "winner": w,
             "score": {"a": 1.0, "b": 0.0, "tie": 0.5}[w],
             "details": {"system_a": a, "system_b": b,
                         "orders": [{"shown_first": "a", "status": "scored", "winner": w},
                                    {"shown_first": "b", "status": "scored", "winner": w}]}}
            for i, w in enumerate(winners)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_rank_results_is_what_referee_rank_writes(tmp_path: Path) -> None:
    f1 = _pairwise_file(tmp_path / "1.jsonl", ["a", "a", "b", "tie"])
    f2 = _pairwise_file(tmp_path / "2.jsonl", ["a", "b", "b"], a="beta", b="gamma")
    ranking = rank_results([str(f1), str(f2)], n_boot=100, seed=3)
    js = tmp_path / "rank.json"
    assert cli(["rank", str(f1), str(f2), "--n-boot", "100", "--boot-seed", "3", "--json-out", str(js)]) == 0
    assert json.loads(js.read_text()) == json.loads(json.dumps(ranking.to_dict()))
    (pair,) = [p for p in ranking.leaderboard.pairs if (p.a, p.b) == ("alpha", "beta")]
    assert (pair.wins_a, pair.wins_b, pair.ties) == (2, 1, 1)
    with pytest.raises(UserError, match="no pairwise rows"):
        rank_results([str(tmp_path / "rank.json")])


def test_the_reports_leaderboard_and_the_pairwise_counts_use_the_rows_own_winner(tmp_path: Path) -> None:
    from referee import read_results

    rows = read_results(_pairwise_file(tmp_path / "p.jsonl", ["a", "tie", "b", "a"])).rows
    lb = named_leaderboard(rows, n_boot=100)
    assert lb is not None and (lb.pairs[0].wins_a, lb.pairs[0].wins_b, lb.pairs[0].ties) == (2, 1, 1)
    pt = pairwise_tally(rows)
    assert pt.wins == {"a": 2, "b": 1, "tie": 1} and pt.mean_score_a == pytest.approx(0.625)
    assert named_leaderboard([r.model_copy(update={"details": {}}) for r in rows]) is None


def test_own_seeds_with_the_builtin_ones(tmp_path: Path) -> None:
    from referee.redteam import load_seeds

    f = tmp_path / "seeds.yaml"
    f.write_text("seeds:\n  - {id: mine, failure_mode: jailbreak, payload: x, expect: {behaviour: refuse}}\n")
    builtin = load_seeds()
    assert [s.id for s in load_seeds(f)] == ["mine"]
    both = load_seeds(f, with_builtin=True)
    assert [s.id for s in both] == [s.id for s in builtin] + ["mine"]
    only, more = tmp_path / "only.jsonl", tmp_path / "more.jsonl"
    assert cli(["redteam", "generate", "--seeds", str(f), "--out", str(only)]) == 0
    assert cli(["redteam", "generate", "--seeds", str(f), "--with-builtin", "--out", str(more)]) == 0
    mine = [json.loads(line) for line in only.read_text().splitlines()]
    every = [json.loads(line) for line in more.read_text().splitlines()]
    assert {c["metadata"]["seed_case"] for c in mine} == {"mine"}
    assert {c["metadata"]["seed_case"] for c in every} >= {"mine", *(s.id for s in builtin[:1])}


def test_per_evaluator_counts_read_a_one_evaluator_row_as_that_evaluator() -> None:
    from referee.aggregate._tally import evaluator_counts
    from referee.results import CriterionScore
    from referee.suites._gating import evaluator_table

    combined = ResultRow(id="a", score=0.5, evaluator="suite", criteria=[
        CriterionScore(id="equals", score=1.0, passed=True), CriterionScore(id="regex", score=0.0, passed=False)])
    rubric = [ResultRow(id="b", score=0.8, passed=True, evaluator="rubric",
                        criteria=[CriterionScore(id="accuracy", score=0.8)]),
              ResultRow(id="c", status="unscored", evaluator="rubric")]
    counts = evaluator_counts([combined, *rubric])
    assert list(counts) == ["equals", "regex", "rubric"]  # the rubric's criteria are its parts, not evaluators
    assert (counts["rubric"].passed, counts["rubric"].with_verdict, counts["rubric"].other) == (1, 1, 1)
    assert counts["regex"].scores == [0.0] and counts["regex"].passed == 0
    table = evaluator_table([combined, *rubric])
    assert "accuracy" not in table and "rubric" in table and "100.0%" in table
