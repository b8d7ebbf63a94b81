"""The grid (cases x runs, each run's own output) and the charts, through the viewer's API; run folders,
cases bound to their run, and the warning when shared cases files collide."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from referee.errors import InputError, UserError
from referee.view import build_app, close_app

XSS = '<script>window.__xss=1</script>"><svg onload=alert(1)>'


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def two_runs(tmp: Path) -> tuple[Path, Path, Path, Path]:
    """Runs a and b over the same ids, each judged on its own cases file (b's outputs differ)."""
    ids = [f"q{i}" for i in range(6)]
    ca = write_jsonl(tmp / "a_cases.jsonl", [{"id": i, "input": f"question {i}", "output": f"A says {i}"} for i in ids])
    cb = write_jsonl(tmp / "b_cases.jsonl", [{"id": i, "input": f"question {i}",
                                              "output": f"B says {i}" + (" " + XSS if i == "q5" else "")} for i in ids])
    ra = write_jsonl(tmp / "a.jsonl", [{"id": i, "score": 0.9, "category": "math"} for i in ids])
    judge = {"criteria": [{"id": "judge", "name": "llm_judge", "score": 0.2}],
             "details": {"checks": {"judge": {"criteria": [{"id": "correctness", "score": 0.2, "rationale": "off"}]}}}}
    rb = write_jsonl(tmp / "b.jsonl", [{"id": i, "score": 0.9 if n % 2 else 0.2, "category": XSS if n < 2 else "math",
                                        **judge} for n, i in enumerate(ids)])
    return ra, rb, ca, cb


def test_each_run_shows_its_own_output_when_bound_and_a_collision_is_warned(tmp_path: Path) -> None:
    ra, rb, ca, cb = two_runs(tmp_path)
    app = build_app([str(ra), str(rb)], cases=[str(ca), str(cb)], lock=False, index_now=False)
    try:  # unbound: the first file wins for both runs, and the viewer says so
        assert len(app.warnings) == 1 and "6 case id(s) are in both" in app.warnings[0]
        assert "--cases RUN=" in app.warnings[0]
        assert app.api_index()["warnings"] == app.warnings
    finally:
        close_app(app)
    app = build_app([str(ra), str(rb)], cases=[f"a={ca}", f"2={cb}"], lock=False, index_now=False)
    try:
        assert app.warnings == []
        g = app.api_grid({})
        assert g["names"] == ["a.jsonl", "b.jsonl"] and g["total"] == 6
        row = g["rows"][0]
        assert row["id"] == "q0" and row["input"] == "question q0"
        assert [c["output"] for c in row["cells"]] == ["A says q0", "B says q0"]
        assert [c["passed"] for c in row["cells"]] == [True, False]
        # filters: where the runs differ, failing in any run, words in an output
        assert [r["id"] for r in app.api_grid({"show": "differ"})["rows"]] == ["q0", "q2", "q4"]
        assert app.api_grid({"show": "failing"})["total"] == 3
        assert [r["id"] for r in app.api_grid({"q": "b says q5"})["rows"]] == ["q5"]
        assert app.api_grid({"limit": "2", "offset": "4"})["rows"][0]["id"] == "q4"
        assert app.api_grid({"runs": "1"})["names"] == ["b.jsonl"]
    finally:
        close_app(app)


def test_bad_bindings_are_usage_errors(tmp_path: Path) -> None:
    ra, rb, ca, _ = two_runs(tmp_path)
    with pytest.raises(UserError, match="no run 'zzz'"):
        build_app([str(ra), str(rb)], cases=[f"zzz={ca}"], lock=False)
    with pytest.raises(UserError, match="position 1-2"):
        build_app([str(ra), str(rb)], cases=[f"3={ca}"], lock=False)
    with pytest.raises(InputError, match="file not found"):
        build_app([str(ra)], cases=[f"a={tmp_path / 'nope.jsonl'}"], lock=False)


def test_a_run_folder_opens_every_target(tmp_path: Path) -> None:
    d = tmp_path / "results"
    for t in ("v1", "v2"):
        write_jsonl(d / f"{t}.jsonl", [{"id": "c1", "score": 0.8 if t == "v1" else 0.3}])
        write_jsonl(d / f"{t}.outputs.jsonl", [{"id": "c1", "output": f"{t} answer"}])
        (d / f"{t}.manifest.json").write_text("{}", encoding="utf-8")
    write_jsonl(d / "v1.labels.jsonl", [{"id": "c1", "passed": True}])
    write_jsonl(d / "v1.prev.jsonl", [{"id": "c1", "score": 0.1}])
    app = build_app([str(d)], lock=False, index_now=False)
    try:
        assert [r.path.name for r in app.runs.values()] == ["v1.jsonl", "v2.jsonl"]
        cells = app.api_grid({})["rows"][0]["cells"]
        assert [c["output"] for c in cells] == ["v1 answer", "v2 answer"]
    finally:
        close_app(app)
    # results/*.jsonl names the outputs files too: they are left out with a note, not refused
    app = build_app([str(p) for p in sorted(d.glob("*.jsonl")) if ".prev" not in p.name and "labels" not in p.name],
                    lock=False, index_now=False)
    try:
        assert len(app.runs) == 2 and any("not a results file" in w for w in app.warnings)
    finally:
        close_app(app)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match="no results file"):
        build_app([str(empty)], lock=False)


def test_results_written_from_python_carry_their_inputs_and_outputs(tmp_path: Path) -> None:
    import referee

    out = tmp_path / "py" / "res.jsonl"
    referee.evaluate([{"id": "a", "input": "2+2?", "output": "4"}, {"id": "b", "input": "3+3?", "output": ""}],
                     [lambda output: output == "4"], out=out)
    assert (tmp_path / "py" / "res.cases.jsonl").is_file()
    app = build_app([str(tmp_path / "py")], lock=False, index_now=False)
    try:
        rows = app.api_grid({})["rows"]
        assert [(r["input"], r["cells"][0]["output"]) for r in rows] == [("2+2?", "4"), ("3+3?", "")]
        assert app.api_case("0", 0, {})["case"]["input"] == "2+2?"
    finally:
        close_app(app)


def test_charts_draw_the_run_and_escape_its_names(tmp_path: Path) -> None:
    ra, rb, ca, cb = two_runs(tmp_path)
    write_jsonl(tmp_path / "b.jsonl.labels.jsonl", [])
    app = build_app([str(ra), str(rb)], cases=[f"a={ca}", f"b={cb}"], lock=False, index_now=False)
    try:
        charts = {c["id"]: c for c in app.api_charts("1", {})["charts"]}
        assert set(charts) == {"scores", "categories", "cost", "latency", "agreement"}
        counts = [int(x) for x in re.findall(r'data-count="(\d+)"', charts["scores"]["svg"])]
        assert sum(counts) == 6 and counts[2] == 3 and counts[9] == 3  # three at 0.2, three at 0.9
        cat = charts["categories"]["svg"]
        assert "<script>" not in cat and "&lt;script&gt;" in cat and cat.count('class="bar"') == 2
        assert cat.count('class="interval"') == 2  # each rate with its interval
        assert "no values" in charts["cost"]["svg"]  # nothing to draw is said, not drawn as zeros
        assert "no pass/fail labels yet" in charts["agreement"]["svg"]
        # pass/fail labels are compared with the judge's pass/fail (its score under the threshold)
        for cid, ok in (("q0", False), ("q1", True), ("q2", True)):
            code, _ = app.api_post_label({"run": "1", "id": cid, "passed": ok, "reviewer": "ann"})
            assert code in (200, 201)
        agree = app.api_charts("1", {})["charts"][-1]["svg"]
        assert "agree on 2 of 3" in agree
        chart = app.api_compare("0", "1", {})["chart"]["svg"]
        dots = re.findall(r'class="dot regression"[^>]*data-n="(\d+)"', chart)  # same scores: merged dots
        assert sum(map(int, dots)) == 3 and "3 regressed" in chart
    finally:
        close_app(app)


def test_pass_fail_labels_agree_with_the_judges_pass_fail(tmp_path: Path) -> None:
    """Continuous judge scores and pass/fail labels: agreement and kappa are computed on pass/fail."""
    ra, rb, ca, cb = two_runs(tmp_path)
    app = build_app([str(rb)], cases=[str(cb)], lock=False, index_now=False)
    try:
        for cid, ok in (("q0", False), ("q1", True), ("q2", False), ("q3", True), ("q4", True)):
            app.api_post_label({"run": "0", "id": cid, "passed": ok, "reviewer": "ann"})
        a = app.api_agreement("0")
        assert a["n"] == 5 and "pass/fail verdicts" in " ".join(a["notes"])
        st = a["agreement"]
        assert st["exact_agreement"]["estimate"] == pytest.approx(0.8)  # q4 scored 0.2 (fail) but labelled pass
        assert st["kappa"]["estimate"] is not None and st["kappa"]["estimate"] > 0
    finally:
        close_app(app)


def test_the_case_page_has_the_judges_own_criteria_under_the_suites_ids(tmp_path: Path) -> None:
    row = {"schema_version": 1, "id": "c1", "score": 0.5, "evaluator": "suite", "raw_reply": '{"score": 0.5}',
           "criteria": [{"id": "overlap", "name": "token_f1", "score": 1.0, "passed": True},
                        {"id": "judge", "name": "llm_judge", "score": 0.0, "passed": False}],
           "details": {"checks": {"judge": {"criteria": [
               {"id": "correctness", "score": 0.0, "raw_score": 1, "scale": "1-5", "rationale": "wrong year"},
               {"id": "completeness", "score": 1.0, "raw_score": 5, "scale": "1-5"}]}}}}
    res = write_jsonl(tmp_path / "r.jsonl", [row])
    app = build_app([str(res)], lock=False, index_now=False)
    try:
        c = app.api_case("0", 0, {})
        assert [k["id"] for k in c["criteria"]] == ["overlap", "judge"]  # the suite's ids
        assert c["check_criteria"] == [{"check": "judge", "criteria": [
            {"id": "correctness", "name": None, "status": None, "score": 0.0, "raw_score": 1, "scale": "1-5",
             "passed": None, "rationale": "wrong year", "error": None},
            {"id": "completeness", "name": None, "status": None, "score": 1.0, "raw_score": 5, "scale": "1-5",
             "passed": None, "rationale": None, "error": None}]}]
        assert c["raw_reply"] == '{"score": 0.5}'
    finally:
        close_app(app)


def test_the_first_grid_page_does_not_wait_for_a_cases_file_being_read(tmp_path: Path) -> None:
    ra, rb, ca, cb = two_runs(tmp_path)
    app = build_app([str(ra)], cases=[str(ca)], lock=False, index_now=False)
    try:
        run = app.runs["0"]
        with run._cases_lock:  # the background thread is reading the cases
            g = app.api_grid({})
        assert g["outputs_pending"] is True and g["total"] == 6
        assert g["rows"][0]["cells"][0]["loading"] is True and g["rows"][0]["cells"][0]["passed"] is True
        g = app.api_grid({})
        assert g["outputs_pending"] is False and g["rows"][0]["cells"][0]["output"] == "A says q0"
    finally:
        close_app(app)


def test_the_grid_heads_each_column_with_its_target_and_model(tmp_path: Path) -> None:
    """A targets folder's files are named after the targets' ids, sanitised; the header says the target and the
    model behind it (the file name stays in the title), and a run without a target keeps its file name."""
    def run(name: str, target: dict[str, Any] | None) -> Path:
        return write_jsonl(tmp_path / name, [{"id": f"q{i}", "score": 0.9, **({"target": target} if target else {})}
                                             for i in range(3)])
    a = run("v1_gpt-4o-mini.jsonl", {"id": "v1@gpt-4o-mini", "kind": "model", "provider": "openai",
                                     "model": "gpt-4o-mini"})
    b = run("t2.jsonl", {"id": "support-bot", "kind": "http"})
    c = run("plain.jsonl", None)
    app = build_app([str(a), str(b), str(c)], lock=False, index_now=False)
    try:
        g = app.api_grid({})
        assert g["names"] == ["v1@gpt-4o-mini", "support-bot", "plain.jsonl"]
        assert g["files"] == ["v1_gpt-4o-mini.jsonl", "t2.jsonl", "plain.jsonl"]
    finally:
        close_app(app)
    d = run("d.jsonl", {"id": "fast", "kind": "model", "provider": "anthropic", "model": "claude-3-5-haiku-latest"})
    app = build_app([str(d)], lock=False, index_now=False)
    try:
        assert app.api_grid({})["names"] == ["fast (anthropic:claude-3-5-haiku-latest)"]
    finally:
        close_app(app)


def test_the_first_two_runs_comparison_is_warmed_in_the_background(tmp_path: Path) -> None:
    ra, rb, ca, cb = two_runs(tmp_path)
    app = build_app([str(ra), str(rb)], lock=False, index_now=False)
    try:
        t = app.warm_compare()
        assert t is not None
        t.join(timeout=120)
        assert not t.is_alive()
        cached = [k for k in app.runs["1"]._summaries if k and k[0] == "compare"]  # noqa: SLF001
        assert cached, "the comparison was computed by the warm-up"
        d = app.api_compare("0", "1", {"filter": "all"})  # the request is served from it: the same figures
        assert d["total"] == 6 and d["chart"]["svg"].count("<circle") >= 1
    finally:
        close_app(app)
    single = build_app([str(ra)], lock=False, index_now=False)
    try:
        assert single.warm_compare() is None  # one run: nothing to compare
    finally:
        close_app(single)
