"""The viewer's JSON API over real HTTP: paging, filters, one case, labels (and their checks), compare, safety."""

from __future__ import annotations

import http.client
import json
import os
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from referee.aggregate import ScoreOptions, load_table, summarize
from referee.calibrate._calibrate import read_labels
from referee.cli import cli
from referee.errors import InputError, UserError
from referee.view import build_app, close_app
from referee.view._server import CSP
from tests.view.conftest import PAYLOAD, XSS, Data, Served, serve


def call(s: Served, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None,
         raw: bytes | None = None) -> tuple[int, Any, http.client.HTTPResponse]:
    u = urlsplit(s.url)
    conn = http.client.HTTPConnection(u.hostname or "127.0.0.1", u.port, timeout=30)
    hdrs = {"Content-Type": "application/json"} if body is not None or raw is not None else {}
    hdrs.update(headers or {})
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    conn.request(method, path, body=data, headers=hdrs)
    resp = conn.getresponse()
    text = resp.read()
    conn.close()
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = text
    return resp.status, parsed, resp


def get(s: Served, path: str) -> Any:
    status, data, _ = call(s, "GET", path)
    assert status == 200, data
    return data


def test_index_lists_runs_and_every_response_has_the_csp(served: Served) -> None:
    status, data, resp = call(served, "GET", "/api/runs")
    assert status == 200
    assert [r["name"] for r in data["runs"]] == ["baseline.jsonl", "results.jsonl", "pairwise.jsonl"]
    assert data["runs"][1]["rows"] == 13 and data["runs"][1]["unscored"] == 1
    assert resp.getheader("Content-Security-Policy") == CSP
    assert "'unsafe-inline'" not in CSP and "script-src 'self'" in CSP
    _, page, resp = call(served, "GET", "/")
    assert resp.getheader("Content-Security-Policy") == CSP
    assert b"<script src=\"/static/app.js\"" in page and b"<script>" not in page
    assert call(served, "GET", "/static/../labels.py")[0] == 404
    assert call(served, "GET", "/api/nothing")[0] == 404


def test_paging_sorting_and_filters_happen_on_the_server(served: Served) -> None:
    page = get(served, "/api/runs/1/cases?limit=5&offset=0")
    assert page["total"] == 13 and len(page["rows"]) == 5
    assert [r["row"] for r in page["rows"]] == [0, 1, 2, 3, 4]
    page2 = get(served, "/api/runs/1/cases?limit=5&offset=10")
    assert [r["row"] for r in page2["rows"]] == [10, 11, 12]
    by_score = get(served, "/api/runs/1/cases?sort=score&order=desc&limit=3")["rows"]
    assert [r["score"] for r in by_score] == sorted([r["score"] for r in by_score], reverse=True)
    assert by_score[0]["score"] == pytest.approx(0.98)
    # The unscored row sorts last either way, never as a 0.
    asc = get(served, "/api/runs/1/cases?sort=score&limit=50")["rows"]
    assert asc[-1]["status"] == "unscored" and asc[-1]["score"] is None
    assert get(served, "/api/runs/1/cases?status=unscored")["total"] == 1
    failing = get(served, "/api/runs/1/cases?passed=false&limit=50")
    assert failing["total"] == 8 and all(r["passed"] is False for r in failing["rows"])
    assert get(served, "/api/runs/1/cases?passed=true&threshold=0.5")["total"] == 8
    assert get(served, "/api/runs/1/cases?category=LOGIN")["total"] == 6
    ung = get(served, "/api/runs/1/cases?flag=ungrounded")
    assert {r["id"] for r in ung["rows"]} == {"case-05", "case-xss-" + XSS[1]}
    assert [r["id"] for r in get(served, "/api/runs/1/cases?flag=self_grading")["rows"]] == ["case-06"]
    assert get(served, "/api/runs/2/cases?flag=position_bias")["rows"][0]["id"] == "pair-1"
    assert get(served, "/api/runs/2/cases?evaluator=pairwise")["total"] == 3
    assert [r["id"] for r in get(served, "/api/runs/1/cases?min_score=0.8&max_score=0.95")["rows"]] == [
        "case-09", "case-10"]
    assert get(served, "/api/runs/1/cases?max_latency=101")["total"] == 2  # 100 and 101 ms; the xss row has none
    assert get(served, "/api/runs/1/cases?min_cost=0.0012")["total"] == 1
    assert call(served, "GET", "/api/runs/1/cases?min_score=inf")[0] == 400
    assert call(served, "GET", "/api/runs/1/cases?max_cost=cheap")[0] == 400


def test_full_text_search_covers_input_output_and_rationale(served: Served) -> None:
    assert [r["id"] for r in get(served, "/api/runs/1/cases?q=Answer%20number%207")["rows"]] == ["case-07"]
    assert [r["id"] for r in get(served, "/api/runs/1/cases?q=question%2011")["rows"]] == ["case-11"]
    assert [r["id"] for r in get(served, "/api/runs/1/cases?q=RATIONALE%204:")["rows"]] == ["case-04"]
    assert get(served, "/api/runs/1/cases?q=no-such-words-anywhere")["total"] == 0


def test_bad_query_parameters_are_a_clear_400(served: Served) -> None:
    for q, word in (("sort=bogus", "sort"), ("status=maybe", "status"), ("passed=perhaps", "passed"),
                    ("limit=100000", "limit"), ("threshold=2", "threshold"), ("offset=x", "offset")):
        status, data, _ = call(served, "GET", f"/api/runs/1/cases?{q}")
        assert status == 400 and word in data["error"], q
    assert call(served, "GET", "/api/runs/9/cases")[0] == 404


def test_summary_is_the_one_referee_score_computes(served: Served, data: Data, tmp_path: Path) -> None:
    got = get(served, "/api/runs/1/summary")["summary"]
    out = tmp_path / "score.json"
    assert cli(["score", str(data.results), "--json-out", str(out), "--n-boot", "2000"]) == 0
    want = json.loads(out.read_text())
    for key in ("n", "pass_rate", "mean", "total", "pass_count", "by_category"):
        assert got[key] == want[key], key
    assert got["overall"]["pass_rate"] == want["overall"]["pass_rate"]
    direct = summarize(load_table(data.results), ScoreOptions(n_boot=2000))
    assert got["overall"]["mean"]["lo"] == pytest.approx(direct.overall.mean.lo)


def test_one_case_has_text_criteria_evidence_and_rendered_markdown(served: Served) -> None:
    c = get(served, "/api/runs/1/cases/5")
    assert c["id"] == "case-05" and c["case"]["input"].startswith("Question 5")
    assert c["case"]["output_html"].startswith("<p><strong>Refunds take 5 days.</strong>")
    crit = c["criteria"][0]
    assert crit["grounded"] is False and crit["evidence"] == [{"quote": "a quote the answer never says",
                                                               "found": False}]
    ok = get(served, "/api/runs/1/cases/2")
    marked = [s for s in ok["judged_text"] if s["labels"]]
    assert marked == [{"text": "Refunds take 5 days", "labels": ["accuracy"], "ungrounded": False}]
    assert get(served, "/api/runs/1/cases/3")["raw_reply"] == "I refuse to grade this"
    assert call(served, "GET", "/api/runs/1/cases/99")[0] == 404


def test_hostile_case_text_is_escaped_in_the_markdown(served: Served) -> None:
    c = get(served, "/api/runs/1/cases/12")
    html = c["case"]["output_html"]
    assert "<script" not in html and "<img" not in html and "<svg" not in html and "<iframe" not in html
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in html
    assert 'href="javascript' not in html  # markdown-it refuses the link: it stays text
    assert c["case"]["trajectory"][0]["tool"] == "lookup" + XSS[1]
    assert c["case"]["turns"][0]["content"] == PAYLOAD
    # The conversation as the judge saw it: the turns, then the case's input and output.
    assert [t["role"] for t in c["case"]["turns"]] == ["user", "assistant", "user", "assistant"]
    assert not any(t["judged"] for t in c["case"]["turns"])  # a whole-case row judges no single turn


def test_pairwise_case_shows_both_orders_and_blind_review_hides_the_verdict(served: Served) -> None:
    c = get(served, "/api/runs/2/cases/1")
    assert c["pairwise"] is True and c["position_bias_detected"] is True
    assert [o["shown_first"] for o in c["details"]["orders"]] == ["a", "b"]
    seen = set()
    for _ in range(30):
        rv = get(served, "/api/runs/2/review/1")
        assert set(rv) == {"run", "row", "id", "input", "sides"}  # no winner, rationale or score
        seen.add(tuple(s["side"] for s in rv["sides"]))
    assert seen == {("a", "b"), ("b", "a")}  # both orders occur: the order is random
    assert call(served, "GET", "/api/runs/1/review/0")[0] == 404  # not a pairwise case


def test_labels_are_validated_saved_at_once_and_read_by_calibrate(served: Served, data: Data) -> None:
    path = data.dir / "results.labels.jsonl"
    bad = [
        ({"run": "1", "id": "no-such-case", "passed": True}, 404, "no case"),
        ({"run": "7", "id": "case-00", "passed": True}, 404, "run"),
        ({"run": "1", "id": "case-00"}, 400, "exactly one"),
        ({"run": "1", "id": "case-00", "passed": "yes"}, 400, "true or false"),
        ({"run": "1", "id": "case-00", "score": 6, "scale": "1-5"}, 400, "outside the scale 1-5"),
        ({"run": "1", "id": "case-00", "score": 2.5, "scale": "1-5"}, 400, "whole number"),
        ({"run": "1", "id": "case-00", "score": 0.5, "scale": "0-10"}, 400, "scale"),
        ({"run": "1", "id": "case-00", "score": 2, "scale": "0-2"}, 400, "its rubric's scale is 1-5"),
        ({"run": "1", "id": "case-00", "winner": "a"}, 400, "pairwise"),
        ({"run": "1", "id": "case-00", "passed": True, "admin": True}, 400, "unknown field"),
        ({"run": "1", "id": "case-00", "passed": True, "comment": "x" * 6000}, 400, "comment"),
    ]
    for body, status, word in bad:
        got, resp, _ = call(served, "POST", "/api/labels", body)
        assert got == status and word in resp["error"], body
    assert call(served, "POST", "/api/labels", raw=b"{not json")[0] == 400
    assert call(served, "POST", "/api/labels", raw=b'{"score": NaN}')[0] == 400
    assert not path.exists() or path.read_text() == ""  # nothing invalid was written

    for cid, body in (("case-00", {"passed": True}), ("case-01", {"passed": False}),
                      ("case-02", {"score": 4, "scale": "1-5"})):
        status, resp, _ = call(served, "POST", "/api/labels", {"run": "1", "id": cid, "reviewer": "ann", **body})
        assert status == 201, resp
        assert json.loads(path.read_text().splitlines()[-1])["id"] == cid  # on disk before the reply
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert [(x["id"], x["score"], x["reviewer"]) for x in lines] == [
        ("case-00", 1.0, "ann"), ("case-01", 0.0, "ann"), ("case-02", 0.75, "ann")]
    assert lines[2]["raw_score"] == 4 and lines[2]["scale"] == "1-5"
    # The same reviewer changing a label replaces it (calibrate would average a repeated id); another keeps both.
    status, resp, _ = call(served, "POST", "/api/labels", {"run": "1", "id": "case-00", "passed": False,
                                                           "reviewer": "ann", "comment": PAYLOAD})
    assert status == 200 and resp["replaced"] is True
    assert call(served, "POST", "/api/labels", {"run": "1", "id": "case-00", "passed": True,
                                                "reviewer": "bo"})[0] == 201
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert [(x["id"], x["score"], x["reviewer"]) for x in lines] == [
        ("case-00", 0.0, "ann"), ("case-01", 0.0, "ann"), ("case-02", 0.75, "ann"), ("case-00", 1.0, "bo")]
    human = read_labels(path)
    assert human.values == {"case-00": 0.5, "case-01": 0.0, "case-02": 0.75}
    assert cli(["calibrate", str(data.results), str(path), "--threshold", "1"]) == 0
    agree = get(served, "/api/runs/1/agreement")
    assert agree["n"] == 3 and agree["command"].startswith("referee calibrate")
    listed = get(served, "/api/runs/1/cases?labelled=true")
    assert {r["id"] for r in listed["rows"]} == {"case-00", "case-01", "case-02"}
    assert get(served, "/api/runs/1/labels")["labels"][0]["comment"] == PAYLOAD
    # A pairwise preference is stored as pairwise rows score it.
    assert call(served, "POST", "/api/labels", {"run": "2", "id": "pair-0", "winner": "b"})[0] == 201
    assert json.loads((data.dir / "pairwise.labels.jsonl").read_text())["score"] == 0.0


def test_cross_site_posts_and_foreign_host_names_are_refused(served: Served, data: Data) -> None:
    body = {"run": "1", "id": "case-00", "passed": True}
    port = urlsplit(served.url).port
    assert call(served, "POST", "/api/labels", body, {"Origin": "http://evil.example"})[0] == 403
    assert call(served, "POST", "/api/labels", body, {"Sec-Fetch-Site": "cross-site"})[0] == 403
    assert call(served, "POST", "/api/labels", raw=json.dumps(body).encode(),
                headers={"Content-Type": "text/plain"})[0] == 415
    # DNS rebinding: a page on evil.example resolving to 127.0.0.1 sends its own Host name.
    assert call(served, "GET", "/api/runs", headers={"Host": f"evil.example:{port}"})[0] == 403
    assert call(served, "GET", "/api/runs", headers={"Host": f"localhost:{port}"})[0] == 200
    assert call(served, "POST", "/api/labels", body, {"Origin": f"http://127.0.0.1:{port}"})[0] == 201
    assert call(served, "DELETE", "/api/labels")[0] == 405
    assert call(served, "OPTIONS", "/api/labels")[0] == 405


def test_review_queue_puts_the_least_sure_first_and_skips_labelled(served: Served) -> None:
    q = get(served, "/api/runs/1/queue?kind=uncertain&n=10")
    ids = [c["id"] for c in q["cases"]]
    assert ids[0] == "case-03"  # unscored first
    assert set(ids[1:3]) == {"case-05", "case-xss-" + XSS[1]}  # then ungrounded evidence
    assert "case-07" in ids and "case-00" not in ids  # 0.66 is near 0.7; 0.1 is not
    call(served, "POST", "/api/labels", {"run": "1", "id": "case-03", "passed": False})
    assert "case-03" not in [c["id"] for c in get(served, "/api/runs/1/queue?kind=uncertain")["cases"]]
    r1 = get(served, "/api/runs/1/queue?kind=random&n=4&seed=5")
    assert r1["rows"] == get(served, "/api/runs/1/queue?kind=random&n=4&seed=5")["rows"] and len(r1["rows"]) == 4
    assert call(served, "GET", "/api/runs/1/queue?kind=worst")[0] == 400


def test_compare_gives_regressions_improvements_and_the_paired_statistics(served: Served, data: Data,
                                                                          tmp_path: Path) -> None:
    d = get(served, "/api/compare/0/1?filter=regressions")
    regs = {c["id"] for c in d["cases"]}
    # baseline 0.9 for case-00..05 (all pass), the candidate passes only from 0.74 up
    assert regs == {"case-00", "case-01", "case-02", "case-04", "case-05", "case-xss-" + XSS[1]}
    imp = get(served, "/api/compare/0/1?filter=improvements")
    assert {c["id"] for c in imp["cases"]} == {"case-08", "case-09", "case-10", "case-11"}
    cmp = d["summary"]["comparison"]
    out = tmp_path / "cmp.json"
    cli(["score", str(data.results), "--baseline", str(data.baseline), "--json-out", str(out), "--n-boot", "2000"])
    want = json.loads(out.read_text())["comparison"]
    assert cmp["verdict"] == want["verdict"] and cmp["regression_count"] == want["regression_count"] == 6
    assert [t["p_value"] for t in cmp["tests"]] == [t["p_value"] for t in want["tests"]]
    assert call(served, "GET", "/api/compare/0/1?filter=weird")[0] == 400


def test_a_results_file_that_grows_is_picked_up(served: Served, data: Data) -> None:
    before = get(served, "/api/runs/1/cases")["total"]
    with open(data.results, "a", encoding="utf-8") as f:
        f.write(json.dumps({"schema_version": 1, "id": "late-case", "status": "scored", "score": 0.9}) + "\n")
    os.utime(data.results, ns=(time.time_ns(), time.time_ns() + 1_000_000))
    deadline = time.monotonic() + 60  # changes are looked for at most twice a second: wait for it to be seen
    while get(served, "/api/runs/1/cases")["total"] == before and time.monotonic() < deadline:
        time.sleep(0.05)
    page = get(served, "/api/runs/1/cases?q=&sort=row&order=desc&limit=1")
    assert page["total"] == before + 1 and page["rows"][0]["id"] == "late-case"
    assert call(served, "POST", "/api/labels", {"run": "1", "id": "late-case", "passed": True})[0] == 201


def test_labels_never_overwrite_an_input_and_one_writer_at_a_time(data: Data) -> None:
    with pytest.raises(UserError, match="is an input"):
        build_app([str(data.results)], cases=[str(data.cases)], labels=str(data.cases))
    with pytest.raises(UserError, match="--labels names one file"):
        build_app([str(data.results), str(data.baseline)], labels=str(data.dir / "l.jsonl"))
    app = build_app([str(data.results)], labels=str(data.dir / "l.jsonl"))
    try:
        with pytest.raises(UserError, match="already open in this process"):
            build_app([str(data.results)], labels=str(data.dir / "l.jsonl"))
    finally:
        close_app(app)
    close_app(build_app([str(data.results)], labels=str(data.dir / "l.jsonl")))  # free again once closed


def test_an_unreadable_labels_file_stops_the_viewer_before_it_writes(data: Data) -> None:
    bad = data.dir / "bad.labels.jsonl"
    bad.write_text('{"id": "case-00", "score": 1}\nnot json\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"bad.labels.jsonl:2: malformed JSON"):
        build_app([str(data.results)], labels=str(bad))
    assert bad.read_text().endswith("not json\n")


def test_existing_labels_are_shown_and_kept(data: Data) -> None:
    lab = data.dir / "mine.jsonl"
    lab.write_text('{"id": "case-01", "score": 1.0, "rater": "support-lead", "note": "kept"}\n', encoding="utf-8")
    s = serve([data.results], [data.cases], labels=lab)
    try:
        assert get(s, "/api/runs/0/cases/1")["labels"][0]["rater"] == "support-lead"
        assert call(s, "POST", "/api/labels", {"id": "case-02", "passed": True})[0] == 201
        assert lab.read_text().splitlines()[0] == '{"id": "case-01", "score": 1.0, "rater": "support-lead", ' \
                                                  '"note": "kept"}'
    finally:
        s.server.shutdown()
        s.server.server_close()
        close_app(s.app)


def test_seed_rows_a_bom_bad_lines_and_duplicates_are_viewed_like_referee_score_reads_them(tmp_path: Path) -> None:
    p = tmp_path / "seed.jsonl"
    p.write_bytes(b"\xef\xbb\xbf" + b"\n".join([
        b'{"id": 1, "score": true, "category": "x", "rationale": "first seed row"}',
        b"not json",
        b'{"id": "b", "score": 0.2, "category": "x", "rationale": "needle here"}',
        b'{"id": "b", "score": 0.9, "category": "x", "rationale": "a duplicate: dropped"}',
        b'{"id": "c", "status": "unscored", "rationale": "no verdict"}',
        b'{"id": "d", "score": null}',
    ]) + b"\n")
    big = "word " * 60_000
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "b", "input": "q", "output": big}) + "\n", encoding="utf-8")
    s = serve([p], [cases])
    try:
        page = get(s, "/api/runs/0/cases")
        assert [(r["id"], r["status"], r["evaluator"]) for r in page["rows"]] == [
            ("1", "scored", "seed"), ("b", "scored", "seed"), ("c", "unscored", "seed")]
        assert [r["id"] for r in get(s, "/api/runs/0/cases?q=needle")["rows"]] == ["b"]  # the index lines up
        assert [r["id"] for r in get(s, "/api/runs/0/cases?flag=unscored")["rows"]] == ["c"]
        warnings = get(s, "/api/runs")["runs"][0]["warnings"]  # as referee score: bad lines skipped, said so
        assert any(":2: malformed JSON" in w for w in warnings) and any(":6: field 'score'" in w for w in warnings)
        one = get(s, "/api/runs/0/cases/1")
        assert "output_html" not in one["case"] and len(one["case"]["output"]) == len(big)  # too big to render
        assert call(s, "POST", "/api/labels", {"id": "1", "passed": True})[0] == 201
    finally:
        s.server.shutdown()
        s.server.server_close()
        close_app(s.app)


def test_a_per_turn_row_marks_the_turn_it_judges(tmp_path: Path) -> None:
    cases = tmp_path / "chats.jsonl"
    cases.write_text(json.dumps({"id": "chat", "turns": [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "refund?"}, {"role": "assistant", "content": "5 days"}]}) + "\n",
        encoding="utf-8")
    res = tmp_path / "per_turn.jsonl"
    res.write_text("".join(json.dumps({"schema_version": 1, "id": "chat", "turn": t, "status": "scored",
                                       "score": 0.5, "evaluator": "conversation"}) + "\n" for t in (2, 4)),
                   encoding="utf-8")
    s = serve([res], [cases])
    try:
        for row, judged in ((0, "hello"), (1, "5 days")):
            turns = get(s, f"/api/runs/0/cases/{row}")["case"]["turns"]
            assert [t["content"] for t in turns if t["judged"]] == [judged]
    finally:
        s.server.shutdown()
        s.server.server_close()
        close_app(s.app)


def test_a_labels_file_that_cannot_be_written_is_a_clear_error(data: Data) -> None:
    # A folder that is a file cannot hold the labels (nor its lock); root passes read-only checks, not this one.
    with pytest.raises(UserError, match="cannot write the labels file .*name a writable file with --labels"):
        build_app([str(data.results)], labels=str(data.cases / "labels.jsonl"))


def test_a_changed_label_keeps_every_line_written_meanwhile(tmp_path: Path) -> None:
    from referee.view._labels import LabelStore

    path = tmp_path / "r.labels.jsonl"
    path.write_text(json.dumps({"id": "a", "score": 1.0, "reviewer": "ann"}) + "\n", encoding="utf-8")
    store = LabelStore(path, [])
    store.acquire()
    try:
        # Lines another tool (or a rater outside the viewer) adds while the viewer runs, one of them not JSON.
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"id": "b", "score": 0.0, "rater": "bob"}) + "\n")
            f.write(json.dumps({"id": "a", "score": 0.5, "reviewer": "cy"}) + "\n")
        assert store.put({"id": "a", "score": 0.0, "reviewer": "ann"}) is True  # ann changes her label
        got = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        assert got == [{"id": "a", "score": 0.0, "reviewer": "ann"}, {"id": "b", "score": 0.0, "rater": "bob"},
                       {"id": "a", "score": 0.5, "reviewer": "cy"}]
        assert store.lines == got and store.ids() == {"a", "b"}
        # A label another writer already gave for this (id, reviewer) is replaced, not duplicated.
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"id": "c", "score": 1.0, "reviewer": "ann"}) + "\n")
        assert store.put({"id": "c", "score": 0.0, "reviewer": "ann"}) is True
        got = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        assert [(o["id"], o["score"]) for o in got if o.get("reviewer") == "ann"] == [("a", 0.0), ("c", 0.0)]
    finally:
        store.release()


def test_the_agreement_shown_is_the_printed_commands_figure_for_figure(tmp_path: Path) -> None:
    # Continuous judge scores (no verdicts of their own) and pass/fail labels: the page compares the labels with
    # the verdicts it colours the grid with, and the command it prints computes exactly that.
    import shlex

    scores = [0.95, 0.72, 0.69, 0.4, 0.88, 0.1, 0.55, 0.81, 0.3]
    human = [1, 0, 1, 0, 1, 0, 0, 1, 1]
    results = tmp_path / "run.jsonl"
    results.write_text("".join(json.dumps({"id": f"c{i}", "score": s}) + "\n" for i, s in enumerate(scores)),
                       encoding="utf-8")
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps({"id": f"c{i}", "input": "q"}) + "\n" for i in range(9)), encoding="utf-8")
    s = serve([results], [cases])
    try:
        for i, h in enumerate(human):
            assert call(s, "POST", "/api/labels", {"run": "0", "id": f"c{i}", "passed": bool(h)})[0] == 201
        shown = get(s, "/api/runs/0/agreement")
    finally:
        s.server.shutdown()
        s.server.server_close()
        close_app(s.app)
    assert shown["n"] == 9 and shown["command"].split()[:2] == ["referee", "calibrate"]
    out = tmp_path / "cal.json"
    assert cli([*shlex.split(shown["command"])[1:], "--threshold", "1", "--json-out", str(out)]) == 0
    printed = json.loads(out.read_text())
    # The verdicts at 0.7: judge passes c0 c1 c4 c7; exact agreement 6 of 9.
    assert printed["agreement"]["exact_agreement"]["estimate"] == pytest.approx(6 / 9)
    for key in ("mean_abs_delta", "n", "scale"):
        assert shown[key] == printed[key]
    for stat in ("exact_agreement", "kappa", "mean_abs_diff"):
        assert shown["agreement"][stat] == printed["agreement"][stat]
