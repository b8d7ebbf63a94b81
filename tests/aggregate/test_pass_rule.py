"""``referee score --pass-rule threshold|evaluator``: one verdict per case in every number, gate and report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import numpy as np
import pytest

from referee.aggregate import ScoreOptions, load_table, summarize
from referee.cli import cli
from referee.suites._gating import gate_verdicts
from referee.suites._model import Gates
from tests.support.scores import score, summary, write_rows


def _gold(i: str, sc: float | None, passed: bool | None, category: str = "math", **extra: Any) -> dict[str, Any]:
    """A row as ``referee gold`` writes it: score is pct = total/max, passed is the gold rules' verdict."""
    row: dict[str, Any] = {"schema_version": 1, "id": i, "evaluator": "gold", "category": category,
                           "rationale": f"verdict for {i}", **extra}
    if sc is None:
        row["status"] = "unscored"
        row["error"] = "the judge's reply had no score"
    else:
        row["score"] = sc
    if passed is not None:
        row["passed"] = passed
    return row


# PASS at pct 0.5 (enough criteria passed), FAIL at 0.8 (a critical criterion failed), rows without a verdict,
# and an unscored row whose verdict is FAIL: it must stay unscored under either rule.
GOLD = [
    _gold("g1", 0.5, True), _gold("g2", 0.5, True), _gold("g3", 0.5, True, "code"), _gold("g4", 0.5, True, "code"),
    _gold("g5", 0.8, False), _gold("g6", 0.9, None, "code"), _gold("g7", 0.3, None), _gold("g8", None, False),
]


def _run(tmp_path: Path, capsys: pytest.CaptureFixture[str], rows: list[dict[str, Any]], *args: str,
         name: str = "r") -> tuple[int, dict[str, Any], str]:
    p = write_rows(tmp_path / f"{name}.jsonl", rows)
    js = tmp_path / f"{name}.json"
    code, _, err = score([p, "--json-out", str(js), "--n-boot", "200", *args], capsys)
    return code, summary(js), err


def test_gold_pass_at_half_counts_as_a_pass_with_the_evaluator_rule(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, thr, err = _run(tmp_path, capsys, GOLD, "--fail-under", "0.5")
    assert code == 1
    assert thr["pass_rule"] == "threshold"
    assert thr["pass_rate"] == pytest.approx(2 / 7)  # g5 (0.8) and g6 (0.9)
    code, ev, err_ev = _run(tmp_path, capsys, GOLD, "--fail-under", "0.5", "--pass-rule", "evaluator")
    assert code == 0
    assert ev["pass_rule"] == "evaluator"
    assert ev["pass_rate"] == pytest.approx(5 / 7)  # g1-g4 by their verdict, g6 by its score
    assert ev["pass_count"] == 5
    # The unscored gold row (passed=false) is neither a pass nor a fail under either rule.
    for s in (thr, ev):
        assert s["n"] == 7 and s["overall"]["unscored"] == 1
    assert ev["by_category"]["math"]["pass_rate"] == pytest.approx(2 / 4)  # g1, g2 pass; g5, g7 fail
    assert ev["by_category"]["code"]["pass_rate"] == pytest.approx(3 / 3)
    assert ev["overall"]["pass_rate_wilson"]["estimate"] == pytest.approx(5 / 7)
    gate = next(g for g in ev["gates"] if g["flag"] == "--fail-under")
    assert not gate["failed"] and "71.4%" in gate["message"]
    assert "--pass-rule" not in err_ev


def test_one_warning_line_when_passed_disagrees_with_the_threshold(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, s, err = _run(tmp_path, capsys, GOLD)
    lines = [ln for ln in err.splitlines() if "--pass-rule evaluator" in ln]
    assert len(lines) == 1
    # g1-g4 (PASS at 0.5) and g5 (FAIL at 0.8) disagree; g8 is unscored and does not count.
    assert lines[0].startswith("warning: the rows' own 'passed' disagrees with score >= 0.7 in 5 of 5 scored "
                               "rows;")
    assert sum("--pass-rule evaluator" in w for w in s["warnings"]) == 1
    # At a threshold of 0.5 only g5 disagrees.
    _, s, _ = _run(tmp_path, capsys, GOLD, "--threshold", "0.5")
    assert [w for w in s["warnings"] if "--pass-rule" in w][0].startswith(
        "the rows' own 'passed' disagrees with score >= 0.5 in 1 of 5 scored rows;")


def test_no_warning_when_verdicts_agree_and_a_note_when_there_are_none(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    agree = [_gold(f"c{i}", s, s >= 0.7) for i, s in enumerate([0.2, 0.7, 0.9, 0.69])]
    _, s, err = _run(tmp_path, capsys, agree)
    assert "--pass-rule" not in err and not any("--pass-rule" in w for w in s["warnings"])
    # Asked for the evaluator rule on rows that carry no verdict: said once, and the threshold decides.
    plain = [_gold(f"c{i}", s, None) for i, s in enumerate([0.2, 0.7, 0.9, 0.69])]
    _, s, err = _run(tmp_path, capsys, plain, "--pass-rule", "evaluator")
    assert s["pass_rate"] == pytest.approx(0.5)
    assert sum("no scored row carries its own 'passed'" in w for w in s["warnings"]) == 1


def test_the_baseline_counts_towards_the_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    agree = [_gold(f"c{i}", 0.9, True) for i in range(4)]
    base = write_rows(tmp_path / "base.jsonl", [_gold(f"c{i}", 0.5, True) for i in range(4)])
    _, s, err = _run(tmp_path, capsys, agree, "--baseline", base)
    warn = [w for w in s["warnings"] if "--pass-rule" in w]
    assert len(warn) == 1 and " in 4 of 4 scored rows of the baseline;" in warn[0]
    # Both files disagree: still one line, naming both counts.
    _, s2, err = _run(tmp_path, capsys, [_gold(f"c{i}", 0.9, i > 0) for i in range(4)], "--baseline", base)
    assert sum("--pass-rule evaluator" in ln for ln in err.splitlines()) == 1
    assert "in 1 of 4 scored rows and 4 of 4 scored rows of the baseline;" in err


def _paired(n: int, flips: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Baseline and current runs with identical scores; ``flips`` cases lose the evaluator's PASS."""
    base = [_gold(f"c{i:02d}", 0.5, True, "math" if i % 2 else "code") for i in range(n)]
    cur = [_gold(f"c{i:02d}", 0.5, i >= flips, "math" if i % 2 else "code") for i in range(n)]
    return base, cur


def test_regressions_paired_tests_and_mcnemar_follow_the_rule(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, cur = _paired(30, 12)
    b = write_rows(tmp_path / "base.jsonl", base)
    code, thr, _ = _run(tmp_path, capsys, cur, "--baseline", b, "--fail-on-regression")
    # Same scores on both sides: by the threshold nothing changed (every case fails both times).
    assert code == 0
    assert thr["pass_rate"] == 0 and thr["comparison"]["regression_count"] == 0
    assert thr["comparison"]["mcnemar_b"] == 0
    code, ev, _ = _run(tmp_path, capsys, cur, "--baseline", b, "--fail-on-regression", "--pass-rule", "evaluator",
                       "--fail-on-significant-regression")
    assert code == 1
    comp = ev["comparison"]
    assert comp["baseline_overall"]["pass_rate"]["estimate"] == 1.0
    assert ev["pass_rate"] == pytest.approx(18 / 30)
    assert comp["regression_count"] == 12 and comp["fixed"] == 0
    assert {r["id"] for r in ev["regressions"]} == {f"c{i:02d}" for i in range(12)}
    assert comp["mcnemar_b"] == 12 and comp["mcnemar_c"] == 0 and comp["mcnemar_p"] < 0.001
    overall = next(t for t in comp["tests"] if t["scope"] == "overall" and t["metric"] == "pass rate")
    assert overall["diff"] == pytest.approx(-12 / 30) and overall["significant"]
    mean_test = next(t for t in comp["tests"] if t["scope"] == "overall" and t["metric"] == "mean score")
    assert mean_test["diff"] == 0  # the scores did not move; only the verdicts did
    assert {t["scope"] for t in comp["tests"]} == {"overall", "code", "math"}
    assert comp["verdict"] == "REGRESSED"
    # The power estimate is built on the same per-case pass flags.
    assert ev["power"]["basis"].startswith("paired differences")


def test_repeats_pass_at_k_and_min_case_pass_rate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = []
    # c0: all three repeats PASS at 0.5; c1: one of three; c2: none (scores 0.9: FAIL by verdict).
    for rep, (p0, p1, p2) in enumerate([(True, True, False), (True, False, False), (True, False, False)]):
        rows += [_gold(c, sc, p, repeat=rep, rationale=f"{c} repeat {rep}")
                 for c, sc, p in (("c0", 0.5, p0), ("c1", 0.5, p1), ("c2", 0.9, p2))]
    code, thr, _ = _run(tmp_path, capsys, rows, "--min-case-pass-rate", "0.5")
    assert thr["overall"]["pass_at_k"] == pytest.approx(1 / 3)  # only c2 passes by score
    assert thr["overall"]["pass_all_k"] == pytest.approx(1 / 3)
    code, ev, _ = _run(tmp_path, capsys, rows, "--min-case-pass-rate", "0.5", "--pass-rule", "evaluator")
    o = ev["overall"]
    assert o["pass_at_k"] == pytest.approx(2 / 3)  # c0, c1
    assert o["pass_all_k"] == pytest.approx(1 / 3)  # c0
    assert ev["pass_rate"] == pytest.approx((1 + 1 / 3 + 0) / 3)
    assert code == 1
    assert ev["repeats"]["below_min_count"] == 2
    assert {c["id"] for c in ev["repeats"]["below_min_pass_rate"]} == {"c1", "c2"}
    assert [c["id"] for c in ev["repeats"]["flaky"]] == ["c1"]
    # c1's repeats all score 0.5: the rationale shown is that of its first failing repeat, not the passing one.
    c1 = next(c for c in ev["repeats"]["below_min_pass_rate"] if c["id"] == "c1")
    assert c1["verdict_source"] == "evaluator" and c1["pass_share"] == pytest.approx(1 / 3)
    assert c1["rationale"] == "c1 repeat 1"


def test_adversarial_track_uses_the_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [_gold(f"c{i}", 0.9, None, "math") for i in range(3)]
    # Red-team rows: the attack was resisted (PASS) although the score is low, and one was not.
    rows += [_gold("a1", 0.4, True, "jailbreak"), _gold("a2", 0.95, False, "jailbreak")]
    _, thr, _ = _run(tmp_path, capsys, rows, "--adversarial-categories", "jailbreak")
    _, ev, _ = _run(tmp_path, capsys, rows, "--adversarial-categories", "jailbreak", "--pass-rule", "evaluator")
    assert thr["adversarial"][0]["pass_rate"]["estimate"] == 0.5
    assert [c["id"] for c in thr["adversarial_failures"]] == ["a1"]
    assert ev["adversarial"][0]["pass_rate"]["estimate"] == 0.5
    assert [c["id"] for c in ev["adversarial_failures"]] == ["a2"]
    assert ev["pass_rate"] == 1.0  # correctness numbers unchanged


def test_junit_names_the_evaluators_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = write_rows(tmp_path / "r.jsonl", GOLD)
    xml = tmp_path / "j.xml"
    assert cli(["score", p, "--junit-xml", str(xml), "--pass-rule", "evaluator", "--n-boot", "100"]) == 0
    capsys.readouterr()
    cases = {tc.get("name"): tc for tc in ET.parse(xml).getroot().iter("testcase")}
    fails = {k: tc.find("failure") for k, tc in cases.items() if tc.find("failure") is not None}
    assert set(fails) == {"g5", "g7"}
    g5, g7 = fails["g5"], fails["g7"]
    assert g5 is not None and g7 is not None
    assert "evaluator's verdict is FAIL" in (g5.get("message") or "") and "threshold" not in (g5.get("message") or "")
    assert g5.get("type") == "evaluator_verdict" and g5.text == "verdict for g5"
    # g7 has no verdict of its own: the threshold decided, and the message says so.
    assert g7.get("message") == "score 0.300 < threshold 0.7" and g7.get("type") == "below_threshold"
    assert cases["g8"].find("skipped") is not None  # unscored gold row: skipped, never a failure
    suite = ET.parse(xml).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "2" and suite.get("skipped") == "1"
    # Without the flag the seed's rule and message are unchanged: g1-g4 fail below the threshold.
    assert cli(["score", p, "--junit-xml", str(xml), "--n-boot", "100"]) == 0
    capsys.readouterr()
    msgs = {tc.get("name"): tc.find("failure") for tc in ET.parse(xml).getroot().iter("testcase")}
    f1 = msgs["g1"]
    assert f1 is not None and f1.get("message") == "score 0.500 < threshold 0.7"
    assert msgs["g5"] is None


def test_junit_with_repeats_names_the_evaluator(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [_gold("c0", 0.9, r == 0, repeat=r) for r in range(3)]
    p = write_rows(tmp_path / "r.jsonl", rows)
    xml = tmp_path / "j.xml"
    cli(["score", p, "--junit-xml", str(xml), "--pass-rule", "evaluator", "--n-boot", "100"])
    capsys.readouterr()
    f = next(ET.parse(xml).getroot().iter("testcase")).find("failure")
    assert f is not None
    assert "passes in 33% of its repeats (under half) by the evaluator's verdict" in (f.get("message") or "")


def test_terminal_and_markdown_say_which_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = write_rows(tmp_path / "r.jsonl", GOLD)
    md = tmp_path / "s.md"
    code, out, _ = score([p, "--pass-rule", "evaluator", "--markdown", str(md), "--n-boot", "100"], capsys)
    assert code == 0
    assert "evaluator's own verdict" in " ".join(out.split())
    text = md.read_text(encoding="utf-8")
    assert "pass by the evaluator's own verdict (score ≥ 0.7 where a row has none)" in text
    assert "Pass rate **71.4%**" in text
    code, out, _ = score([p, "--markdown", str(md), "--n-boot", "100"], capsys)
    text = md.read_text(encoding="utf-8")
    assert "at threshold 0.7" in text and "Pass rate **28.6%**" in text
    assert "--pass-rule evaluator" in text  # the disagreement warning reaches the PR comment too
    # Failing cases come first in the lowest-scoring list under the evaluator rule (g7 0.3, then g5 0.8).
    code, out, _ = score([p, "--pass-rule", "evaluator", "--n-boot", "100"], capsys)
    lowest = out.split("Lowest-scoring cases")[1].split("power:")[0]
    assert lowest.index("g7") < lowest.index("g5")
    assert "g1 " not in lowest  # it passes: no failure behind the numbers


def test_bad_pass_rule_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = write_rows(tmp_path / "r.jsonl", GOLD)
    code, _, err = score([p, "--pass-rule", "judge"], capsys)
    assert code == 2 and "--pass-rule" in err


# ---- the columnar loader ----

def test_loader_reads_passed_on_the_fast_and_the_slow_path(tmp_path: Path) -> None:
    rows = [_gold(f"c{i}", 0.5, [True, False, None][i % 3]) for i in range(9)]
    fast = load_table(write_rows(tmp_path / "fast.jsonl", rows))
    slow = load_table(write_rows(tmp_path / "slow.jsonl", rows, [""]))  # a blank line forces the slow path
    expected = [1, 0, -1] * 3
    assert fast.passed.tolist() == expected and slow.passed.tolist() == expected
    assert fast.passed.dtype == np.int8 and slow.passed.dtype == np.int8
    every = np.arange(9, dtype=np.int64)
    assert fast.row_passes(every, 0.7, "evaluator").tolist() == [True, False, False] * 3
    assert fast.row_passes(every, 0.5, "evaluator").tolist() == [True, False, True] * 3
    assert fast.row_passes(every, 0.5).tolist() == [True] * 9
    assert fast.disagreements(0.7) == (3, 6)


def test_loader_ignores_a_non_boolean_passed_with_one_warning(tmp_path: Path) -> None:
    rows = [_gold("c0", 0.5, True), {**_gold("c1", 0.5, None), "passed": "yes"}, {**_gold("c2", 0.9, None),
                                                                                  "passed": 1}]
    p = write_rows(tmp_path / "r.jsonl", rows)
    t = load_table(p)
    assert len(t) == 3 and t.passed.tolist() == [1, -1, -1]
    warn = [w for w in t.warnings if "'passed'" in w]
    assert len(warn) == 1 and warn[0].startswith("2 row(s)") and f"{p}:2 passed=\"yes\"" in warn[0]


def test_duplicates_keep_the_first_rows_verdict(tmp_path: Path) -> None:
    t = load_table(write_rows(tmp_path / "r.jsonl", [_gold("c0", 0.5, True), _gold("c0", 0.5, False),
                                                     _gold("c1", 0.5, False)]))
    assert t.ids == ["c0", "c1"] and t.passed.tolist() == [1, 0]


def test_summarize_api_default_is_the_seed_rule(tmp_path: Path) -> None:
    t = load_table(write_rows(tmp_path / "r.jsonl", GOLD))
    s = summarize(t, ScoreOptions(n_boot=100))
    assert s.pass_rule == "threshold" and s.overall.pass_rate.estimate == pytest.approx(2 / 7)
    s = summarize(t, ScoreOptions(n_boot=100, pass_rule="evaluator"))
    assert s.overall.pass_rate.estimate == pytest.approx(5 / 7)


# ---- suites: referee run gates with the suite's own verdict ----

def _suite(tmp_path: Path, gates: str, threshold: float = 0.0) -> Path:
    cases = [{"id": "a1", "output": "Refunds take 5 business days."},
             {"id": "a2", "output": "Refunds take 5 business days, processed immediately!"},
             {"id": "a3", "output": "5 business days"}]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    p = tmp_path / "suite.yaml"
    # A failed critical evaluator makes the case FAIL (score 0). With scoring.threshold 0 a score of 0 would
    # still be >= the threshold: only the suite's own verdict fails a2.
    p.write_text(f"""\
name: verdicts
cases: cases.jsonl
evaluators:
  - contains: {{value: days}}
  - id: promise
    not_contains: [immediately]
    critical: true
scoring: {{threshold: {threshold}}}
gates:
{gates}
""", encoding="utf-8")
    return p


def test_referee_run_gates_by_the_suites_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = _suite(tmp_path, "  fail_under: 1.0")
    out = tmp_path / "res.jsonl"
    assert cli(["run", str(p), "--out", str(out)]) == 1
    text = " ".join(capsys.readouterr().out.split())
    assert "FAIL --fail-under: pass rate 66.7% < 100.0%" in text
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    a2 = next(r for r in rows if r["id"] == "a2")
    assert a2["score"] == 0 and a2["passed"] is False
    # referee score agrees with the run when told to use the same rule, and warns when it is not.
    js = tmp_path / "s.json"
    code, _, err = score([str(out), "--threshold", "0", "--fail-under", "1", "--pass-rule", "evaluator",
                          "--json-out", str(js)], capsys)
    assert code == 1 and summary(js)["pass_rate"] == pytest.approx(2 / 3)
    code, _, err = score([str(out), "--threshold", "0", "--fail-under", "1"], capsys)
    assert code == 0 and "disagrees with score >= 0 in 1 of 3 scored rows" in err


def test_suite_gates_threshold_override_rethresholds(tmp_path: Path) -> None:
    p = _suite(tmp_path, "  fail_under: 1.0", threshold=0.5)
    out = tmp_path / "res.jsonl"
    assert cli(["run", str(p), "--out", str(out), "--no-gates"]) == 0
    # a2 scores 0 (critical failed) and a1, a3 score 1: any threshold in (0, 1] agrees with the verdict.
    code, verdicts = gate_verdicts(out, Gates(fail_under=1.0), threshold=0.5, base_dir=tmp_path)
    assert code == 1
    # Rows written by hand: the suite's verdict decides under the suite's threshold ...
    rows = [_gold("x1", 0.9, False), _gold("x2", 0.6, True), _gold("x3", 0.2, None)]
    hand = Path(write_rows(tmp_path / "hand.jsonl", rows))
    code, verdicts = gate_verdicts(hand, Gates(fail_under=0.6), threshold=0.7, base_dir=tmp_path)
    assert code == 1 and "pass rate 33.3%" in verdicts[0].message  # x2 only
    code, verdicts = gate_verdicts(hand, Gates(fail_under=0.3, threshold=0.7), threshold=0.7, base_dir=tmp_path)
    assert "pass rate 33.3%" in verdicts[0].message  # gates.threshold equal to the suite's: still the verdict
    # ... and a different gates.threshold re-thresholds the scores (x1, x2 pass at 0.5).
    code, verdicts = gate_verdicts(hand, Gates(fail_under=0.6, threshold=0.5), threshold=0.7, base_dir=tmp_path)
    assert code == 0 and "pass rate 66.7%" in verdicts[0].message
