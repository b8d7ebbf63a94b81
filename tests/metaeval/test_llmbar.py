"""LLMBar: every published statistic, the README's position- and length-bias figures, from verdicts.csv."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import pytest

from referee.cli import cli
from referee.metaeval._llmbar import (
    dataset_path,
    read_lengths,
    read_published,
    read_verdicts,
    with_lengths,
)
from referee.metaeval._pairwise import bias, llmbar_statistics, pairwise_meta
from referee.stats._bootstrap import Interval


def _r(iv: Interval) -> float:
    assert iv.estimate is not None
    return round(iv.estimate, 3)


DATA = Path(__file__).resolve().parent.parent / "data"
COLUMNS = ("correct_average", "equal", "correct_False", "correct_True", "correct_both",
           "kappa_average", "kappa_agreement", "kappa_False", "kappa_True")


def _check_all(verdicts: Path, published: Path) -> int:
    groups = read_verdicts(verdicts)
    pub = read_published(published)
    cells = 0
    for key, row in pub.items():
        mine = llmbar_statistics(groups[key])
        for col in COLUMNS:
            value = mine[col]
            if isinstance(value, str):
                assert value == row[col], (key, col)  # the formatted strings, character for character
            else:
                # The CSV holds repr() of a float: compare at that full precision.
                assert repr(value) == row[col] or value == pytest.approx(float(row[col]), abs=1e-15), (key, col)
            cells += 1
    return cells


def test_every_published_cell_is_reproduced(shared_data: Path) -> None:
    root = shared_data / "llmbar"
    cells = _check_all(root / "verdicts.csv", root / "statistics_published.csv")
    assert cells == 499 * 9


def test_published_mtbench_cells_from_the_copied_figures() -> None:
    """The same check on the figures-only copy in tests/data (runs without ../shared)."""
    cells = _check_all(DATA / "llmbar_mtbench_verdicts.csv", DATA / "llmbar_mtbench_statistics_published.csv")
    assert cells == 8 * 9


def test_check_published_cli(shared_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["metaeval", "llmbar", str(shared_data / "llmbar"), "--check-published"]) == 0
    assert "4491 identical, 0 different" in capsys.readouterr().out


def test_check_published_cli_catches_a_wrong_cell(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "verdicts.csv").write_bytes((DATA / "llmbar_mtbench_verdicts.csv").read_bytes())
    with open(DATA / "llmbar_mtbench_statistics_published.csv", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    rows[1][4] = "126 / 200 = 63.0%"
    with open(tmp_path / "statistics_published.csv", "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    assert cli(["metaeval", "llmbar", str(tmp_path), "--check-published"]) == 1
    assert "1 different" in capsys.readouterr().out


# README "Derived numbers": position bias with Vanilla_NoRules.
POSITION = [
    ("Processed/MT-Bench", "GPT-4", 200, 0.870, 0.075, 0.055),
    ("Processed/MT-Bench", "ChatGPT", 200, 0.575, 0.415, 0.010),
    ("Processed/MT-Bench", "LLaMA2", 200, 0.670, 0.280, 0.050),
    ("Processed/MT-Bench", "PaLM2", 200, 0.700, 0.225, 0.035),
    ("Processed/FairEval", "ChatGPT", 66, 0.182, 0.818, 0.000),
    ("LLMBar/Natural", "GPT-4", 100, 0.970, 0.020, 0.010),
]


@pytest.mark.parametrize(("subset", "judge", "n", "consistent", "first", "second"), POSITION)
def test_position_bias_figures(shared_data: Path, subset: str, judge: str, n: int, consistent: float,
                               first: float, second: float) -> None:
    items = read_verdicts(shared_data / "llmbar" / "verdicts.csv")[(subset, judge, "Vanilla_NoRules")]
    b = bias(items, n_boot=200)
    assert b.n == n
    assert _r(b.consistent) == consistent
    assert _r(b.first) == first
    assert _r(b.second) == second
    for iv in (b.consistent, b.first, b.second):
        assert iv.lo is not None and iv.hi is not None and iv.lo <= (iv.estimate or 0) <= iv.hi


def test_position_counts_over_all_verdicts(shared_data: Path) -> None:
    groups = read_verdicts(shared_data / "llmbar" / "verdicts.csv")
    pairs = Counter((v.noswap, v.swap) for items in groups.values() for v in items)
    assert sum(pairs.values()) == 40413
    assert pairs[("1", "1")] == 12881 and pairs[("2", "2")] == 13442
    assert pairs[("1", "2")] == 10808 and pairs[("2", "1")] == 3055
    assert sum(c for k, c in pairs.items() if None in k) == 227


@pytest.mark.parametrize(("judge", "longer"), [("GPT-4", 0.713), ("ChatGPT", 0.676), ("LLaMA2", 0.713),
                                               ("PaLM2", 0.652)])
def test_length_bias_on_mtbench(shared_data: Path, judge: str, longer: float) -> None:
    root = shared_data / "llmbar"
    lengths = read_lengths(dataset_path(root, "Processed/MT-Bench"))
    items = with_lengths(read_verdicts(root / "verdicts.csv")[("Processed/MT-Bench", judge, "Vanilla_NoRules")],
                         lengths)
    b = bias(items, n_boot=200)
    assert b.length_pairs == 188
    assert b.gold_prefers_longer is not None and _r(b.gold_prefers_longer) == 0.697
    assert b.judge_prefers_longer is not None and _r(b.judge_prefers_longer) == longer


def test_pairwise_meta_accuracy_matches_published_acc_and_agr() -> None:
    groups = read_verdicts(DATA / "llmbar_mtbench_verdicts.csv")
    m = pairwise_meta(groups[("Processed/MT-Bench", "GPT-4", "Vanilla_NoRules")], n_boot=200)
    assert m.acc_noswap.estimate == pytest.approx(159 / 200)
    assert m.acc_swap.estimate == pytest.approx(165 / 200)
    assert m.acc_mean.estimate == pytest.approx(0.81)  # the paper's Acc. 81.0
    assert m.agreement.estimate == pytest.approx(0.87)  # the paper's Agr. 87.0
    assert m.correct_both.estimate == pytest.approx(149 / 200)
    assert m.kappa_mean is not None and 0 < m.kappa_mean < 1


def test_metaeval_verdicts_cli_on_a_small_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t = tmp_path / "v.csv"
    t.write_text("id,label,winner_noswap,winner_swap\n1,1,1,1\n2,2,1,2\n3,2,2,2\n4,1,,1\n", encoding="utf-8")
    js = tmp_path / "m.json"
    assert cli(["metaeval", "verdicts", str(t), "--json-out", str(js), "--n-boot", "100"]) == 0
    import json

    data = json.loads(js.read_text())["v.csv"]
    assert data["accuracy_noswap"]["estimate"] == pytest.approx(0.5)
    assert data["accuracy_swap"]["estimate"] == pytest.approx(1.0)
    assert data["bias"]["first_shown"]["estimate"] == pytest.approx(0.25)
    bad = tmp_path / "bad.csv"
    bad.write_text("id,label,winner_noswap,winner_swap\n1,1,3,1\n", encoding="utf-8")
    assert cli(["metaeval", "verdicts", str(bad)]) == 2
    assert "bad.csv:2: field 'winner_noswap'" in capsys.readouterr().err


def test_parse_cli_states_the_share(shared_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = sorted(str(p) for p in (shared_data / "llmbar" / "raw_results" / "Processed").rglob("*.jsonl"))
    assert cli(["metaeval", "parse", *files]) == 0
    out = capsys.readouterr().out
    assert "give the recorded verdict" in out and "come out unscored" in out
