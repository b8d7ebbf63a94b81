"""``align``: the keep-or-refuse rule on held-out cases, the references, the refit, and the bad input list."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import referee
from referee.alignment import align, align_values, load_aligned
from referee.errors import InputError, UserError
from tests.support.alignment import noise, squashed, write_labels, write_run


def _labels(values: dict[str, float], **extra: object) -> list[dict[str, object]]:
    return [{"id": c, "score": v, **extra} for c, v in values.items()]


def test_a_squashed_judge_is_aligned_with_a_gain_over_both_references(tmp_path: Path) -> None:
    judge, human = squashed(60, seed=3)
    al = referee.align(write_run(tmp_path / "run.jsonl", judge), write_labels(tmp_path / "l.jsonl", _labels(human)))
    assert al.kind == "ordinal" and al.figures.metric == "alpha"
    assert al.written and al.aligned is not None
    for ref in ("raw", "baseline"):
        g = al.figures.decision_gain(ref)
        assert g.lo is not None and g.lo > 0
    # Figures are on held-out cases only, and the judge users get is refitted on all of them.
    assert al.figures.n == len(al.split.heldout) < al.n_labels == 60
    assert set(al.split.heldout).isdisjoint(al.split.train)
    assert al.aligned.split.heldout_ids == al.split.heldout
    assert al.aligned.labels.n == 60 and al.aligned.judge.model == "judge-1"
    mapped = [al.aligned.map_score(judge[c]) for c in human]
    assert np.mean(np.isclose(mapped, list(human.values()))) > 0.8
    assert not al.too_wide or al.more_labels and sum(al.more_labels.values()) > 0


def test_pure_noise_writes_no_judge_in_at_least_93_percent_of_200_seeds() -> None:
    for binary in (True, False):
        written = 0
        for seed in range(200):
            judge, human = noise(40, seed, binary=binary)
            verdicts = {c: s >= 0.7 for c, s in judge.items()}
            al, final, _ = align_values(judge, human, raw_verdicts=verdicts, n_boot=400, seed=seed, split_seed=seed,
                                        decision_only=True)
            written += al.written
            assert (final is not None) == al.written
        assert written <= 14, (binary, written)  # >= 93% of 200 seeds refused


def test_works_from_20_labels_and_says_how_many_more_would_narrow_the_interval(tmp_path: Path) -> None:
    judge, human = squashed(20, seed=5)
    al = align(write_run(tmp_path / "run.jsonl", judge), write_labels(tmp_path / "l.jsonl", _labels(human)))
    assert al.n_labels == 20 and 7 <= len(al.split.heldout) <= 13
    assert al.too_wide and al.more_labels is not None
    assert set(al.more_labels) == {f"{v:g}" for v in set(human.values())}
    assert sum(al.more_labels.values()) > 20
    assert any("more labels" in line for line in al.lines())


def test_a_map_never_decides_on_rank_correlation() -> None:
    judge, human = squashed(40, seed=1)
    with pytest.raises(UserError, match="rank correlation"):
        align_values(judge, human, metric="spearman")


def test_the_baseline_is_the_training_median_and_shrinking_to_it_is_not_a_gain() -> None:
    judge, human = noise(80, 11, binary=False)
    al, _, _ = align_values(judge, human, metric="mae", n_boot=500)
    # On noise, a map pulls scores to the labels' centre: a gain in error over the raw judge ...
    assert al.figures.gains["raw"]["mae"].estimate is not None and al.figures.gains["raw"]["mae"].estimate > 0
    # ... that the no-judge baseline matches, so nothing is written.
    assert not al.written
    assert any("no-judge baseline" in r and "not above 0" in r for r in al.reasons)


def test_groups_stay_on_one_side(tmp_path: Path) -> None:
    judge, human = squashed(48, seed=2)
    meta = {c: {"prompt": f"p{i // 4}"} for i, c in enumerate(judge)}
    al = align(write_run(tmp_path / "run.jsonl", judge, metadata=meta),
               write_labels(tmp_path / "l.jsonl", _labels(human)), group_field="prompt")
    held = {meta[c]["prompt"] for c in al.split.heldout}
    train = {meta[c]["prompt"] for c in al.split.train}
    assert held and train and held.isdisjoint(train)
    assert al.split.grouped


def test_pass_fail_labels_get_a_pass_mark_and_kappa(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    ids = [f"c{i}" for i in range(60)]
    truth = rng.random(60)
    human = {c: float(t > 0.5) for c, t in zip(ids, truth, strict=True)}
    judge = {c: float(0.2 + 0.3 * t) for c, t in zip(ids, truth, strict=True)}  # never reaches 0.7: all fail raw
    al = align(write_run(tmp_path / "run.jsonl", judge), write_labels(tmp_path / "l.jsonl", _labels(human)))
    assert al.kind == "binary" and al.figures.metric == "kappa"
    assert al.figures.values["raw"]["kappa"].estimate == pytest.approx(0.0)
    assert al.written and al.aligned is not None and al.aligned.map is not None
    mark = al.aligned.map.pass_mark
    assert mark is not None and 0.3 < mark < 0.4  # 0.2 + 0.3 * 0.5 = 0.35
    assert al.changed and all(c["raw"] != c["aligned"] for c in al.changed)


# Bad input --------------------------------------------------------------------------------------------------


def test_labels_on_ids_not_in_the_run(tmp_path: Path) -> None:
    judge, human = squashed(30, seed=1)
    run = write_run(tmp_path / "run.jsonl", judge)
    with pytest.raises(UserError, match="none of the 30 labelled"):
        align(run, write_labels(tmp_path / "l.jsonl", [{"id": "other-" + c, "score": v} for c, v in human.items()]))
    extra = _labels(human) + [{"id": "not-in-run", "score": 1.0}]
    al = align(run, write_labels(tmp_path / "l2.jsonl", extra))
    assert any("1 labelled case(s) are not in the judge's run" in n for n in al.notes)


def test_one_class_only(tmp_path: Path) -> None:
    judge, human = squashed(30, seed=1)
    with pytest.raises(UserError, match="one class only"):
        align(write_run(tmp_path / "run.jsonl", judge),
              write_labels(tmp_path / "l.jsonl", [{"id": c, "score": 1.0} for c in human]))


def test_labels_on_another_scale(tmp_path: Path) -> None:
    judge, human = squashed(30, seed=1)
    run = write_run(tmp_path / "run.jsonl", judge)
    likert = write_labels(tmp_path / "l.jsonl", [{"id": c, "score": 1 + 4 * v} for c, v in human.items()])
    with pytest.raises(UserError, match="--human-scale"):
        align(run, likert)
    al = align(run, likert, human_scale=(1, 5))
    assert al.aligned is not None and al.aligned.map is not None and al.aligned.map.human_scale == (1, 5)
    bad = write_labels(tmp_path / "bad.jsonl", [*_labels(human), {"id": "x", "score": 7}])
    with pytest.raises(InputError, match="outside the labels' scale") as exc:
        align(run, bad, human_scale=(0, 1))
    assert exc.value.line == 31


def test_two_reviewers_who_disagree_leave_the_case_out(tmp_path: Path) -> None:
    judge, human = squashed(30, seed=1)
    lines = [{"id": c, "score": v, "reviewer": "ann"} for c, v in human.items()]
    first = next(iter(human))
    lines.append({"id": first, "score": 1.0 - human[first] if human[first] != 0.5 else 1.0, "reviewer": "bob"})
    al = align(write_run(tmp_path / "run.jsonl", judge), write_labels(tmp_path / "l.jsonl", lines))
    assert al.n_labels == 29
    assert any("2 reviewers" in n and "1 case(s) had none" in n for n in al.notes)
    only_bob = align(write_run(tmp_path / "run2.jsonl", judge), tmp_path / "l.jsonl", reviewers=["ann"])
    assert only_bob.n_labels == 30


def test_too_few_labels(tmp_path: Path) -> None:
    judge, human = squashed(8, seed=1)
    with pytest.raises(UserError, match="at least 10"):
        align(write_run(tmp_path / "run.jsonl", judge), write_labels(tmp_path / "l.jsonl", _labels(human)))


def test_a_judge_score_that_is_not_finite_is_refused() -> None:
    judge, human = squashed(20, seed=1)
    judge[next(iter(judge))] = math.inf
    with pytest.raises(UserError, match="finite"):
        align_values(judge, human)


def test_the_aligned_file_round_trips_and_names_its_judge(tmp_path: Path) -> None:
    judge, human = squashed(60, seed=3)
    al = align(write_run(tmp_path / "run.jsonl", judge), write_labels(tmp_path / "l.jsonl", _labels(human)))
    assert al.aligned is not None
    back = load_aligned(al.aligned.save(tmp_path / "a.json"))
    assert back == al.aligned and back.hash == al.aligned.hash


def test_several_reviewers_get_their_agreement_beside_the_judge(tmp_path: Path) -> None:
    judge, human = squashed(40, seed=6)
    rng = np.random.default_rng(0)
    lines = [{"id": c, "score": v, "reviewer": "ann"} for c, v in human.items()]
    # bob agrees with ann on most cases and differs by one level on some
    lines += [{"id": c, "score": v if rng.random() < 0.8 else min(1.0, v + 0.25), "reviewer": "bob"}
              for c, v in human.items()]
    lines += [{"id": c, "score": v, "reviewer": "cy"} for c, v in list(human.items())[:20]]
    al = align(write_run(tmp_path / "run.jsonl", judge), write_labels(tmp_path / "l.jsonl", lines), n_boot=300)
    a = al.reviewers_alpha
    assert a is not None and a.estimate is not None and 0.7 < a.estimate < 1.0
    assert a.n == 40
    assert any("reviewers' agreement" in line for line in al.lines())
    one = align(write_run(tmp_path / "run2.jsonl", judge), tmp_path / "l.jsonl", reviewers=["ann"], n_boot=300)
    assert one.reviewers_alpha is None
