"""Every terminal table at 80 columns: no column dropped, no name or number cut (folded and wrapped instead);
the default score report is short, ``-v`` has the details."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from referee.results import CriterionScore, ResultRow
from referee.stats._bootstrap import Interval
from tests.support.scores import score, write_rows

LONG = ["geography and world capitals of the americas", "science_and_engineering_questions_long_name",
        "history"]
ATTACK = "prompt-injection-through-retrieved-documents"


def _rows(shift: float, cats: list[str] = LONG) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for i in range(12):
        s = round(min(1.0, max(0.0, 0.35 + 0.05 * i + shift)), 3)
        rows.append({"id": f"case-{i:03d}-with-a-fairly-long-identifier", "score": s, "category": cats[i % 3],
                     "rationale": f"reason {i}", "cost_usd": 0.000123, "latency_ms": 1234.0})
    rows.append({"id": "attack-1", "score": 0.2, "category": ATTACK, "rationale": "leaked"})
    return rows


def _score_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, list[str], list[str]]:
    cand = write_rows(tmp_path / "cand.jsonl", _rows(-0.1))
    base = write_rows(tmp_path / "base.jsonl", _rows(0.1))
    code, out, _ = score([cand, "-b", base, "-v", "--n-boot", "200", "--adversarial-categories", ATTACK,
                          "--fail-on-regression"], capsys)
    assert code == 1
    heads = ["category", "cases", "mean", "pass rate", "95% CI", "Wilson 95%", "unscored", "cost $/row",
             "latency ms", "attack type", "scope", "metric", "diff", "adj. p", "significant"]
    return out, heads, [*LONG, ATTACK, "0.00012", "1234", "overall"]


def _targets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, list[str], list[str]]:
    from referee.targets import render_comparison
    from referee.targets._compare import TargetComparison, TargetLine

    evs = [f"evaluator_with_a_long_name_{i}" for i in range(6)]
    iv = Interval(0.5, 0.25, 0.75, 12, "wilson")
    lines = [TargetLine(id=tid, path=tmp_path / f"{tid}.jsonl", pass_rate=iv, mean=Interval(0.612, 0.5, 0.7, 12, "b"),
                        cases=12, unscored=1, errors=2, mean_cost=0.00042, mean_latency_ms=812.0,
                        evaluators={e: Interval(0.9 - 0.1 * k, 0.6, 0.97, 12, "wilson") for k, e in enumerate(evs)})
             for tid in ("prompt-v1-the-original-system-prompt", "v2")]
    out = render_comparison(TargetComparison(lines=lines, evaluators=evs, best=None, lead=None), width=80)
    heads = ["target", "pass rate [95% CI]", "mean score", "cases", "unscored", "error", "cost/case", "latency",
             *evs]
    return out.rsplit("\n", 2)[0], heads, ["prompt-v1-the-original-system-prompt", "$0.00042", "812 ms",
                                           "90% [60%, 97%]", "40% [60%, 97%]"]


def _evaluators(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, list[str], list[str]]:
    from referee.suites._gating import evaluator_table

    names = ["a_check_whose_name_is_much_longer_than_eighty_characters_to_see_it_wrap_not_cut_at_all", "regex"]
    rows = [ResultRow(id=f"c{i}", score=0.5, evaluator="suite", criteria=[
        CriterionScore(id=names[0], score=1.0, passed=True), CriterionScore(id=names[1], score=0.0, passed=False)])
        for i in range(3)]
    return evaluator_table(rows, width=80), ["evaluator", "pass rate", "mean", "n", "unscored/error"], [
        *names, "100.0%", "0.0%", "1.000", "0.000"]


def _notebook_rich(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, list[str], list[str]]:
    """The terminal displays (``__rich__``) of a result and its summary, in an 80-column console."""
    import io

    from rich.console import Console

    import referee

    cat = "a very long category name that has to wrap somewhere"
    r = referee.evaluate([{"id": f"case-number-{i}", "output": "4", "reference": "4", "category": cat}
                          for i in range(3)], [lambda output: output == "4"])
    f = io.StringIO()
    con = Console(file=f, width=80)
    con.print(r)
    con.print(r.summary)
    return f.getvalue(), ["group", "cases", "pass rate [95% CI]", "mean [95% CI]", "unscored", "errors"], [
        cat, "case-number-2", "100.0% [100.0%, 100.0%]", "1.000 [1.000, 1.000]"]


@pytest.mark.parametrize("render", [_score_report, _targets, _evaluators, _notebook_rich],
                         ids=["score", "targets", "evaluators", "notebook-rich"])
def test_every_table_fits_80_columns_with_every_column_and_whole_names(
        render: Callable[..., tuple[str, list[str], list[str]]], tmp_path: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    out, heads, cells = render(tmp_path, capsys)
    lines = out.splitlines()
    assert lines and max(len(x) for x in lines) <= 80, max(lines, key=len)
    assert "…" not in out
    words = set(re.findall(r"\S+", out))
    for h in heads:  # a header may wrap onto two lines: each of its words is there
        assert all(w in words for w in h.split()), h
    flat = re.sub(r"\s+", "", out)
    for c in cells:
        if re.fullmatch(r"[\d.$%\[\], ms]+", c):
            assert c in out, c  # numbers whole, on one line
        else:
            # a name wraps at spaces or after _ - / . inside its column: its pieces come in order
            pieces = [p for p in re.split(r"(?<=[_/.-])|\s+", c) if p]
            assert all(p in out for p in pieces), c
            assert c.replace(" ", "") in flat or len(pieces) > 1, c


def test_short_default_report_and_details_behind_v(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    cats = ["geography", "science", "history"]
    cand = write_rows(tmp_path / "cand.jsonl", _rows(-0.1, cats)[:12])
    base = write_rows(tmp_path / "base.jsonl", _rows(0.1, cats)[:12])
    _, short, _ = score([cand, "-b", base, "--n-boot", "200"], capsys)
    _, full, _ = score([cand, "-b", base, "--n-boot", "200", "-v"], capsys)
    assert len(short.splitlines()) <= 48 < len(full.splitlines())  # it was 64 lines
    assert "Paired bootstrap on shared cases" in full and "Paired bootstrap on shared cases" not in short
    assert "power:" in full and "power:" in short
    assert "-v for the details: " in short and "-v for the details" not in full
    assert "paired bootstrap: 8 tests" in short  # the tests' outcome is still said in one line
    for text in (short, full):
        assert "verdict:" in text and "Per category" in text


def test_hostile_names_in_folded_tables_stay_text(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    evil = "[bold red]boom[/bold red]\x1b[31mred\u202etxt" + "-x" * 30
    rows = [{"id": f"c{i}", "score": 0.5 + 0.04 * i, "category": evil if i % 2 else "plain"} for i in range(8)]
    code, out, _ = score([write_rows(tmp_path / "r.jsonl", rows)], capsys)
    assert code == 0
    assert "\x1b" not in out and "\u202e" not in out and "<U+202E>" in out  # no escape, bidi made visible
    assert "[bold" in out and "red]boom" in out.replace("\n", "")  # markup printed as text, not applied
    assert max(len(x) for x in out.splitlines()) <= 80
