"""Several reviewers and the align view over real HTTP: a queue that asks k reviewers per case, the reviewers'
agreement with each other beside the judge's, and ``referee align``'s score map on the labels given so far."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest

from referee.alignment import align, read_human_labels
from referee.view import ViewOptions, ViewServer, build_app, close_app
from referee.view._review import prompt_diff
from tests.view.conftest import XSS, Data, Served, make_data
from tests.view.test_api import call, get

N_BOOT = 300
HOSTILE_REVIEWER = '<img src=x onerror="window.__xss=9">bo'


def _serve(data: Data, k: int = 1) -> Served:
    app = build_app([str(data.results)], cases=[str(data.cases)], opts=ViewOptions(n_boot=N_BOOT))
    for r in app.runs.values():
        r.index()
    app.reviewers_per_case = k
    server = ViewServer(app, "127.0.0.1", 0)
    server.start_background()
    return Served(app, server, server.url)


@pytest.fixture
def reviewed(data: Data, request: Any) -> Iterator[Served]:
    s = _serve(data, getattr(request, "param", 1))
    yield s
    s.server.shutdown()
    s.server.server_close()
    close_app(s.app)


def _bigger(tmp: Path, n: int = 24) -> Data:
    """``n`` cases with scores spread evenly over 0-1 (the shared fixture's twelve are too few to align on)."""
    d = make_data(tmp / "bigger", n=n)
    rows = [json.loads(x) for x in d.results.read_text().splitlines()]
    for r in rows:
        if r["status"] == "scored" and not r["id"].startswith("case-xss"):
            r["score"] = round((int(r["id"][-2:]) + 0.5) / n, 3)
    d.results.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return d


def _write_labels(data: Data, lines: list[dict[str, Any]]) -> Path:
    p = data.dir / "results.labels.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return p


def _scored_ids(data: Data) -> list[str]:
    return [r["id"] for r in map(json.loads, data.results.read_text().splitlines()) if r["status"] == "scored"]


def _judge_passes(data: Data) -> dict[str, float]:
    return {r["id"]: float(r["score"] >= 0.7) for r in map(json.loads, data.results.read_text().splitlines())
            if r["status"] == "scored"}


def _two_reviewers(data: Data) -> list[dict[str, Any]]:
    """ann passes cases from case-06 on, the hostile name from case-08 on: they split on case-06 and case-07."""
    lines = []
    for cid in _scored_ids(data):
        if cid.startswith("case-xss"):
            continue
        n = int(cid[-2:])
        lines.append({"id": cid, "score": float(n >= 6), "reviewer": "ann"})
        lines.append({"id": cid, "score": float(n >= 8), "reviewer": HOSTILE_REVIEWER})
    return lines


def _queue(s: Served, reviewer: str) -> list[str]:
    q = get(s, f"/api/runs/0/queue?kind=random&n=500&seed=1&reviewer={reviewer}")
    return [c["id"] for c in q["cases"]]


def _post(s: Served, cid: str, reviewer: str, passed: bool) -> None:
    status, body, _ = call(s, "POST", "/api/labels", {"run": "0", "id": cid, "passed": passed, "reviewer": reviewer})
    assert status == 201, body


@pytest.mark.parametrize("reviewed", [2], indirect=True)
def test_a_queue_asks_each_case_of_k_reviewers_and_never_twice_of_one(reviewed: Served) -> None:
    s = reviewed
    assert get(s, "/api/runs")["reviewers_per_case"] == 2
    everything = _queue(s, "ann")
    assert "case-00" in everything and "case-01" in everything
    _post(s, "case-00", "ann", True)
    _post(s, "case-01", "ann", False)
    assert "case-00" not in _queue(s, "ann") and "case-01" not in _queue(s, "ann")
    assert {"case-00", "case-01"} <= set(_queue(s, "bo"))  # one reviewer so far: bo is still asked
    _post(s, "case-00", "bo", False)
    cy = _queue(s, "cy")
    assert "case-00" not in cy and "case-01" in cy  # two reviewers have case-00: nobody else is asked
    assert len(cy) == len(everything) - 1
    q = get(s, "/api/runs/0/queue?kind=random&n=5&reviewer=cy")
    assert q["reviewer"] == "cy" and q["reviewers_per_case"] == 2


def test_one_reviewer_per_case_keeps_the_queue_as_it_was(reviewed: Served) -> None:
    s = reviewed
    _post(s, "case-02", "ann", True)
    assert "case-02" not in _queue(s, "bo")  # labelled by anyone: done


def test_a_queue_refuses_a_reviewer_name_too_long(reviewed: Served) -> None:
    status, body, _ = call(reviewed, "GET", "/api/runs/0/queue?reviewer=" + "x" * 101)
    assert status == 400 and "reviewer" in body["error"]


def test_the_reviewers_agreement_is_krippendorffs_alpha_with_the_judge_beside_it(data: Data) -> None:
    lines = _two_reviewers(data)
    ghost = {"id": "not-in-the-run" + XSS[0], "score": 1.0, "reviewer": "ann"}  # a label on an unknown id
    _write_labels(data, [*lines, ghost])
    s = _serve(data, 2)
    try:
        d = get(s, "/api/runs/0/reviewers")
    finally:
        s.server.shutdown()
        s.server.server_close()
        close_app(s.app)
    assert d["reviewers"] == sorted(["ann", HOSTILE_REVIEWER]) and d["reviewers_per_case"] == 2
    (c,) = d["criteria"]
    assert c["criterion"] == "overall" and c["level"] == "nominal" and c["cases_shared"] == 11
    assert c["cases"] == 12  # the unknown id counts as labelled; the judge's figures leave it out below
    ids = sorted({x["id"] for x in lines})
    by = {r: {x["id"]: x["score"] for x in lines if x["reviewer"] == r} for r in d["reviewers"]}
    expected = krippendorff.alpha(reliability_data=np.array([[by[r][i] for i in ids] for r in d["reviewers"]]),
                                  level_of_measurement="nominal")
    assert c["reviewers_alpha"]["estimate"] == pytest.approx(expected)
    lo, hi = c["reviewers_alpha"]["lo"], c["reviewers_alpha"]["hi"]
    assert lo is not None and hi is not None and lo <= expected <= hi
    # The judge against the reviewers' consensus (the two cases they split on have none).
    assert c["no_consensus"] == 2
    judge = _judge_passes(data)
    agreed = [i for i in ids if by["ann"][i] == by[HOSTILE_REVIEWER][i]]
    expected_judge = krippendorff.alpha(reliability_data=np.array([[judge[i] for i in agreed],
                                                                   [by["ann"][i] for i in agreed]]),
                                        level_of_measurement="nominal")
    assert c["judge_alpha"]["estimate"] == pytest.approx(expected_judge) and c["judge_alpha"]["n"] == len(agreed)
    per = {p["reviewer"]: p for p in c["judge_per_reviewer"]}
    for r in d["reviewers"]:
        want = krippendorff.alpha(reliability_data=np.array([[judge[i] for i in ids], [by[r][i] for i in ids]]),
                                  level_of_measurement="nominal")
        assert per[r]["alpha"]["estimate"] == pytest.approx(want) and per[r]["cases"] == len(ids)


def test_scores_on_a_scale_use_interval_alpha_and_other_criteria_their_own(data: Data) -> None:
    lines = [{"id": f"case-{i:02d}", "score": (i % 5) / 4, "raw_score": i % 5 + 1, "scale": "1-5",
              "reviewer": r} for i in range(10) if i != 3 for r in ("ann", "bo")]
    lines[0]["score"] = 1.0  # one disagreement
    lines += [{"id": f"case-{i:02d}", "score": float(i % 2), "criterion": "tone" + XSS[0], "reviewer": r}
              for i in range(6) for r in ("ann", "bo")]
    _write_labels(data, lines)
    s = _serve(data)
    try:
        d = get(s, "/api/runs/0/reviewers")
    finally:
        s.server.shutdown()
        s.server.server_close()
        close_app(s.app)
    crit = {c["criterion"]: c for c in d["criteria"]}
    assert list(crit) == ["overall", "tone" + XSS[0]]  # the case as a whole first; a criterion's name is data
    assert crit["overall"]["level"] == "interval" and crit["tone" + XSS[0]]["level"] == "nominal"
    assert crit["overall"]["reviewers_alpha"]["estimate"] < 1.0
    assert crit["tone" + XSS[0]]["reviewers_alpha"]["estimate"] == pytest.approx(1.0)
    # The judge scores the case as a whole; with criterion labels beside them its figure is not claimed for either.
    assert all(c["judge_alpha"] is None for c in d["criteria"])
    assert any("name a criterion" in w for w in d["warnings"])


def test_no_labels_yet_says_so(reviewed: Served) -> None:
    d = get(reviewed, "/api/runs/0/reviewers")
    assert d["criteria"] == [] and d["message"] == "no labels yet"
    status, body, _ = call(reviewed, "GET", "/api/runs/0/align")
    assert status == 400 and "no labels yet" in body["error"]


def test_the_align_view_is_referee_aligns_score_map_on_the_labels_so_far(tmp_path: Path) -> None:
    data = _bigger(tmp_path)
    labels = _write_labels(data, _two_reviewers(data) + [
        {"id": "not-in-the-run", "score": 1.0, "reviewer": "ann"},
        {"id": "also-unknown" + XSS[1], "score": 0.0, "reviewer": "ann"}])
    s = _serve(data, 2)
    try:
        d = get(s, "/api/runs/0/align")
        again = get(s, "/api/runs/0/align")
    finally:
        s.server.shutdown()
        s.server.server_close()
        close_app(s.app)
    assert again == d
    al = align(data.results, labels, threshold=0.7, n_boot=N_BOOT)
    assert d["heldout"] == json.loads(json.dumps(al.to_dict()["heldout"]))  # the same figures, not a second computation
    assert d["written"] == al.written and d["reasons"] == al.reasons and d["report"] == al.lines()
    assert set(d["heldout"]["values"]) == {"raw", "aligned", "baseline"}
    assert {"raw", "baseline"} == set(d["heldout"]["gains"])
    hl = read_human_labels(labels)
    assert d["no_consensus"] == len(hl.no_consensus) == 2 and d["reviewers"] == hl.reviewers
    assert d["n_labels"] == len([c for c in hl.values if c in _judge_passes(data)])
    assert any("2 labelled case(s) are not in the judge's run" in n for n in d["notes"])
    assert d["prompt_diff"] == ""  # the score map leaves the prompt as it is
    rows = [json.loads(x)["id"] for x in data.results.read_text().splitlines()]
    assert d["changed"] == [{**c, "row": rows.index(c["id"])} for c in al.changed]
    assert d["changed"]  # the judge passes from case-17 on, the reviewers from case-08: the map moves some
    for c in d["changed"]:
        assert c["id"] in d["split"]["heldout_ids"] and c["raw"] != c["aligned"]
    assert d["command"].startswith(f"referee align {data.results} {labels}")


def test_align_on_one_class_only_is_a_clear_400(data: Data) -> None:
    _write_labels(data, [{"id": i, "score": 1.0, "reviewer": "ann"} for i in _scored_ids(data)])
    s = _serve(data)
    try:
        status, body, _ = call(s, "GET", "/api/runs/0/align")
    finally:
        s.server.shutdown()
        s.server.server_close()
        close_app(s.app)
    assert status == 400 and "one class only" in body["error"]


def test_align_on_too_few_labels_is_a_clear_400(data: Data) -> None:
    _write_labels(data, [{"id": i, "score": float(k % 2), "reviewer": "ann"}
                         for k, i in enumerate(_scored_ids(data)[:4])])
    s = _serve(data)
    try:
        status, body, _ = call(s, "GET", "/api/runs/0/align")
    finally:
        s.server.shutdown()
        s.server.server_close()
        close_app(s.app)
    assert status == 400 and "at least 10" in body["error"]


def test_a_labels_file_whose_reviewers_all_split_has_no_consensus_to_align_on(data: Data) -> None:
    _write_labels(data, [{"id": i, "score": float(r == "ann"), "reviewer": r} for i in _scored_ids(data)
                         for r in ("ann", "bo")])
    s = _serve(data, 2)
    try:
        status, body, _ = call(s, "GET", "/api/runs/0/align")
    finally:
        s.server.shutdown()
        s.server.server_close()
        close_app(s.app)
    assert status == 400 and "consensus" in body["error"]


def test_a_new_label_refreshes_the_figures(reviewed: Served, data: Data) -> None:
    s = reviewed
    for i, cid in enumerate(_scored_ids(data)):
        _post(s, cid, "ann", i % 3 == 0)
    first = get(s, "/api/runs/0/reviewers")["criteria"][0]
    assert first["reviewers"] == ["ann"] and first["reviewers_alpha"] is None  # one reviewer: no alpha
    _post(s, "case-00", HOSTILE_REVIEWER, False)
    _post(s, "case-01", HOSTILE_REVIEWER, False)
    second = get(s, "/api/runs/0/reviewers")["criteria"][0]
    assert second["reviewers"] == sorted(["ann", HOSTILE_REVIEWER]) and second["cases_shared"] == 2


def test_every_reviewer_giving_one_label_has_no_alpha_rather_than_a_crash(data: Data) -> None:
    _write_labels(data, [{"id": f"case-{i:02d}", "score": 1.0, "reviewer": r} for i in range(6) for r in ("ann", "bo")])
    s = _serve(data, 2)
    try:
        d = get(s, "/api/runs/0/reviewers")
    finally:
        s.server.shutdown()
        s.server.server_close()
        close_app(s.app)
    (c,) = d["criteria"]
    assert c["cases_shared"] == 6 and c["reviewers_alpha"]["estimate"] is None  # one value in play: undefined
    assert c["no_consensus"] == 0 and c["judge_alpha"]["estimate"] is not None  # the judge fails some of them


def test_labels_are_read_as_alignment_reads_them_and_a_bad_one_is_left_out_with_a_warning(data: Data) -> None:
    _write_labels(data, [{"id": "case-00", "score": "pass", "reviewer": "ann"},
                         {"id": "case-01", "score": True, "reviewer": "ann"},
                         {"id": "case-02", "label": 1, "reviewer": "ann"},
                         {"id": "case-04", "score": "not a label" + XSS[0], "reviewer": "ann"},
                         {"id": "case-05", "score": 1.0, "reviewer": "ann"}])
    s = _serve(data)
    try:
        d = get(s, "/api/runs/0/reviewers")
    finally:
        s.server.shutdown()
        s.server.server_close()
        close_app(s.app)
    assert d["criteria"][0]["cases"] == 4
    assert len(d["warnings"]) == 1 and "labels.jsonl:4: field 'score'" in d["warnings"][0]


def test_the_prompt_diff_is_the_methods_own_and_empty_for_the_score_map() -> None:
    class Fit:
        diff = "--- rubric\n+++ rubric\n-old\n+new\n"

    class WithPrompt:
        prompt = Fit()

    class MapOnly:
        prompt = None

    assert prompt_diff(WithPrompt()) == Fit.diff
    assert prompt_diff(MapOnly()) == "" and prompt_diff(object()) == ""
