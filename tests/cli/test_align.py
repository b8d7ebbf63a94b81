"""``referee align``: a thin command over ``referee.align``; exit codes 0 / 1 (--min-gain) / 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from referee.alignment import load_aligned
from tests.support.alignment import noise, squashed, write_labels, write_run
from tests.support.cli import run_cli


def _files(tmp_path: Path, judge: dict[str, float], human: dict[str, float]) -> tuple[str, str]:
    run = write_run(tmp_path / "run.jsonl", judge)
    lab = write_labels(tmp_path / "labels.jsonl", [{"id": c, "score": v} for c, v in human.items()])
    return str(run), str(lab)


def test_a_kept_alignment_is_written_logged_and_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run, lab = _files(tmp_path, *squashed(60, seed=3))
    log = tmp_path / "judge.md"
    log.write_text("# Judge\n", encoding="utf-8")
    code, out, err = run_cli(["align", run, lab, "--update-log", str(log), "--json-out", str(tmp_path / "a.json"),
                              "--target-width", "0.5", "--min-gain", "0", "--n-boot", "500"], capsys)
    assert code == 0, err
    assert "aligned judge written" in out and "gain over raw judge" in out
    aligned = load_aligned(tmp_path / "run.aligned.json")
    assert aligned.hash in out and aligned.hash in log.read_text()
    data = json.loads((tmp_path / "a.json").read_text())
    assert data["written"] and data["aligned_hash"] == aligned.hash
    assert all(len(line) <= 80 for line in out.splitlines() if not line.startswith("aligned judge "))


def test_noise_keeps_the_judge_exit_0_and_min_gain_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run, lab = _files(tmp_path, *noise(60, 4, binary=True))
    code, out, _ = run_cli(["align", run, lab, "--target-width", "1", "--n-boot", "500"], capsys)
    assert code == 0 and "no aligned judge written" in out and "not above 0" in out
    assert not (tmp_path / "run.aligned.json").exists()
    code, _, err = run_cli(["align", run, lab, "--target-width", "1", "--min-gain", "0", "--n-boot", "500"], capsys)
    assert code == 1 and "gate failed" in err


def test_a_wide_interval_is_exit_2_with_labels_needed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run, lab = _files(tmp_path, *squashed(20, seed=5))
    code, out, err = run_cli(["align", run, lab, "--n-boot", "500"], capsys)
    assert code == 0 and "more labels" in out  # said, not a failure, unless --target-width asks for it
    code, out, err = run_cli(["align", run, lab, "--n-boot", "500", "--target-width", "0.05"], capsys)
    assert code == 2 and "wider than --target-width" in err and "more labels" in out


def test_bad_input_is_exit_2_and_an_input_is_never_overwritten(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    judge, human = squashed(30, seed=1)
    run, lab = _files(tmp_path, judge, human)
    before = Path(lab).read_bytes()
    code, _, err = run_cli(["align", run, lab, "-o", lab], capsys)
    assert code == 2 and "destroy the input" in err and Path(lab).read_bytes() == before
    one = write_labels(tmp_path / "one.jsonl", [{"id": c, "score": 1} for c in human])
    code, _, err = run_cli(["align", run, str(one)], capsys)
    assert code == 2 and "one class only" in err
    code, out, _ = run_cli(["align", run, lab, "--dry-run"], capsys)
    assert code == 0 and "no model call" in out and "$0.00" in out


def test_an_alignment_is_recorded_in_the_run_history(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from referee.store import alignments, open_store

    judge, human = squashed(60, seed=3)
    run = write_run(tmp_path / "run.jsonl", judge)
    lab = write_labels(tmp_path / "labels.jsonl",
                       [{"id": c, "score": v, "reviewer": "ann", "comment": "ok"} for c, v in human.items()])
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    code, _, err = run_cli(["align", str(run), str(lab), "--store", url, "--target-width", "1", "--n-boot", "300"],
                           capsys)
    assert code == 0 and "recorded in the run history" in err
    with open_store(url) as st:
        got = alignments(st)
    aligned = load_aligned(tmp_path / "run.aligned.json")
    assert [a["id"] for a in got] == [aligned.hash] and got[0]["labels"] == 60
    assert got[0]["config"]["map"] == aligned.model_dump(mode="json")["map"]
    code, _, err = run_cli(["align", str(run), str(lab), "--store", url, "--no-store"], capsys)
    assert code == 2 and "contradict" in err


@pytest.mark.parametrize(("extra", "says"), [
    (["--method", "bogus"], "aligns by"),
    (["--method", "examples"], "--suite"),
    (["--method", "map,instructions", "--suite", "s.yaml"], "--optimizer"),
    (["--examples", "0"], "--examples"),
    (["--candidates", "4"], "--candidates"),
    (["--method", "instructions", "--suite", "s.yaml", "--optimizer", "standin", "--optimizer-prices", "x"],
     "optimizer-prices"),
])
def test_prompt_method_flags_are_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str],
                                         says: str) -> None:
    run, lab = _files(tmp_path, *squashed(20, seed=1))
    code, _, err = run_cli(["align", run, lab, *extra], capsys)
    assert code == 2 and says in err


def test_labels_on_cases_the_suite_does_not_hold_are_refused(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    run, lab = _files(tmp_path, *squashed(20, seed=1))
    (tmp_path / "cases.jsonl").write_text('{"id": "other", "input": "q", "output": "a", "reference": "a"}\n')
    (tmp_path / "s.yaml").write_text("name: s\ncases: cases.jsonl\njudge: {provider: standin}\nevaluators:\n"
                                     "  - id: judge\n    llm_judge: {criteria: [correctness]}\n")
    with pytest.warns(UserWarning, match="another judge"):  # the rows are another judge's: --force
        code, _, err = run_cli(["align", run, lab, "--suite", str(tmp_path / "s.yaml"), "--method", "examples",
                                "--force"], capsys)
    assert code == 2 and "not among the judge's cases" in err


def _aligned_suite(tmp_path: Path, fake_server: Any, capsys: pytest.CaptureFixture[str], *,
                   fitted_template: str | None = None) -> Path:
    """A suite whose judge entry uses an aligned judge fitted on rows by openai judge-1 with the entry's own
    template (or, given ``fitted_template``, rows that carried another template's hash)."""
    from referee.judges import LLMJudge
    from referee.suites import load_suite

    (tmp_path / "cases.jsonl").write_text('{"id": "a", "input": "q", "output": "yes", "reference": "yes"}\n')
    suite = tmp_path / "s.yaml"
    suite.write_text(f"name: s\ncases: cases.jsonl\njudge: {{provider: openai, model: judge-1, base_url: "
                     f"'{fake_server.openai_base_url}'}}\nevaluators:\n  - id: judge\n    llm_judge: "
                     "{criteria: [quality]}\n")
    entry = load_suite(suite).specs[0].evaluator
    assert isinstance(entry, LLMJudge) and entry.template_hash is not None
    template_hash = fitted_template or entry.template_hash
    judge, human = squashed(60, seed=3)
    run = write_run(tmp_path / "run.jsonl", judge, template_hash=template_hash)
    lab = write_labels(tmp_path / "labels.jsonl", [{"id": c, "score": v} for c, v in human.items()])
    code, _, err = run_cli(["align", str(run), str(lab), "-o", str(tmp_path / "j.aligned.json"), "--n-boot", "300"],
                           capsys)
    assert code == 0 and (tmp_path / "j.aligned.json").exists(), err
    suite.write_text(suite.read_text() + "    aligned: j.aligned.json\n")
    return suite


def test_an_aligned_judge_run_with_another_template_is_refused_unless_forced(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_server: Any) -> None:
    suite = _aligned_suite(tmp_path, fake_server, capsys, fitted_template="b" * 64)
    out = str(tmp_path / "r.jsonl")
    code, _, err = run_cli(["run", str(suite), "--out", out], capsys)
    assert code == 2 and "template_hash" in err and "fitted for another judge" in err
    with pytest.warns(UserWarning, match="used anyway"):
        code, _, err = run_cli(["run", str(suite), "--out", out + "2", "--force-aligned"], capsys)
    assert code == 0, err


def test_an_aligned_judge_run_with_another_model_is_refused_unless_forced(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_server: Any) -> None:
    suite = _aligned_suite(tmp_path, fake_server, capsys)
    out = str(tmp_path / "r.jsonl")
    code, _, err = run_cli(["run", str(suite), "--out", out], capsys)
    assert code == 0, err
    # The suite names judge-1, but the run's flags ask judge-2: the map was fitted for another judge.
    code, _, err = run_cli(["run", str(suite), "--out", out + "2", "--model", "judge-2"], capsys)
    assert code == 2 and "fitted for another judge" in err and "judge-2" in err
    with pytest.warns(UserWarning, match="used anyway"):
        code, _, err = run_cli(["run", str(suite), "--out", out + "3", "--model", "judge-2", "--force-aligned"],
                               capsys)
    assert code == 0, err
    suite.write_text(suite.read_text().replace("model: judge-1", "model: judge-3"))
    code, _, err = run_cli(["run", str(suite), "--out", out + "4"], capsys)
    assert code == 2 and "judge-3" in err
    with pytest.warns(UserWarning, match="used anyway"):
        code, _, err = run_cli(["run", str(suite), "--out", out + "5", "--force-aligned"], capsys)
    assert code == 0, err
