"""The rubric format: the shipped agent-evaluation rubric, gold criteria defaults and bad-file errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.cli import cli
from referee.errors import InputError
from referee.rubrics import list_rubrics, load_rubric


def test_agent_evaluation_is_the_seed_rubric() -> None:
    r = load_rubric("agent-evaluation")
    assert [c.id for c in r.criteria] == ["accuracy", "groundedness", "completeness", "coherence", "helpfulness"]
    assert [c.weight for c in r.criteria] == [0.30, 0.25, 0.20, 0.15, 0.10]
    assert {r.criterion_scale(c) for c in r.criteria} == {"1-5"}
    assert r.composite == "weighted_sum" and r.evidence_required and r.fail_below == 2.5
    assert [(b.min, b.label) for b in r.bands] == [
        (4.5, "EXCELLENT"), (3.5, "GOOD"), (2.5, "ADEQUATE"), (1.5, "POOR"), (0.0, "FAILING")]


@pytest.mark.parametrize(("composite", "label"), [
    (5.0, "EXCELLENT"), (4.5, "EXCELLENT"), (4.45, "GOOD"), (3.5, "GOOD"), (3.45, "ADEQUATE"),
    (2.5, "ADEQUATE"), (2.49, "POOR"), (1.5, "POOR"), (1.49, "FAILING"), (1.0, "FAILING"),
])
def test_half_open_bands_leave_no_hole(composite: float, label: str) -> None:
    band = load_rubric("agent-evaluation").band_for(composite)
    assert band is not None and band.label == label


def test_composite_is_the_weighted_sum_not_the_mean() -> None:
    r = load_rubric("agent-evaluation")
    raw: dict[str, float] = {"accuracy": 4, "groundedness": 3, "completeness": 4, "coherence": 5, "helpfulness": 2}
    assert r.composite_of(raw) == pytest.approx(3.7)  # the plain mean would be 3.6
    assert r.composite_normalised(raw) == pytest.approx((3.7 - 1) / 4)
    # All 4s land exactly on 4.0 (no float noise at a band edge).
    assert r.composite_of(dict.fromkeys(raw, 4)) == 4.0
    assert r.needs_actions("ADEQUATE") and r.needs_actions("FAILING") and not r.needs_actions("GOOD")


def test_gold_criteria_defaults_as_the_seed(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("skill: s\ncriteria:\n  - id: a\n    prompt: check a\n  - id: b\n    weight: critical\n    prompt: b\n")
    r = load_rubric(f)
    assert r.kind == "gold" and r.scale == "0-2" and r.name == "s"
    assert r.judge_model == "claude-sonnet-4-6" and r.pass_threshold == 6 and r.fail_on_critical is True
    assert [c.critical for c in r.criteria] == [False, True]  # weight defaults to important


def _bad(tmp_path: Path, text: str) -> InputError:
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(InputError) as ei:
        load_rubric(f)
    assert ei.value.file == str(f)
    return ei.value


def test_weights_must_sum_to_one_when_the_rubric_says_so(tmp_path: Path) -> None:
    err = _bad(tmp_path, "composite: weighted_sum\ncriteria:\n  - {id: a, weight: 0.5}\n  - {id: b, weight: 0.4}\n")
    assert "sum to 0.9" in str(err)
    err = _bad(tmp_path, "weights_sum_to_one: true\ncriteria:\n  - {id: a, weight: 0.5}\n  - {id: b}\n")
    assert "without a weight" in str(err)
    # Without the rule, weights are relative.
    ok = tmp_path / "ok.yaml"
    ok.write_text("criteria:\n  - {id: a, weight: 2}\n  - {id: b, weight: 1}\n")
    assert load_rubric(ok).composite_of({"a": 5, "b": 2}) == 4.0


def test_unknown_scale_names_the_field_and_line(tmp_path: Path) -> None:
    err = _bad(tmp_path, "criteria:\n  - id: a\n  - id: b\n    scale: 1-10\n")
    assert err.field == "criteria[1].scale" and err.line == 4
    assert "unknown scale '1-10'" in str(err)


def test_duplicate_ids_and_no_criteria(tmp_path: Path) -> None:
    assert "duplicate criterion id 'a'" in str(_bad(tmp_path, "criteria:\n  - id: a\n  - id: a\n"))
    assert _bad(tmp_path, "criteria: []\n").field == "criteria"
    assert _bad(tmp_path, "skill: s\n").field == "criteria"
    assert "weight 'heavy'" in str(_bad(tmp_path, "skill: s\ncriteria:\n  - {id: a, weight: heavy}\n"))


def test_bad_rubric_exits_2_naming_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "r.yaml"
    f.write_text("criteria:\n  - {id: a, scale: stars}\n")
    out = tmp_path / "o.txt"
    out.write_text("x")
    assert cli(["evaluate", str(out), "--task", "t", "--rubric", str(f)]) == 2
    err = capsys.readouterr().err
    assert str(f) in err and "scale" in err
    assert cli(["evaluate", str(out), "--task", "t", "--rubric", "no-such-rubric"]) == 2
    assert "agent-evaluation" in capsys.readouterr().err  # the error lists the shipped rubrics


def test_rubrics_command_lists_shipped_files(capsys: pytest.CaptureFixture[str]) -> None:
    names = {r.name for r in list_rubrics()}
    assert {"agent-evaluation", "gold-example-prd"} <= names
    assert cli(["rubrics"]) == 0
    out = capsys.readouterr().out
    assert "agent-evaluation" in out and "gold-example-prd" in out and "5 criteria" in out
    assert cli(["rubrics", "agent-evaluation"]) == 0
    assert "weight: 0.30" in capsys.readouterr().out


def test_gold_reads_a_criteria_file_without_gold_only_fields(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("criteria:\n  - {id: a, weight: critical, prompt: p}\n  - {id: b, prompt: q}\n")
    assert load_rubric(f).kind == "rubric"  # as a rubric (referee evaluate)
    r = load_rubric(f, kind="gold")  # as referee gold reads it: the seed's defaults
    assert (r.kind, r.scale, r.pass_threshold, r.fail_on_critical) == ("gold", "0-2", 6, True)
    # A file with rubric-only fields stays a rubric, so `referee gold` can refuse it.
    assert load_rubric("agent-evaluation", kind="gold").kind == "rubric"


def test_errors_point_at_the_offending_criterion(tmp_path: Path) -> None:
    err = _bad(tmp_path, "criteria:\n  - id: a\n  - id: b\n  - id: a\n")
    assert (err.field, err.line) == ("criteria[2].id", 4) and "also criteria[0]" in str(err)
    err = _bad(tmp_path, "skill: s\ncriteria:\n  - id: a\n    weight: heavy\n")
    assert (err.field, err.line) == ("criteria[0].weight", 4)
    err = _bad(tmp_path, "criteria:\n  - id: a\n  - id: b\n    pass_at: 9\n")
    assert (err.field, err.line) == ("criteria[1].pass_at", 4) and "outside" in str(err)
    err = _bad(tmp_path, "actions_from: X\nbands: [{min: 0, label: A}]\ncriteria:\n  - id: a\n")
    assert (err.field, err.line) == ("actions_from", 1)
    assert _bad(tmp_path, "bands: [{min: 0, label: A}, {min: 1, label: A}]\ncriteria: [{id: a}]\n").field == "bands"
