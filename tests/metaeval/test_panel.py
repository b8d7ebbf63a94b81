"""`referee metaeval panel`: every aggregation rule by hand, the cross-validated choice, bad input, and the
shared JudgeBench and LLMBar data."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from referee.cli import cli
from referee.errors import InputError, UserError
from referee.metaeval import judgebench_panel_data, llmbar_panel_data, panel_data, panel_meta
from referee.metaeval._judgebench import judgebench_accuracy, read_outputs
from referee.metaeval._pairwise import PairVerdict
from referee.metaeval._panel import PanelData, _verdicts, log_odds_weights


def _v(i: int, label: str, noswap: str | None, swap: str | None) -> PairVerdict:
    return PairVerdict(str(i), label, noswap, swap)


# Five pairs, label 1 everywhere. Per judge (noswap, swap):
A = [("1", "1"), ("1", "2"), ("2", "2"), ("1", "1"), (None, None)]   # votes 1, tie, 2, 1, none
B = [("1", "1"), ("2", "2"), ("2", "2"), ("2", "tie"), ("1", None)]  # votes 1, 2, 2, 2, 1
C = [("2", "2"), ("1", "1"), ("1", "tie"), ("2", "2"), (None, None)]  # votes 2, 1, 1, 2, none


def _data() -> PanelData:
    return panel_data("t", {n: [_v(i, "1", *o) for i, o in enumerate(j)] for n, j in
                            (("A", A), ("B", B), ("C", C))})


def test_each_rule_by_hand() -> None:
    d = _data()
    assert d.strength.tolist()[0][:4] == [1.0, 0.0, -1.0, 1.0]
    assert np.isnan(d.strength[0, 4])
    # majority: +1 votes minus -1 votes; 0 is a tie; no vote at all is nan.
    maj = _verdicts(d, (0, 1, 2), "majority").tolist()
    assert maj[:4] == [1.0, 0.0, -1.0, -1.0] and maj[4] == 1.0
    # mean of strengths: pair 2 = (-1 - 1 + 0.5) / 3 < 0; pair 3 = (1 - 0.5 - 1) / 3 < 0.
    assert _verdicts(d, (0, 1, 2), "mean").tolist() == [1.0, 0.0, -1.0, -1.0, 1.0]
    # median of strengths: pair 2 median(-1, -1, 0.5) = -1; pair 3 median(1, -0.5, -1) = -0.5.
    assert _verdicts(d, (0, 1, 2), "median").tolist() == [1.0, 0.0, -1.0, -1.0, 1.0]
    # unanimous: any dissent (or a tie vote) is a tie; pair 4 has a single voter, who is unanimous.
    assert _verdicts(d, (0, 1, 2), "unanimous").tolist() == [0.0, 0.0, 0.0, 0.0, 1.0]
    assert _verdicts(d, (0, 1), "unanimous").tolist()[:4] == [1.0, 0.0, -1.0, 0.0]
    # weighted: A heavy, C light: A decides where it voted; on pair 1 (A tied) B's -1 outweighs C's +0.5.
    w = np.array([3.0, 1.0, 0.5])
    assert _verdicts(d, (0, 1, 2), "weighted", w).tolist() == [1.0, -1.0, -1.0, 1.0, 1.0]
    # A pair no judge of the panel voted on has no verdict (and so is not right).
    assert np.isnan(_verdicts(d, (0, 2), "majority")[4])
    with pytest.raises(ValueError, match="weights"):
        _verdicts(d, (0, 1), "weighted")


def test_log_odds_weights() -> None:
    w = log_odds_weights(np.array([0.75, 0.5, 0.3, 1.0]))
    assert w[0] == pytest.approx(np.log(3)) and w[1] == 0.0 and w[2] == 0.0
    assert w[3] == pytest.approx(np.log(99))  # clipped: a perfect judge on training folds is not a dictator


def _sim(n: int, accs: list[float], seed: int,
         copy_of: dict[int, int] | None = None) -> dict[str, list[PairVerdict]]:
    rng = np.random.default_rng(seed)
    labels = rng.choice(["1", "2"], size=n)
    out: dict[str, list[PairVerdict]] = {}
    for j, p in enumerate(accs):
        if copy_of and j in copy_of:
            out[f"J{j}"] = [PairVerdict(v.id, v.label, v.noswap, v.swap) for v in out[f"J{copy_of[j]}"]]
            continue
        rows = []
        for i, lab in enumerate(labels):
            pick = lab if rng.random() < p else ("2" if lab == "1" else "1")
            rows.append(PairVerdict(str(i), lab, pick, pick))
        out[f"J{j}"] = rows
    return out


def test_independent_judges_panel_beats_the_best_single_judge_held_out() -> None:
    m = panel_meta(panel_data("sim", _sim(600, [0.7, 0.7, 0.7, 0.7, 0.7], 1)), n_boot=300, max_size=5)
    # Five independent 70% judges: majority ~ 84%, about five effective votes.
    five = next(p for p in m.panels if len(p.judges) == 5 and p.rule == "majority")
    assert five.accuracy.estimate is not None and five.accuracy.estimate > 0.78
    assert five.effective.estimate is not None and five.effective.estimate > 4.0
    assert m.cv.panel.estimate is not None and m.cv.single.estimate is not None
    assert m.cv.panel.estimate > m.cv.single.estimate
    assert m.cv.panel_vs_single.lo is not None and m.cv.panel_vs_single.lo > 0
    d = m.to_dict()
    assert d["in_sample_note"].startswith("ranked on the items they are scored on")
    assert len(d["cross_validated"]["choices"]) == 5


def test_a_judge_that_copies_another_adds_no_vote() -> None:
    m = panel_meta(panel_data("sim", _sim(300, [0.7, 0.65, 0.6], 2, copy_of={1: 0})), n_boot=200)
    pair = next(p for p in m.panels if p.judges == ("J0", "J1"))
    assert pair.effective.estimate == pytest.approx(1.0)
    assert pair.alpha is not None and pair.alpha.estimate == pytest.approx(1.0)
    # The copy gains nothing over the judge it copies.
    assert pair.accuracy.estimate == pytest.approx(m.judges[0].accuracy.estimate)


def test_two_identical_judges_and_a_panel_of_one_are_said_plainly() -> None:
    judges = _sim(50, [0.7], 3)
    with pytest.raises(UserError, match="at least two judges"):
        panel_data("one", judges)
    same = panel_meta(panel_data("two", {"a": judges["J0"], "b": list(judges["J0"])}), n_boot=100)
    assert same.all_judges.effective.estimate == pytest.approx(1.0)
    assert same.cv.panel_vs_single.diff == pytest.approx(0.0)


def test_bad_input_is_refused_with_the_pair_named() -> None:
    a = [_v(0, "1", "1", "1")]
    with pytest.raises(InputError, match="disagree on its label"):
        panel_data("x", {"a": a, "b": [_v(0, "2", "1", "1")]})
    with pytest.raises(InputError, match="need a winner"):
        panel_data("x", {"a": a, "b": [_v(0, "tie", "1", "1")]})
    with pytest.raises(UserError, match="folds"):
        panel_meta(panel_data("x", {"a": a, "b": a}), folds=5)


def test_a_judge_missing_some_pairs_has_no_vote_there() -> None:
    j = _sim(40, [0.8, 0.8], 4)
    j["J1"] = j["J1"][:20]
    d = panel_data("gap", j)
    assert int(np.isnan(d.strength[1]).sum()) == 20
    m = panel_meta(d, n_boot=100)
    assert m.judges[1].voted == 20
    assert m.judges[1].accuracy.n == 40  # a missing vote counts as not right, as JudgeBench counts it
    assert any("missing" in n for n in m.notes)


JB = "judgebench/outputs"


def test_judge_accuracy_is_judgebench_accuracy_on_the_shared_data(shared_data: Path) -> None:
    files = sorted((shared_data / JB).glob("gpt-4o-2024-05-13__*.jsonl"))
    assert len(files) == 6
    data = judgebench_panel_data(files)
    m = panel_meta(data, n_boot=200, top=2)
    for f, j in zip(files, m.judges, strict=True):
        assert j.accuracy.estimate == pytest.approx(judgebench_accuracy(read_outputs(f)))
    assert m.best_single == "arena_hard:o1-mini-2024-09-12"
    first = m.judges[0].accuracy.estimate
    assert first is not None and round(first * 100, 2) == 65.71
    # The five reward models are from three families: the panel warns where two share one.
    fams = {j.name: j.family for j in m.judges}
    assert fams["reward_model:internlm_internlm2-7b-reward"] == fams["reward_model:internlm_internlm2-20b-reward"]
    assert "internlm" in m.all_judges.shared_families
    # Six judges, but their errors correlate: far fewer than six votes.
    effective = m.all_judges.effective.estimate
    assert effective is not None and effective < 3.0


def test_outputs_of_different_response_models_do_not_make_a_panel(shared_data: Path) -> None:
    files = sorted((shared_data / JB).glob("*arena_hard*.jsonl"))
    with pytest.raises(UserError, match="different response models"):
        judgebench_panel_data(files)


def test_cli_on_judgebench_and_llmbar(shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "p.json"
    files = [str(p) for p in sorted((shared_data / JB).glob("gpt-4o-2024-05-13__*.jsonl"))]
    assert cli(["metaeval", "panel", *files, "--n-boot", "200", "--top", "3", "--json-out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Cross-validated (5 folds" in text and "optimistic" in text
    d = json.loads(out.read_text())
    assert d["n"] == 350 and len(d["in_sample_panels"]) == (57 - 1) * 4  # sizes 2-5 of 6 judges
    cv = d["cross_validated"]
    assert 0 <= cv["single"]["estimate"] <= 1 and 0 <= cv["panel"]["estimate"] <= 1
    assert cv["single"]["n"] == 350  # every pair is held out exactly once

    data = llmbar_panel_data(shared_data / "llmbar")
    assert data.judges == ["ChatGPT", "ChatGPT-0301", "Falcon", "GPT-4", "LLaMA2", "PaLM2"]
    assert len(data.ids) == 100 + 134 + 92 + 47 + 46
    assert cli(["metaeval", "panel", str(shared_data / "llmbar"), "--subset", "LLMBar/Natural",
                "--n-boot", "200", "--top", "2"]) == 0
    assert "100 pairs" in capsys.readouterr().out
    assert cli(["metaeval", "panel", str(shared_data / "llmbar"), "--subset", "Nope/None"]) == 2


def test_the_tables_fold_to_80_columns(shared_data: Path, capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    files = [str(p) for p in sorted((shared_data / JB).glob("gpt-4o-2024-05-13__*.jsonl"))]
    assert cli(["metaeval", "panel", *files, "--n-boot", "100", "--top", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    table = [line for line in lines if line[:1] in "┏┃┡│└"]
    assert len(table) > 20 and max(len(line) for line in table) <= 80  # prose lines are left to the terminal
    # every column is kept (the in-sample table is folded into parts that each repeat the panel)
    text = "\n".join(lines)
    for header in ("accuracy", "vs best", "alpha", "effective", "independent", "shared", "family"):
        assert header in text, header  # headers wrap on spaces when a table is folded
    assert sum(line.count("[0.") for line in lines if "0.657" in line) >= 1  # o1-mini's accuracy, whole
    # Each part of the folded in-sample table keeps the rule beside the panel: one panel under three rules is
    # three rows told apart in every part.
    parts = text.split("In-sample panels")[1].split("┏")[1:]
    assert len(parts) >= 2
    for part in parts:
        header = "\n".join(line for line in part.splitlines()[:4] if line.startswith("┃"))
        assert "rule" in header, header
        assert any(r in part for r in ("majority", "mean", "median"))


def test_llmbar_strategies_as_judges_and_unknown_names_refused(shared_data: Path) -> None:
    root = shared_data / "llmbar"
    data = llmbar_panel_data(root, subsets=["LLMBar/Natural"], evaluators=["GPT-4"],
                             strategies=["Vanilla_NoRules", "CoT", "Metrics_Reference"])
    assert data.judges == ["GPT-4/CoT", "GPT-4/Metrics_Reference", "GPT-4/Vanilla_NoRules"]
    m = panel_meta(data, n_boot=100, top=1)
    # One model under three prompts: its errors correlate, so fewer votes than judges.
    assert m.all_judges.effective.estimate is not None and m.all_judges.effective.estimate < 3
    with pytest.raises(UserError, match="no recorded verdicts for Rules"):
        llmbar_panel_data(root, strategies=["Vanilla_NoRules", "Rules"])
    # Judges recorded only on some chosen subsets are left out, and the output says so.
    mixed = llmbar_panel_data(root, subsets=["LLMBar/Natural", "Processed/MT-Bench"])
    assert "Falcon" not in mixed.judges and any("left out" in n for n in mixed.notes)
