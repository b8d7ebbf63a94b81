"""`referee score` end to end: the seed aggregator's flags and numbers, referee's gates, verdicts and outputs."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from scipy.stats import binomtest

from referee.results import ResultRow, ResultWriter, RunManifest
from tests.support.scores import score, seed_rows, summary, write_rows

SCORES = [0.9, 0.8, 0.75, 0.7, 0.69, 0.3, 0.95, 0.1, 0.6, 1.0]


def test_seed_numbers_threshold_and_lowest_three(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = write_rows(tmp_path / "r.jsonl", seed_rows(SCORES, ["billing", "account"]))
    code, out, err = score([p, "--json-out", str(tmp_path / "s.json")], capsys)
    assert code == 0, err
    s = summary(tmp_path / "s.json")
    passed = sum(x >= 0.7 for x in SCORES)
    assert s["n"] == 10 and s["pass_rate"] == pytest.approx(passed / 10)
    assert s["mean"] == pytest.approx(sum(SCORES) / 10)
    cats = {c["name"]: c for c in s["categories"]}
    billing = SCORES[0::2]
    assert cats["billing"]["cases"] == 5
    assert cats["billing"]["mean"]["estimate"] == pytest.approx(sum(billing) / 5)
    assert cats["billing"]["pass_rate"]["estimate"] == pytest.approx(sum(x >= 0.7 for x in billing) / 5)
    assert [c["id"] for c in s["lowest"]] == ["case-007", "case-005", "case-008"]
    assert s["lowest"][0]["rationale"] == "why 7"
    assert "case-007" in out and "why 7" in out
    assert "small sample" in err
    lo, hi = s["overall"]["pass_rate"]["lo"], s["overall"]["pass_rate"]["hi"]
    assert lo < s["pass_rate"] < hi


def test_threshold_flag_changes_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = write_rows(tmp_path / "r.jsonl", seed_rows(SCORES))
    score([p, "--threshold", "0.9", "--json-out", str(tmp_path / "s.json")], capsys)
    assert summary(tmp_path / "s.json")["pass_rate"] == pytest.approx(0.3)


def test_categories_normalised_with_first_spelling_and_near_duplicates_warned(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"id": "a", "score": 0.9, "category": "Billing "}, {"id": "b", "score": 0.1, "category": "billing"},
            {"id": "c", "score": 0.8, "category": "BILLING"}, {"id": "d", "score": 0.8, "category": "biling"},
            {"id": "e", "score": 0.8, "category": "shipping"}]
    p = write_rows(tmp_path / "r.jsonl", rows)
    code, _, err = score([p, "--json-out", str(tmp_path / "s.json")], capsys)
    assert code == 0
    cats = {c["name"]: c["cases"] for c in summary(tmp_path / "s.json")["categories"]}
    assert cats == {"Billing": 3, "biling": 1, "shipping": 1}
    assert "'Billing' and 'biling' look similar" in err and "kept apart" in err
    assert "shipping' look similar" not in err


def test_fail_under(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = write_rows(tmp_path / "r.jsonl", seed_rows(SCORES))
    assert score([p, "--fail-under", "0.6"], capsys)[0] == 0
    code, out, _ = score([p, "--fail-under", "0.61"], capsys)
    assert code == 1 and "FAIL --fail-under" in out


@pytest.mark.parametrize("flag", ["--fail-on-regression", "--fail-on-cost-regression",
                                  "--fail-on-latency-regression", "--fail-on-significant-regression",
                                  "--fail-on-inconclusive", "--allow-case-set-change"])
def test_baseline_only_flags_need_a_baseline(tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str) -> None:
    p = write_rows(tmp_path / "r.jsonl", seed_rows(SCORES))
    code, _, err = score([p, flag], capsys)
    assert code == 2 and f"{flag} needs --baseline" in err


def test_tolerance_without_baseline_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = write_rows(tmp_path / "r.jsonl", seed_rows(SCORES))
    assert score([p, "--cost-regression-tolerance", "0.5"], capsys)[0] == 2


def test_regression_is_a_case_that_passed_and_fails_now(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = write_rows(tmp_path / "b.jsonl", seed_rows(SCORES))
    cur_scores = list(SCORES)
    cur_scores[0] = 0.2   # regressed
    cur_scores[5] = 0.9   # fixed
    cur = write_rows(tmp_path / "c.jsonl", seed_rows(cur_scores))
    code, out, _ = score([cur, "--baseline", base, "--fail-on-regression", "--json-out", str(tmp_path / "s.json")],
                         capsys)
    assert code == 1
    s = summary(tmp_path / "s.json")
    comp = s["comparison"]
    assert [r["id"] for r in comp["regressions"]] == ["case-000"]
    assert comp["regressions"][0]["baseline_score"] == 0.9 and comp["fixed"] == 1
    assert comp["mcnemar_p"] == pytest.approx(binomtest(1, 2, 0.5).pvalue)
    assert "case-000" in out
    unchanged = write_rows(tmp_path / "same.jsonl", seed_rows(SCORES))
    assert score([unchanged, "--baseline", base, "--fail-on-regression"], capsys)[0] == 0


def test_cost_and_latency_gates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = write_rows(tmp_path / "b.jsonl", seed_rows(SCORES, cost_usd=0.010, latency_ms=1000))
    within = write_rows(tmp_path / "w.jsonl", seed_rows(SCORES, cost_usd=0.0119, latency_ms=1190))
    above = write_rows(tmp_path / "a.jsonl", seed_rows(SCORES, cost_usd=0.0121, latency_ms=1300))
    flags = ["--fail-on-cost-regression", "--fail-on-latency-regression"]
    assert score([within, "--baseline", base, *flags], capsys)[0] == 0
    code, out, _ = score([above, "--baseline", base, *flags], capsys)
    assert code == 1 and "FAIL --fail-on-cost-regression" in out and "FAIL --fail-on-latency-regression" in out
    assert score([above, "--baseline", base, *flags, "--cost-regression-tolerance", "0.25",
                  "--latency-regression-tolerance", "0.35"], capsys)[0] == 0
    # Absolute ceilings need no baseline.
    assert score([above, "--fail-if-mean-cost-above", "0.0125"], capsys)[0] == 0
    code, out, _ = score([above, "--fail-if-mean-latency-above", "1299"], capsys)
    assert code == 1 and "FAIL --fail-if-mean-latency-above" in out


def test_cost_gate_skipped_when_baseline_has_no_cost(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = write_rows(tmp_path / "b.jsonl", seed_rows(SCORES))
    cur = write_rows(tmp_path / "c.jsonl", seed_rows(SCORES, cost_usd=5.0))
    code, out, _ = score([cur, "--baseline", base, "--fail-on-cost-regression"], capsys)
    assert code == 0 and "skipped: the baseline has no cost" in out


def test_case_set_mismatch_is_refused_unless_allowed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = write_rows(tmp_path / "b.jsonl", seed_rows(SCORES))
    rows = seed_rows(SCORES)[1:] + [{"id": "new-case", "score": 0.9}]
    cur = write_rows(tmp_path / "c.jsonl", rows)
    code, _, err = score([cur, "--baseline", base, "--fail-on-regression"], capsys)
    assert code == 2
    assert "case sets differ" in err and "case-000" in err and "new-case" in err
    code, _, _ = score([cur, "--baseline", base, "--allow-case-set-change", "--json-out",
                        str(tmp_path / "s.json")], capsys)
    comp = summary(tmp_path / "s.json")["comparison"]
    assert code == 0 and comp["missing"] == ["case-000"] and comp["added"] == ["new-case"]
    assert comp["shared"] == 9


def _binary(path: Path, passes: list[bool], cats: list[str] | None = None) -> str:
    cats = cats or ["x"]
    return write_rows(path, [{"id": f"c{i}", "score": 1.0 if p else 0.0, "category": cats[i % len(cats)]}
                             for i, p in enumerate(passes)])


def test_significant_drop_regresses_and_small_drop_is_inconclusive(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    n = 200
    base = _binary(tmp_path / "b.jsonl", [True] * n)
    big = _binary(tmp_path / "big.jsonl", [i % 4 != 0 for i in range(n)])      # 50 cases lost
    small = _binary(tmp_path / "small.jsonl", [i != 0 for i in range(n)])      # 1 case lost
    code, out, _ = score([big, "--baseline", base, "--fail-on-significant-regression"], capsys)
    assert code == 1 and "REGRESSED" in out
    code, out, _ = score([small, "--baseline", base, "--fail-on-significant-regression",
                          "--json-out", str(tmp_path / "s.json")], capsys)
    s = summary(tmp_path / "s.json")
    assert code == 0 and s["verdict"] == "INCONCLUSIVE" and "INCONCLUSIVE" in out
    assert score([small, "--baseline", base, "--fail-on-inconclusive"], capsys)[0] == 1
    # The stricter flag never passes a proven drop; an unchanged run passes it.
    assert score([big, "--baseline", base, "--fail-on-inconclusive"], capsys)[0] == 1
    assert score([base, "--baseline", base, "--fail-on-inconclusive"], capsys)[0] == 0
    assert s["power"]["min_detectable_drop"] > 0 and s["power"]["cases_needed"] > 0
    assert "detecting a 5.0% drop needs about" in out


def test_target_drop_changes_cases_needed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = write_rows(tmp_path / "r.jsonl", seed_rows(SCORES * 5))
    score([p, "--json-out", str(tmp_path / "a.json")], capsys)
    score([p, "--target-drop", "0.2", "--json-out", str(tmp_path / "b.json")], capsys)
    a = summary(tmp_path / "a.json")["power"]["cases_needed"]
    b = summary(tmp_path / "b.json")["power"]["cases_needed"]
    assert a > b > 0


def test_drops_and_improvements_are_separate_families(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    n = 120
    base = [i % 2 == 0 for i in range(n)]
    cats = ["up", "down"]
    # Category "up" (even i) passed before and fails now; "down" (odd i) failed before and passes now.
    cur = [not b for b in base]
    bp = _binary(tmp_path / "b.jsonl", base, cats)
    cp = _binary(tmp_path / "c.jsonl", cur, cats)
    score([cp, "--baseline", bp, "--json-out", str(tmp_path / "s.json")], capsys)
    tests = summary(tmp_path / "s.json")["comparison"]["tests"]
    by = {(t["scope"], t["metric"]): t for t in tests}
    assert by[("up", "pass rate")]["direction"] == "drop" and by[("up", "pass rate")]["significant"]
    assert by[("down", "pass rate")]["direction"] == "improvement" and by[("down", "pass rate")]["significant"]
    overall = by[("overall", "pass rate")]
    assert overall["diff"] == 0 and not overall["significant"]
    # As the seed: a zero difference sits in the non-drop family (its p counts towards that family's m).
    from scipy.stats import false_discovery_control

    for fam in ({"drop"}, {"improvement", "none"}):
        members = [t for t in tests if t["direction"] in fam]
        expected = false_discovery_control([t["p_value"] for t in members])
        assert [t["p_adjusted"] for t in members] == pytest.approx(list(expected))
    assert overall["p_adjusted"] == pytest.approx(1.0)


def test_paired_tests_skipped_below_three_shared_and_for_one_category(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = write_rows(tmp_path / "b.jsonl", seed_rows([0.9, 0.9]))
    cur = write_rows(tmp_path / "c.jsonl", seed_rows([0.1, 0.9]))
    score([cur, "--baseline", base, "--json-out", str(tmp_path / "s.json")], capsys)
    comp = summary(tmp_path / "s.json")["comparison"]
    assert comp["tests"] == [] and any("fewer than 3" in s for s in comp["skipped"])
    assert comp["verdict"] == "INCONCLUSIVE"
    base = write_rows(tmp_path / "b2.jsonl", seed_rows(SCORES))
    score([base, "--baseline", base, "--json-out", str(tmp_path / "s2.json")], capsys)
    comp = summary(tmp_path / "s2.json")["comparison"]
    assert {t["scope"] for t in comp["tests"]} == {"overall"}
    assert any("one category covers every case" in s for s in comp["skipped"])
    assert comp["verdict"] == "NO REGRESSION"


def test_boot_seed_and_n_boot_reproducible(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = write_rows(tmp_path / "r.jsonl", seed_rows([round(0.013 * i, 3) for i in range(70)]))
    outs = []
    for i, extra in enumerate([[], [], ["--boot-seed", "99"], ["--n-boot", "500"]]):
        score([p, "--json-out", str(tmp_path / f"{i}.json"), *extra], capsys)
        outs.append(summary(tmp_path / f"{i}.json"))
    assert outs[0]["overall"]["mean"] == outs[1]["overall"]["mean"]
    assert outs[0]["overall"]["mean"] != outs[2]["overall"]["mean"]
    assert outs[0]["n_boot"] == 2000 and outs[0]["boot_seed"] == 12345 and outs[3]["n_boot"] == 500


def test_unscored_rows_counted_per_category_and_gateable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "r.jsonl"
    with ResultWriter(p) as w:
        for i in range(8):
            w.write(ResultRow(id=f"s{i}", score=1.0 if i < 6 else 0.0, category="a"))
        w.write(ResultRow(id="u1", status="unscored", error="not JSON", category="a"))
        w.write(ResultRow(id="e1", status="error", error="HTTP 500", category="b"))
    code, out, _ = score([str(p), "--json-out", str(tmp_path / "s.json")], capsys)
    s = summary(tmp_path / "s.json")
    assert code == 0 and s["n"] == 8 and s["pass_rate"] == pytest.approx(0.75)
    cats = {c["name"]: c for c in s["categories"]}
    assert cats["a"]["unscored"] == 1 and cats["b"]["errors"] == 1 and cats["b"]["cases"] == 0
    assert "1 unscored and 1 error rows" in out
    assert score([str(p), "--fail-if-unscored-above", "0.2"], capsys)[0] == 0
    code, out, _ = score([str(p), "--fail-if-unscored-above", "0.19"], capsys)
    assert code == 1 and "2 of 10 rows" in out


def test_repeats_pass_at_k_flaky_and_min_case_pass_rate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scores = {"steady": [0.9, 0.8, 0.95], "flaky": [0.9, 0.2, 0.8], "broken": [0.1, 0.2, 0.3]}
    rows = [{"id": cid, "score": s, "repeat": r, "rationale": f"{cid} r{r}"}
            for cid, ss in scores.items() for r, s in enumerate(ss)]
    p = write_rows(tmp_path / "r.jsonl", rows)
    code, out, _ = score([p, "--json-out", str(tmp_path / "s.json")], capsys)
    s = summary(tmp_path / "s.json")
    assert code == 0 and s["n"] == 3
    assert s["mean"] == pytest.approx(sum(sum(v) / 3 for v in scores.values()) / 3)
    assert s["pass_rate"] == pytest.approx((1 + 2 / 3 + 0) / 3)
    assert s["overall"]["pass_at_k"] == pytest.approx(2 / 3) and s["overall"]["pass_all_k"] == pytest.approx(1 / 3)
    assert [c["id"] for c in s["repeats"]["flaky"]] == ["flaky"]
    assert s["lowest"][0]["id"] == "broken" and s["lowest"][0]["rationale"] == "broken r0"
    code, out, _ = score([p, "--min-case-pass-rate", "0.5"], capsys)
    assert code == 1 and "broken" in out
    code, out, _ = score([p, "--min-case-pass-rate", "0.9"], capsys)
    assert code == 1 and "2 case(s)" in out


def test_adversarial_categories_reported_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = seed_rows([0.9] * 10) + [{"id": f"pi{i}", "score": 0.0, "category": "Prompt-Injection"} for i in range(4)] \
        + [{"id": "jb0", "score": 1.0, "category": "jailbreak"}]
    p = write_rows(tmp_path / "r.jsonl", rows)
    code, out, _ = score([p, "--adversarial-categories", "prompt-injection, jailbreak",
                          "--json-out", str(tmp_path / "s.json")], capsys)
    s = summary(tmp_path / "s.json")
    assert code == 0 and s["pass_rate"] == 1.0 and s["n"] == 10
    adv = {g["name"]: g for g in s["adversarial"]}
    assert adv["Prompt-Injection"]["pass_rate"]["estimate"] == 0.0 and adv["jailbreak"]["cases"] == 1
    assert "Adversarial track" in out
    # Without the flag they blend in (what the flag prevents).
    score([p, "--json-out", str(tmp_path / "t.json")], capsys)
    assert summary(tmp_path / "t.json")["n"] == 15


def test_manifest_adversarial_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = write_rows(tmp_path / "rt.jsonl", [{"id": "a", "score": 1.0, "category": "jailbreak"},
                                           {"id": "b", "score": 0.0, "category": "over-refusal"}])
    RunManifest(kind="redteam", adversarial=True).write(p)
    code, out, _ = score([p, "--json-out", str(tmp_path / "s.json")], capsys)
    s = summary(tmp_path / "s.json")
    assert code == 0 and s["n"] == 0 and {g["name"] for g in s["adversarial"]} == {"jailbreak", "over-refusal"}


def test_junit_xml_one_testcase_per_case(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "r.jsonl"
    with ResultWriter(p) as w:
        w.write(ResultRow(id="good", score=0.9, rationale="fine"))
        w.write(ResultRow(id="bad", score=0.2, rationale="cites the <wrong> policy & more"))
        w.write(ResultRow(id="lost", status="unscored", error="reply was not JSON"))
    code, _, _ = score([str(p), "--junit-xml", str(tmp_path / "j.xml")], capsys)
    assert code == 0
    root = ET.parse(tmp_path / "j.xml").getroot()
    cases = {tc.get("name"): tc for tc in root.iter("testcase")}
    assert set(cases) == {"good", "bad", "lost"}
    fail = cases["bad"].find("failure")
    assert fail is not None and fail.text == "cites the <wrong> policy & more"
    assert cases["good"].find("failure") is None
    skipped = cases["lost"].find("skipped")
    assert skipped is not None and "reply was not JSON" in (skipped.get("message") or "")
    suite = root.find("testsuite")
    assert suite is not None and suite.get("failures") == "1" and suite.get("tests") == "3"


def test_markdown_and_github_step_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    rows = seed_rows(SCORES)
    rows[7]["rationale"] = "<script>alert(1)</script> | pipe"
    p = write_rows(tmp_path / "r.jsonl", rows)
    step = tmp_path / "step.md"
    step.write_text("earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    code, _, _ = score([p, "--markdown", str(tmp_path / "m.md"), "--fail-under", "0.9"], capsys)
    md = (tmp_path / "m.md").read_text(encoding="utf-8")
    assert code == 1 and "gate failed" in md and "--fail-under" in md
    assert "<script>" not in md and "&lt;script&gt;" in md and "\\| pipe" in md
    assert step.read_text(encoding="utf-8") == "earlier step\n" + md + "\n"
    score([p, "--no-step-summary"], capsys)
    assert step.read_text(encoding="utf-8").count("referee score") == 1


def test_strict_and_bad_input_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = write_rows(tmp_path / "r.jsonl", seed_rows(SCORES), ['{"id": "z", "score": 2}'])
    code, _, err = score([p], capsys)
    assert code == 0 and f"{p}:11" in err and "outside 0-1" in err
    code, _, err = score([p, "--strict"], capsys)
    assert code == 2 and f"{p}:11" in err
    empty = tmp_path / "e.jsonl"
    empty.write_text("")
    code, _, err = score([str(empty)], capsys)
    assert code == 2 and "no result rows" in err
    code, _, err = score([str(tmp_path / "missing.jsonl")], capsys)
    assert code == 2 and "file not found" in err
    code, _, err = score([p, "--baseline", str(empty)], capsys)
    assert code == 2 and "e.jsonl" in err


def test_json_summary_has_no_nan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "r.jsonl"
    with ResultWriter(p) as w:
        w.write(ResultRow(id="u", status="unscored"))
    code, _, err = score([str(p), "--json-out", str(tmp_path / "s.json")], capsys)
    text = (tmp_path / "s.json").read_text()
    assert code == 0 and "NaN" not in text and json.loads(text)["pass_rate"] is None
    assert "no scored cases" in err


def test_a_different_judge_prompt_is_flagged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from referee.results import JudgeConfig, TemplateInfo

    base = write_rows(tmp_path / "b.jsonl", seed_rows(SCORES))
    cur = write_rows(tmp_path / "c.jsonl", seed_rows(SCORES))
    RunManifest(template=TemplateInfo(sha256="a" * 64), judge=JudgeConfig(provider="openai", model="m1")).write(base)
    RunManifest(template=TemplateInfo(sha256="b" * 64), judge=JudgeConfig(provider="openai", model="m1")).write(cur)
    code, _, err = score([cur, "--baseline", base, "--ci"], capsys)
    assert code == 0 and "judge prompt differs" in err and "judge differs" not in err


def test_many_categories_skip_the_quadratic_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"id": f"c{i}", "score": 0.5, "category": f"cat{i}"} for i in range(450)]
    code, _, err = score([write_rows(tmp_path / "r.jsonl", rows)], capsys)
    assert code == 0 and "near-duplicate check was skipped" in err
