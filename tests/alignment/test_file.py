"""The aligned judge file: versioned, unknown fields refused, another judge refused unless forced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.alignment import AlignedJudge, JudgeRef, load_aligned
from referee.errors import InputError, UserError


def _judge() -> AlignedJudge:
    return AlignedJudge.model_validate({
        "method": ["map"], "judge": {"provider": "openai", "model": "m1", "template_hash": "t1"},
        "map": {"knots": [[0.2, 0.0], [0.8, 1.0]], "levels": None, "pass_mark": 0.5},
        "labels": {"path": "l.jsonl", "sha256": "ab" * 32, "n": 40, "reviewers": ["ann"], "no_consensus": 0},
        "split": {"seed": 0, "holdout": 0.5, "grouped": False, "heldout_ids": ["a", "b"]},
        "heldout": {"n": 20}})


def test_round_trip_and_map(tmp_path: Path) -> None:
    j = _judge()
    back = load_aligned(j.save(tmp_path / "a.json"))
    assert back == j and back.hash == j.hash and len(j.hash) == 16
    assert back.map_score(0.5) == pytest.approx(0.5) and back.map_score(0.0) == 0.0


def test_unknown_field_and_version_are_refused(tmp_path: Path) -> None:
    data = _judge().model_dump(mode="json")
    (tmp_path / "x.json").write_text(json.dumps({**data, "extra": 1}))
    with pytest.raises(InputError, match="extra") as exc:
        load_aligned(tmp_path / "x.json")
    assert exc.value.field == "extra"
    (tmp_path / "v.json").write_text(json.dumps({**data, "schema_version": 2}))
    with pytest.raises(InputError, match="schema_version"):
        load_aligned(tmp_path / "v.json")
    (tmp_path / "n.json").write_text(json.dumps({**data, "map": {**data["map"], "knots": [[0.1, "NaN"]]}}))
    with pytest.raises(InputError):
        load_aligned(tmp_path / "n.json")


def test_another_judge_is_refused_or_warned_with_force() -> None:
    j = _judge()
    j.check_judge(JudgeRef(provider="openai", model="m1", template_hash="t1"))
    with pytest.raises(UserError, match="model 'm1' \\(fitted\\) vs 'm2'"):
        j.check_judge(JudgeRef(provider="openai", model="m2", template_hash="t1"))
    with pytest.warns(UserWarning, match="used anyway"):
        j.check_judge(JudgeRef(model="m1", template_hash="t2"), force=True)


def test_a_map_that_is_not_monotone_is_refused(tmp_path: Path) -> None:
    data = _judge().model_dump(mode="json")
    (tmp_path / "m.json").write_text(json.dumps({**data, "map": {**data["map"], "knots": [[0.1, 1.0], [0.5, 0.0]]}}))
    with pytest.raises(InputError, match="never fall") as exc:
        load_aligned(tmp_path / "m.json")
    assert exc.value.field == "map.knots"


def test_a_prompt_alignment_round_trips_and_puts_its_examples_in_the_judge_prompt(tmp_path: Path) -> None:
    from referee.alignment import AlignedLLMJudge, load_aligned
    from referee.alignment._file import AlignedJudge, Example, JudgeRef, LabelsRef, SplitRef
    from referee.cases import Case
    from referee.judges import LLMJudge, Pairwise

    al = AlignedJudge(method=["instructions", "examples"], judge=JudgeRef(model="m"), prompt="- correctness: cite it",
                      prompt_part="rubric", examples=[Example(id="a", label=1.0, rationale="cites",
                                                              case={"input": "q?", "output": "yes [source]"})],
                      labels=LabelsRef(path="l.jsonl", sha256="0", n=20, reviewers=["ann"], no_consensus=0),
                      split=SplitRef(seed=0, holdout=0.5, grouped=False, heldout_ids=["b"]), heldout={})
    back = load_aligned(al.save(tmp_path / "a.json"))
    assert back == al and back.hash == al.hash and back.changes_prompt
    judge = back.apply(LLMJudge(criteria=["correctness"]))
    assert isinstance(judge, AlignedLLMJudge) and judge.rubric == "- correctness: cite it"
    user, _ = judge.fill(Case(id="c", data={"input": "where?", "output": "here"}))
    assert user.index("yes [source]") < user.index("here") and "cite it" in user
    with pytest.raises(UserError, match="llm_judge"):
        back.apply(Pairwise())
