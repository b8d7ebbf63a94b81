"""Second-pass review of `referee score`: a hand-computed seed pair, the seed's JSON keys, report injection,
and the edge cases the first pass missed."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from referee.results import JudgeConfig, ResultRow, ResultWriter, RunManifest, TemplateInfo
from tests.support.scores import score, summary, write_rows

# Seed-style rows (no schema_version): mixed category spellings, a boolean score, partial cost/latency.
CURRENT = [
    {"id": "a1", "score": 0.9, "category": "Accuracy", "rationale": "good", "cost_usd": 0.01, "latency_ms": 1000},
    {"id": "a2", "score": 0.5, "category": "accuracy ", "rationale": "meh", "cost_usd": 0.02, "latency_ms": 2000},
    {"id": "a3", "score": True, "category": "ACCURACY", "rationale": "yes", "cost_usd": 0.03, "latency_ms": 3000},
    {"id": "f1", "score": 0.2, "category": "format", "rationale": "broken format", "cost_usd": 0.01},
    {"id": "f2", "score": 0.7, "category": "format", "rationale": "edge"},
    {"id": "f3", "score": False, "category": "format", "rationale": "nope", "latency_ms": 500},
    {"id": "u1", "score": 0.1, "rationale": "no category"},
]
BASELINE = [
    {"id": "a1", "score": 0.8, "category": "accuracy", "cost_usd": 0.01, "latency_ms": 1000},
    {"id": "a2", "score": 0.75, "category": "accuracy", "cost_usd": 0.01, "latency_ms": 1000},
    {"id": "a3", "score": 1.0, "category": "accuracy", "cost_usd": 0.01, "latency_ms": 1000},
    {"id": "f1", "score": 0.9, "category": "format", "cost_usd": 0.01},
    {"id": "f2", "score": 0.6, "category": "format"},
    {"id": "f3", "score": 0.3, "category": "format", "latency_ms": 500},
    {"id": "u1", "score": 0.7},
]


def _pair(tmp_path: Path) -> tuple[str, str]:
    return write_rows(tmp_path / "cur.jsonl", CURRENT), write_rows(tmp_path / "base.jsonl", BASELINE)


def test_hand_computed_seed_pair(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cur, base = _pair(tmp_path)
    code, out, _ = score([cur, "--baseline", base, "--json-out", str(tmp_path / "s.json")], capsys)
    assert code == 0
    s = summary(tmp_path / "s.json")
    # Worked by hand: scores .9 .5 1 .2 .7 0 .1 -> 3 of 7 pass at 0.7, mean 3.4 / 7.
    assert (s["total"], s["pass_count"]) == (7, 3)
    assert s["pass_rate"] == pytest.approx(3 / 7) and s["mean_score"] == pytest.approx(3.4 / 7)
    # Cost over the 4 rows that have it (.01 .02 .03 .01), latency over 4 (1000 2000 3000 500).
    assert s["mean_cost_usd"] == pytest.approx(0.0175) and s["mean_latency_ms"] == pytest.approx(1625)
    cats = s["by_category"]
    assert set(cats) == {"Accuracy", "format", "(uncategorized)"}  # first spelling seen names the category
    assert cats["Accuracy"] == pytest.approx({"count": 3, "mean_score": 0.8, "pass_rate": 2 / 3,
                                              "mean_cost_usd": 0.02, "mean_latency_ms": 2000})
    assert cats["format"] == pytest.approx({"count": 3, "mean_score": 0.3, "pass_rate": 1 / 3,
                                            "mean_cost_usd": 0.01, "mean_latency_ms": 500})
    assert [c["id"] for c in s["lowest"]] == ["f3", "u1", "f1"]
    # Passed before (>= 0.7) and fail now: a2 .75->.5, f1 .9->.2, u1 .7->.1, in the file's order.
    kind = {"kind": "threshold_crossing"}
    assert s["regressions"] == [{"id": "a2", "baseline_score": 0.75, "current_score": 0.5, **kind},
                                {"id": "f1", "baseline_score": 0.9, "current_score": 0.2, **kind},
                                {"id": "u1", "baseline_score": 0.7, "current_score": 0.1, **kind}]
    comp = s["comparison"]
    # One fixed (f2 .6 -> .7); exact McNemar on 3 vs 1 discordant pairs: 2 * (1 + 4) / 16.
    assert comp["fixed"] == 1 and comp["mcnemar_p"] == pytest.approx(0.625)
    assert comp["baseline_overall"]["mean_cost"] == pytest.approx(0.01)
    assert comp["baseline_overall"]["mean_latency_ms"] == pytest.approx(875)
    # 0.0175 > 0.01 x 1.2 and 1625 > 875 x 1.2; the ceilings sit just above/below the means.
    for flag, expect in (("--fail-on-cost-regression", 1), ("--fail-on-latency-regression", 1)):
        assert score([cur, "--baseline", base, flag], capsys)[0] == expect
    assert score([cur, "--baseline", base, "--fail-on-latency-regression",
                  "--latency-regression-tolerance", "0.86"], capsys)[0] == 0
    assert score([cur, "--fail-if-mean-cost-above", "0.0175"], capsys)[0] == 0
    assert score([cur, "--fail-if-mean-cost-above", "0.0174"], capsys)[0] == 1
    assert score([cur, "--fail-if-mean-latency-above", "1625"], capsys)[0] == 0
    assert score([cur, "--fail-if-mean-latency-above", "1624"], capsys)[0] == 1
    assert score([cur, "--fail-under", "0.43"], capsys)[0] == 1
    assert score([cur, "--fail-under", "0.42"], capsys)[0] == 0


def test_numeric_string_scores_load_as_the_seed_reads_them(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    p = write_rows(tmp_path / "r.jsonl", [{"id": "a", "score": "0.8"}, {"id": "b", "score": "0.2"}],
                   ['{"id": "c", "score": "high"}'])
    code, _, err = score([p, "--json-out", str(tmp_path / "s.json")], capsys)
    s = summary(tmp_path / "s.json")
    assert code == 0 and s["total"] == 2 and s["mean_score"] == pytest.approx(0.5)
    assert f"{p}:3" in err and "must be a number" in err


def test_relative_cost_gate_skips_a_zero_baseline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = write_rows(tmp_path / "b.jsonl", [{"id": f"c{i}", "score": 0.9, "cost_usd": 0} for i in range(5)])
    cur = write_rows(tmp_path / "c.jsonl", [{"id": f"c{i}", "score": 0.9, "cost_usd": 0.5} for i in range(5)])
    code, out, _ = score([cur, "--baseline", base, "--fail-on-cost-regression"], capsys)
    assert code == 0 and "skip --fail-on-cost-regression" in out and "baseline mean cost is 0" in out
    # The absolute ceiling still catches it.
    assert score([cur, "--baseline", base, "--fail-if-mean-cost-above", "0.1"], capsys)[0] == 1


def test_look_alike_categories_across_the_two_runs_are_warned(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    base = write_rows(tmp_path / "b.jsonl", [{"id": f"c{i}", "score": 0.9, "category": "billing"}
                                             for i in range(4)])
    cur = write_rows(tmp_path / "c.jsonl", [{"id": f"c{i}", "score": 0.9, "category": "biling"}
                                            for i in range(4)])
    code, _, err = score([cur, "--baseline", base], capsys)
    assert code == 0 and "'biling' and 'billing' look similar" in err
    _, _, alone = score([cur], capsys)
    assert "look similar" not in alone


def test_markdown_defuses_links_images_and_mentions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"id": f"c{i}", "score": 0.1, "category": "x",
             "rationale": "see [here](https://evil.example/x) ![t](https://evil.example/p.png) @org/team **loud**"}
            for i in range(3)]
    p = write_rows(tmp_path / "r.jsonl", rows)
    score([p, "--markdown", str(tmp_path / "m.md")], capsys)
    md = (tmp_path / "m.md").read_text(encoding="utf-8")
    assert "[here](" not in md and "![t](" not in md and "https://" not in md
    assert "@org" not in md and "**loud**" not in md
    assert "\\[here\\]" in md and "\\*\\*loud\\*\\*" in md  # still readable once rendered


def test_markdown_carries_judge_differences_and_lost_scores(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    b, c = tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    with ResultWriter(b) as w:
        for i in range(5):
            w.write(ResultRow(id=f"c{i}", score=0.9))
    with ResultWriter(c) as w:
        for i in range(4):
            w.write(ResultRow(id=f"c{i}", score=0.9))
        w.write(ResultRow(id="c4", status="unscored", error="reply was not JSON"))
    RunManifest(judge=JudgeConfig(provider="openai", model="m1"), template=TemplateInfo(sha256="a" * 64)).write(b)
    RunManifest(judge=JudgeConfig(provider="openai", model="m2"), template=TemplateInfo(sha256="a" * 64)).write(c)
    code, _, _ = score([str(c), "--baseline", str(b), "--fail-on-regression", "--markdown",
                        str(tmp_path / "m.md"), "--json-out", str(tmp_path / "s.json")], capsys)
    md = (tmp_path / "m.md").read_text(encoding="utf-8")
    # The unscored case is neither a regression nor a pass: the gate passes, the summary names it.
    assert code == 0 and summary(tmp_path / "s.json")["regressions"] == []
    assert "unscored now" in md and "c4" in md
    assert "judge differs" in md and "m1" in md and "m2" in md


def test_terminal_and_warnings_strip_control_characters(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"id": "a\u001b]0;pwned\u0007", "score": 0.1, "category": "c\u001b[2J",
             "rationale": "\u001b[8mhidden\u001b[0m [bold]x[/bold]"},
            {"id": "a\u001b]0;pwned\u0007", "score": 0.2}]
    code, out, err = score([write_rows(tmp_path / "r.jsonl", rows)], capsys)
    assert code == 0
    assert "\u001b" not in out and "\u001b" not in err and "\u0007" not in out
    assert "hidden" in out and "[bold]x[/bold]" in out  # shown as text, not obeyed
    assert "duplicate row" in err


def test_junit_failure_with_repeats_names_the_pass_share(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "r.jsonl"
    with ResultWriter(p) as w:
        # Mean 0.73 is above the threshold, but only 1 of 3 repeats passes: the case fails.
        for r, s in enumerate((0.69, 0.69, 0.81)):
            w.write(ResultRow(id="wobbly", score=s, repeat=r, rationale=f"r{r}"))
    score([str(p), "--junit-xml", str(tmp_path / "j.xml")], capsys)
    tc = next(ET.parse(tmp_path / "j.xml").getroot().iter("testcase"))
    fail = tc.find("failure")
    assert fail is not None
    msg = fail.get("message") or ""
    assert "33% of its repeats" in msg and "0.730" in msg and "<" not in msg
    props = {e.get("name"): e.get("value") for e in tc.iter("property")}
    assert props["repeats"] == "3" and props["mean_score"] == "0.730" and props["min"] == "0.690"
    assert props["max"] == "0.810" and props["sd"] == f"{np.std([0.69, 0.69, 0.81]):.3f}"


def test_unwritable_step_summary_keeps_the_gate_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "no" / "such" / "dir" / "s.md"))
    p = write_rows(tmp_path / "r.jsonl", [{"id": "a", "score": 0.2}])
    code, _, err = score([p, "--fail-under", "0.5"], capsys)
    assert code == 1 and "could not append to $GITHUB_STEP_SUMMARY" in err


def test_markdown_goes_into_a_new_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # One write_markdown for `score` and `run`: both create the parent folder of --markdown.
    p = write_rows(tmp_path / "r.jsonl", [{"id": "a", "score": 0.2}])
    md = tmp_path / "new" / "dir" / "m.md"
    code, _, _ = score([p, "--fail-under", "0.5", "--markdown", str(md)], capsys)
    assert code == 1 and "gate failed" in md.read_text(encoding="utf-8")


def test_adversarial_only_file_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = write_rows(tmp_path / "r.jsonl", [{"id": f"r{i}", "score": 1.0, "category": "jailbreak"} for i in range(3)])
    RunManifest(adversarial=True).write(p)
    code, out, err = score([p], capsys)
    assert code == 0 and "every row is in the adversarial track" in err and "jailbreak" in out
    assert "(+ 3 adversarial rows, reported apart)" in " ".join(out.split())  # rich wraps long lines
    assert "no scored cases" not in err


def test_json_seed_keys_stay_consistent_with_referee_keys(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "r.jsonl"
    with ResultWriter(p) as w:
        w.write(ResultRow(id="a", score=0.9, category="x"))
        w.write(ResultRow(id="b", score=0.1, category="x"))
        w.write(ResultRow(id="c", status="error", error="HTTP 500", category="x"))
    score([str(p), "--json-out", str(tmp_path / "s.json")], capsys)
    s = json.loads((tmp_path / "s.json").read_text())
    # The error row is in no count: 2 scored cases, 1 pass.
    assert (s["total"], s["pass_count"], s["n"]) == (2, 1, 2)
    assert s["by_category"]["x"]["count"] == 2 and s["categories"][0]["errors"] == 1
    assert "mean_cost_usd" not in s  # as the seed: absent when no row has a cost


def test_the_expansion_is_named_in_the_output(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import referee.stats._counts as counts

    # A tiny resampling budget: 5000 all-distinct scores, too costly to resample, take the expansion.
    monkeypatch.setattr(counts, "BUDGET_S", 1e-6)
    rng = np.random.default_rng(3)
    rows: list[dict[str, Any]] = [{"id": f"c{i}", "score": float(s)} for i, s in enumerate(rng.random(5000))]
    base = write_rows(tmp_path / "b.jsonl", rows)
    cur = write_rows(tmp_path / "c.jsonl", [{**r, "score": r["score"] * 0.999} for r in rows])
    code, out, _ = score([cur, "--baseline", base, "--json-out", str(tmp_path / "s.json")], capsys)
    s = summary(tmp_path / "s.json")
    assert code == 0 and "Cornish-Fisher expansion" in s["overall"]["mean"]["method"]
    assert "Cornish-Fisher expansion, n large" in out
    mean_test = next(t for t in s["comparison"]["tests"] if t["metric"] == "mean score")
    assert "Cornish-Fisher" in mean_test["method"]
    assert "from the Cornish-Fisher expansion" in out and "overall mean score" in out
    # Pass flags have two distinct values: still the exact count bootstrap, cheap at any n.
    assert s["overall"]["pass_rate"]["method"] == "percentile bootstrap"


def test_markdown_lists_adversarial_regressions_the_gate_counts(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    base = [{"id": f"c{i}", "score": 0.9, "category": "billing"} for i in range(4)]
    base += [{"id": f"pi{i}", "score": 1.0, "category": "prompt-injection"} for i in range(3)]
    cur = [dict(r) for r in base]
    cur[4]["score"] = 0.0  # one attack now succeeds
    b, c = write_rows(tmp_path / "b.jsonl", base), write_rows(tmp_path / "c.jsonl", cur)
    code, _, _ = score([c, "--baseline", b, "--adversarial-categories", "prompt-injection", "--fail-on-regression",
                        "--markdown", str(tmp_path / "m.md")], capsys)
    md = (tmp_path / "m.md").read_text(encoding="utf-8")
    assert code == 1 and "Adversarial regressions (1)" in md and "| pi0 |" in md
    assert "Regressions (0)" not in md  # the correctness list is empty, so it is not shown
