"""Win rates, Bradley-Terry leaderboards, bias from results files, and ``referee rank``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from referee.cli import cli
from referee.metaeval._pairwise import PairVerdict, bias
from referee.reports._leaderboard import leaderboard_page
from referee.stats._ranking import leaderboard, win_rate


def test_win_rate_counts_ties_as_half() -> None:
    iv = win_rate([1.0, 1.0, 0.5, 0.0], n_boot=200)
    assert iv.estimate == pytest.approx(0.625)
    assert iv.lo is not None and iv.hi is not None and iv.lo <= 0.625 <= iv.hi


def _synthetic(strength: dict[str, float], n: int, seed: int = 1) -> list[tuple[str, str, float]]:
    rng = np.random.default_rng(seed)
    names = list(strength)
    comps = []
    for _ in range(n):
        a, b = rng.choice(names, size=2, replace=False)
        p = strength[a] / (strength[a] + strength[b])
        comps.append((str(a), str(b), 1.0 if rng.random() < p else 0.0))
    return comps


def test_bradley_terry_recovers_the_order_with_cis() -> None:
    comps = _synthetic({"strong": 4.0, "mid": 1.0, "weak": 0.25}, 600)
    lb = leaderboard(comps, n_boot=200)
    assert [s.system for s in lb.standings] == ["strong", "mid", "weak"]
    for s in lb.standings:
        assert s.rating.lo is not None and s.rating.hi is not None
        assert s.rating.lo <= (s.rating.estimate or 0) <= s.rating.hi
    ratings = {s.system: s.rating.estimate for s in lb.standings}
    # True gap strong-mid = 400*log10(4) = 241 Elo points; the estimate is in that region.
    assert 150 < (ratings["strong"] or 0) - (ratings["mid"] or 0) < 330
    assert len(lb.pairs) == 3


def test_two_systems_get_win_rates_but_no_bt_ratings() -> None:
    lb = leaderboard([("x", "y", 1.0), ("x", "y", 0.5), ("y", "x", 1.0)], n_boot=100)
    assert all(s.rating.estimate is None for s in lb.standings)
    assert any("3 or more" in n for n in lb.notes)
    (pair,) = lb.pairs
    assert (pair.a, pair.b, pair.wins_a, pair.wins_b, pair.ties) == ("x", "y", 1, 1, 1)
    assert pair.win_rate_a.estimate == pytest.approx(0.5)


def test_empty_leaderboard_says_so() -> None:
    lb = leaderboard([])
    assert lb.standings == [] and lb.notes


def test_bias_shares() -> None:
    items = [PairVerdict("1", "1", "1", "1"), PairVerdict("2", "1", "1", "2"), PairVerdict("3", "2", "2", "1"),
             PairVerdict("4", "2", None, None)]
    b = bias(items, n_boot=100)
    assert b.consistent.estimate == 0.25  # two unparsed verdicts are not "consistent"
    assert b.first.estimate == 0.25 and b.second.estimate == 0.25
    assert b.unparsed == 1
    assert b.judge_prefers_longer is None and b.notes


def _write(path: Path, rows: list[dict[str, object]]) -> None:
    path.write_text("".join(json.dumps({"schema_version": 1, **r}) + "\n" for r in rows), encoding="utf-8")


def _row(i: int, a: str, b: str, winner: str, bias_: bool = False) -> dict[str, object]:
    orders = [{"shown_first": "a", "status": "scored", "winner": winner if not bias_ else "a"},
              {"shown_first": "b", "status": "scored", "winner": winner if not bias_ else "b"}]
    return {"id": str(i), "evaluator": "pairwise", "winner": winner, "position_bias_detected": bias_,
            "score": {"a": 1.0, "b": 0.0, "tie": 0.5}[winner],
            "details": {"orders": orders, "system_a": a, "system_b": b, "len_a": 10 + 50 * (i % 2), "len_b": 10}}


def test_rank_cli_three_systems_json_and_escaped_html(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    evil = "<script>alert(1)</script>"
    f1, f2, f3 = tmp_path / "1.jsonl", tmp_path / "2.jsonl", tmp_path / "3.jsonl"
    _write(f1, [_row(i, "alpha", "beta", "a" if i % 4 else "b") for i in range(20)])
    _write(f2, [_row(i, "beta", evil, "a" if i % 3 else "tie", bias_=(i % 3 == 0)) for i in range(20)])
    _write(f3, [_row(i, "alpha", evil, "a") for i in range(20)]
           + [{"schema_version": 1, "id": "u", "evaluator": "pairwise", "status": "unscored"}])
    js, html = tmp_path / "lb.json", tmp_path / "lb.html"
    code = cli(["rank", str(f1), str(f2), str(f3), "--json-out", str(js), "--html", str(html), "--n-boot", "200"])
    assert code == 0
    data = json.loads(js.read_text())
    assert [s["system"] for s in data["standings"]] == ["alpha", "beta", evil]
    assert data["standings"][0]["rating"]["lo"] is not None
    assert data["bias"][str(f2)]["consistent"]["estimate"] == pytest.approx(13 / 20)
    page = html.read_text()
    assert evil not in page and "&lt;script&gt;" in page
    assert "unscored" in capsys.readouterr().err
    # The order-consistency gate.
    assert cli(["rank", str(f2), "--min-consistency", "0.9", "--n-boot", "100"]) == 1


def test_rank_rejects_files_without_pairwise_rows(tmp_path: Path) -> None:
    f = tmp_path / "judge.jsonl"
    _write(f, [{"id": "x", "score": 0.5}])
    assert cli(["rank", str(f)]) == 2


def test_leaderboard_page_is_offline() -> None:
    page = leaderboard_page(leaderboard([("a", "b", 1.0), ("b", "c", 1.0), ("a", "c", 0.5)], n_boot=100))
    assert "<script" not in page and "http://" not in page and "https://" not in page  # offline (CSP meta is http-equiv)


def test_interval_text_says_when_there_is_no_real_ci() -> None:
    from referee.stats._agreement import interval_text
    from referee.stats._bootstrap import Interval

    assert interval_text(Interval(None, None, None, 0)) == "n/a (empty sample)"
    assert interval_text(Interval(1.0, None, None, 1)) == "1.000 (n=1: no CI)"
    assert interval_text(Interval(1.0, 1.0, 1.0, 5)).endswith("(one-sided sample: zero-width CI)")
    assert interval_text(Interval(0.5, 0.2, 0.8, 5)) == "0.500 [0.200, 0.800]"
    assert "tiny" in interval_text(win_rate([1.0, 1.0]), zero_width="tiny sample")


def test_one_sided_pairs_and_undefeated_systems_are_said_so() -> None:
    comps = [("long", "mid", 1.0)] * 5 + [("mid", "short", 1.0)] * 5 + [("long", "short", 1.0)] * 5
    lb = leaderboard(comps, n_boot=100)
    for p in lb.pairs:
        assert (p.win_rate_a.lo, p.win_rate_a.hi) == (1.0, 1.0)  # the bootstrap of a one-sided sample
    assert sum("one-sided sample" in n for n in lb.notes) == 3
    one_sided = {s.system: s.one_sided for s in lb.standings}
    assert one_sided == {"long": "won all", "mid": None, "short": "lost all"}
    assert any(n.startswith("long won every one of its 10") and "prior" in n for n in lb.notes)
    assert lb.to_dict()["standings"][0]["one_sided"] == "won all"
    # A pair with a real spread gets no such note.
    mixed = leaderboard([("x", "y", 1.0), ("x", "y", 0.0), ("x", "y", 0.5)], n_boot=100)
    assert not any("one-sided" in n for n in mixed.notes)


def test_a_single_comparison_says_it_has_no_ci() -> None:
    lb = leaderboard([("x", "y", 1.0)], n_boot=100)
    assert lb.pairs[0].win_rate_a.lo is None
    assert any("single comparison" in n for n in lb.notes)


def test_pairs_keep_the_orientation_of_the_run() -> None:
    lb = leaderboard([("before", "after", 0.0), ("before", "after", 0.5)], n_boot=100)
    (p,) = lb.pairs
    assert (p.a, p.b, p.wins_a, p.wins_b, p.ties) == ("before", "after", 0, 1, 1)
    assert p.win_rate_a.estimate == pytest.approx(0.25)


def test_rank_cli_prints_one_sided_warnings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "pw.jsonl"
    _write(f, [_row(i, "before", "after", "b") for i in range(6)]
           + [{"schema_version": 1, "id": "u", "evaluator": "pairwise", "status": "unscored",
               "details": {"orders": [{"shown_first": "a", "status": "unscored"},
                                      {"shown_first": "b", "status": "scored", "winner": "b"}]}}])
    html = tmp_path / "lb.html"
    assert cli(["rank", str(f), "--n-boot", "100", "--html", str(html)]) == 0
    out = capsys.readouterr().out
    assert "before vs after: one-sided sample (6 comparisons, all won by after)" in out
    assert "zero-width CI" in out
    assert "no usable verdict" in out  # the unscored pair stays in the bias denominators, and that is said
    page = html.read_text()
    assert "zero-width: one-sided sample" in page and "one-sided sample (6 comparisons" in page


def test_bias_notes_pairs_without_a_verdict() -> None:
    b = bias([PairVerdict("1", None, "1", "1"), PairVerdict("2", None, None, "2")], n_boot=100)
    assert b.unparsed == 1
    assert any("no usable verdict" in n for n in b.notes)
    clean = bias([PairVerdict("1", None, "1", "1")], n_boot=100)
    assert not any("no usable verdict" in n for n in clean.notes)
