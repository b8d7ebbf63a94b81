"""``referee calibrate``: the seed's behaviour plus agreement statistics and gates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.cli import cli

LOG = """# Judge prompt

## Calibration log

| Date | Cases checked | Mean delta vs human | Action taken |
|---|---|---|---|
| - | - | - | not yet calibrated |

Prompt text continues here.
"""


def _jsonl(path: Path, rows: list[dict[str, object]]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    judge = _jsonl(tmp_path / "judge.jsonl", [
        {"id": "a", "score": 0.9}, {"id": "b", "score": 0.2}, {"id": "c", "score": 0.6},
        {"id": "d", "score": 1.0}, {"id": "judge-only", "score": 0.5},
        {"id": "e", "status": "unscored", "error": "invalid judge reply"},
    ])
    human = _jsonl(tmp_path / "human.jsonl", [
        {"id": "a", "score": 1.0}, {"id": "b", "score": 0.0}, {"id": "c", "score": 1.0},
        {"id": "d", "score": 1.0}, {"id": "e", "score": 0.0}, {"id": "human-only", "score": 1},
    ])
    return judge, human


def test_seed_behaviour_mean_delta_and_worst_first(files: tuple[str, str], tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    judge, human = files
    out = tmp_path / "cal.json"
    assert cli(["calibrate", judge, human, "--json-out", str(out)]) == 0  # (0.1+0.2+0.4+0)/4 = 0.175
    data = json.loads(out.read_text())
    assert data["n"] == 4
    assert data["mean_abs_delta"] == pytest.approx(0.175)
    assert [r["id"] for r in data["per_case"]] == ["c", "b", "a", "d"]
    cap = capsys.readouterr()  # the seed's report on stdout, referee's statistics on stderr: nothing twice
    assert cap.out.index("  c: judge=0.60 human=1.00 delta=0.40") < cap.out.index("  b: judge=0.20")
    assert "0.175" in cap.out and "Agreement with human labels" in cap.err
    assert "delta=" not in cap.err and "Per-case" not in cap.err and "Mean delta vs human" not in cap.err
    assert any("unscored" in n for n in data["notes"])
    assert cli(["calibrate", judge, human, "--threshold", "0.1"]) == 1


def test_update_log_replaces_placeholder_then_appends(files: tuple[str, str], tmp_path: Path) -> None:
    judge, human = files
    log = tmp_path / "prompt.md"
    log.write_text(LOG, encoding="utf-8")
    assert cli(["calibrate", judge, human, "--update-log", str(log), "--action", "tightened rubric"]) == 0
    text = log.read_text()
    assert "not yet calibrated" not in text
    assert "| 4 | 0.175 | tightened rubric |" in text
    assert cli(["calibrate", judge, human, "--update-log", str(log), "--threshold", "0.01"]) == 1
    lines = [ln for ln in log.read_text().splitlines() if ln.startswith("| 2")]
    assert len(lines) == 2 and lines[1].endswith(
        "| 4 | 0.175 | ACTION NEEDED: mean delta 0.175 exceeds 0.01 — revise the judge prompt |")
    assert log.read_text().rstrip().endswith("Prompt text continues here.")


def test_binary_labels_get_kappa_and_gates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    judge = _jsonl(tmp_path / "j.jsonl", [{"id": str(i), "score": bool(i % 2)} for i in range(10)])
    human = _jsonl(tmp_path / "h.jsonl", [{"id": str(i), "label": int(i % 2 or i == 4)} for i in range(10)])
    out = tmp_path / "c.json"
    assert cli(["calibrate", judge, human, "--threshold", "1", "--json-out", str(out)]) == 0
    ag = json.loads(out.read_text())["agreement"]
    assert ag["kappa_weights"] is None
    assert ag["exact_agreement"]["estimate"] == pytest.approx(0.9)
    assert ag["confusion"] == [[4, 1], [0, 5]]
    assert ag["kappa"]["estimate"] == pytest.approx(0.8)
    assert cli(["calibrate", judge, human, "--threshold", "1", "--min-kappa", "0.9"]) == 1
    assert "kappa 0.800 is below" in capsys.readouterr().err


def test_likert_scales_quadratic_kappa(tmp_path: Path) -> None:
    judge = _jsonl(tmp_path / "j.jsonl", [{"id": str(i), "score": s} for i, s in enumerate([1, 2, 3, 4, 5, 5])])
    human = _jsonl(tmp_path / "h.jsonl", [{"id": str(i), "score": s} for i, s in enumerate([1, 2, 4, 4, 5, 4])])
    out = tmp_path / "c.json"
    assert cli(["calibrate", judge, human, "--threshold", "1", "--json-out", str(out)]) == 0
    ag = json.loads(out.read_text())["agreement"]
    assert ag["kappa_weights"] == "quadratic" and ag["labels"] == [1, 2, 3, 4, 5]


def test_no_ids_in_common_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    judge = _jsonl(tmp_path / "j.jsonl", [{"id": "x", "score": 1.0}])
    human = _jsonl(tmp_path / "h.jsonl", [{"id": "y", "score": 1.0}])
    assert cli(["calibrate", judge, human]) == 2
    assert "no ids in common" in capsys.readouterr().err


def test_mismatched_scales_are_an_error_until_mapped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    judge = _jsonl(tmp_path / "j.jsonl", [{"id": str(i), "score": s} for i, s in enumerate([0.0, 0.5, 1.0])])
    human = _jsonl(tmp_path / "h.jsonl", [{"id": str(i), "score": s} for i, s in enumerate([1, 3, 5])])
    assert cli(["calibrate", judge, human]) == 2
    assert "scales do not match" in capsys.readouterr().err
    assert cli(["calibrate", judge, human, "--human-scale", "1-5"]) == 0
    assert cli(["calibrate", judge, human, "--human-scale", "1-4"]) == 2  # 5 is outside the scale


def test_one_sided_sample_is_reported(tmp_path: Path) -> None:
    judge = _jsonl(tmp_path / "j.jsonl", [{"id": str(i), "score": 1} for i in range(4)])
    human = _jsonl(tmp_path / "h.jsonl", [{"id": str(i), "score": i % 2} for i in range(4)])
    out = tmp_path / "c.json"
    assert cli(["calibrate", judge, human, "--threshold", "1", "--json-out", str(out),
                "--min-spearman", "0.1"]) == 1  # an undefined statistic never passes a gate
    data = json.loads(out.read_text())
    assert data["agreement"]["spearman"]["estimate"] is None
    assert any("one-sided" in n for n in data["notes"])


def test_bad_value_names_file_line_and_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    judge = _jsonl(tmp_path / "j.jsonl", [{"id": "a", "score": 1}, {"id": "b", "score": "high"}])
    human = _jsonl(tmp_path / "h.jsonl", [{"id": "a", "score": 1}])
    assert cli(["calibrate", judge, human]) == 0  # skipped with a warning, as the seed does
    assert "warning: skipped " in (err := capsys.readouterr().err) and "j.jsonl:2: field 'score'" in err
    assert cli(["calibrate", judge, human, "--strict"]) == 2
    assert "j.jsonl:2: field 'score'" in capsys.readouterr().err


def test_float_noise_does_not_fail_the_threshold(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 0.9 - 0.7 is 0.20000000000000007 in floating point: printed "0.200", it must not fail a 0.2 gate.
    judge = _jsonl(tmp_path / "j.jsonl", [{"id": "a", "score": 0.9}, {"id": "b", "score": 0.3}])
    human = _jsonl(tmp_path / "h.jsonl", [{"id": "a", "score": 0.7}, {"id": "b", "score": 0.1}])
    assert cli(["calibrate", judge, human, "--threshold", "0.2"]) == 0
    assert "mean delta 0.200 (threshold 0.2)" in (out := capsys.readouterr().out) and "OK: none needed" in out
    assert cli(["calibrate", judge, human, "--threshold", "0.19"]) == 1


def test_missing_log_file_fails_before_the_report(files: tuple[str, str], tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    judge, human = files
    assert cli(["calibrate", judge, human, "--update-log", str(tmp_path / "nope.md")]) == 2
    cap = capsys.readouterr()
    assert "nope.md" in cap.err and "not found" in cap.err
    assert "Mean delta" not in cap.out + cap.err  # nothing computed or printed for a run that cannot be logged


def test_continuous_scores_get_no_exact_agreement(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    judge = _jsonl(tmp_path / "j.jsonl", [{"id": str(i), "score": s} for i, s in enumerate([0.1, 0.4, 0.8, 0.95])])
    human = _jsonl(tmp_path / "h.jsonl", [{"id": str(i), "score": s} for i, s in enumerate([0, 1, 1, 1])])
    out = tmp_path / "c.json"
    assert cli(["calibrate", judge, human, "--threshold", "1", "--json-out", str(out)]) == 0
    ag = json.loads(out.read_text())["agreement"]
    assert ag["exact_agreement"] is None and ag["kappa"] is None
    assert "exact agreement                   │           not computed" in capsys.readouterr().err
    assert cli(["calibrate", judge, human, "--threshold", "1", "--min-agreement", "0.5"]) == 1


def test_zero_width_interval_is_labelled(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    judge = _jsonl(tmp_path / "j.jsonl", [{"id": str(i), "score": i % 2} for i in range(6)])
    human = _jsonl(tmp_path / "h.jsonl", [{"id": str(i), "score": i % 2} for i in range(6)])
    assert cli(["calibrate", judge, human]) == 0
    out = capsys.readouterr().err
    # Perfect agreement on 6 cases bootstraps to [1, 1]; the table must not present that as certainty.
    assert "zero-width CI" in out


def test_human_rows_without_a_label_are_explained(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    judge = _jsonl(tmp_path / "j.jsonl", [{"id": "a", "score": 1.0}])
    human = _jsonl(tmp_path / "h.jsonl", [{"id": "a", "verdict": "pass"}])
    assert cli(["calibrate", judge, human]) == 2
    err = capsys.readouterr().err
    assert "no labelled rows" in err and "1 row(s) without a value" in err and "--human-field" in err


def test_every_case_is_listed_by_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    judge = _jsonl(tmp_path / "j.jsonl", [{"id": f"case{i:02d}", "score": 0.5} for i in range(30)])
    human = _jsonl(tmp_path / "h.jsonl", [{"id": f"case{i:02d}", "score": (i % 3) / 2} for i in range(30)])
    assert cli(["calibrate", judge, human, "--threshold", "1"]) == 0
    out = capsys.readouterr().out
    assert all(f"  case{i:02d}: judge=" in out for i in range(30))
    assert cli(["calibrate", judge, human, "--threshold", "1", "--show", "3"]) == 0
    out = capsys.readouterr().out
    assert "27 more (--show limits the list)" in out and sum(f"case{i:02d}" in out for i in range(30)) == 3


def test_pass_fail_labels_meet_the_judges_verdicts_not_its_scores(tmp_path: Path) -> None:
    from referee.calibrate._calibrate import calibrate, read_labels

    judge = tmp_path / "j.jsonl"
    judge.write_text("".join(json.dumps({"id": f"c{i}", "score": s, "passed": s >= 0.7}) + "\n"
                             for i, s in enumerate([0.91, 0.75, 0.2, 0.35, 0.8, 0.1])), encoding="utf-8")
    human = tmp_path / "h.jsonl"
    human.write_text("".join(json.dumps({"id": f"c{i}", "passed": p, "score": 1.0 if p else 0.0}) + "\n"
                             for i, p in enumerate([True, True, False, True, True, False])), encoding="utf-8")
    cal = calibrate(read_labels(judge), read_labels(human))
    assert cal.stats.exact is not None and cal.stats.exact.estimate == pytest.approx(5 / 6)
    assert cal.stats.kappa is not None and cal.stats.kappa.estimate is not None
    assert any("pass/fail verdicts" in n for n in cal.notes)
    # without verdicts on the judge's rows the scores are compared as before (continuous: no kappa)
    judge.write_text("".join(json.dumps({"id": f"c{i}", "score": s}) + "\n"
                             for i, s in enumerate([0.91, 0.75, 0.2, 0.35, 0.8, 0.1])), encoding="utf-8")
    assert calibrate(read_labels(judge), read_labels(human)).stats.kappa is None


def test_duplicate_human_labels_are_a_warning_saying_what_was_done(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Two labellers in one file (or one file appended twice): each id's labels are averaged, and a warning names
    the ids, their lines and values, and the mean used."""
    judge = _jsonl(tmp_path / "j.jsonl", [{"id": i, "score": s} for i, s in (("a", 4), ("b", 2), ("c", 5))])
    human = _jsonl(tmp_path / "h.jsonl", [{"id": "a", "score": 4}, {"id": "b", "score": 1}, {"id": "c", "score": 5},
                                          {"id": "b", "score": 3}, {"id": "a", "score": 4}])
    assert cli(["calibrate", judge, human, "--threshold", "5"]) == 0
    err = capsys.readouterr().err
    warning = next(line for line in err.splitlines() if line.startswith("warning:"))
    assert "2 id(s) with more than one human label" in warning and "mean" in warning
    assert "'a' (lines 1, 5: 4, 4 -> 4)" in warning and "'b' (lines 2, 4: 1, 3 -> 2)" in warning
    assert "'c'" not in warning
