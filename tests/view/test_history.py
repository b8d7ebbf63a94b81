"""The viewer over the run history, over real HTTP on SQLite and PostgreSQL: runs with filters, a trend per metric
across commits (band, gate, regressions), a stored run opened as a run of the viewer, two compared with the paired
statistics, the reviewer's name on labels, and the newcomer's flow with no set-up (`referee view` as a process)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from referee.cli import cli
from referee.results import ResultRow, RunManifest
from referee.store import Store, open_store
from referee.store._history import _finish_values
from referee.store._recorder import run_values, summary_of
from referee.view import ViewServer, build_app, close_app
from referee.view._history import History
from tests.view.conftest import XSS, Served
from tests.view.test_api import call, get

HOSTILE_SUITE = "suite " + XSS[0] + " '; DROP TABLE runs; --"
HOSTILE_TAG = "tag" + XSS[1]
HOSTILE_MODEL = "model" + XSS[0]


def record(store: Store, run_id: str, *, suite: str, passed: int, n: int = 20, commit: str | None,
           started: str, branch: str = "main", tags: tuple[str, ...] = (), gate: float | None = 0.6,
           status: str = "complete", evaluator: str = "suite") -> None:
    """A run as the recorder stores it: manifest, rows, and the summary of the one aggregator."""
    rows = [ResultRow(id=f"c{i:02d}", status="scored", score=1.0 if i < passed else 0.0, passed=i < passed,
                      evaluator=evaluator, rationale=f"row {i}") for i in range(n)]
    m = RunManifest(kind="suite", run_id=run_id, created_at=started, status="complete",
                    extra={"suite": {"name": suite, "gates": {"fail_under": gate}}})
    values = run_values(m, results_path=f"{run_id}.jsonl", git={"commit": commit, "branch": branch, "dirty": False})
    values["started_at"] = started
    from referee.store._recorder import manifest_bytes

    store.begin_run(values, tags=tags, manifest_json=manifest_bytes(m))
    store.add_rows(run_id, rows, results_path=f"{run_id}.jsonl")
    if status != "complete":
        return
    finish = _finish_values(m, rows)
    cols, doc = summary_of(rows, m)
    store.finish_run(run_id, finish | cols, summary_json=json.dumps(doc).encode())


def seed(store: Store) -> None:
    # Four commits of one suite: 80%, 85%, a drop to 40% (below the gate and the previous interval), 85%.
    for i, (passed, day) in enumerate([(16, 1), (17, 2), (8, 3), (17, 4)]):
        record(store, f"run{i}" + "0" * 28, suite=HOSTILE_SUITE, passed=passed, commit=f"{i:x}" * 40,
               started=f"2026-03-0{day}T10:00:00+00:00", tags=(HOSTILE_TAG,) if i == 2 else ())
    # A second run of the last commit, older: one point per commit keeps the newest run.
    record(store, "run4" + "0" * 28, suite=HOSTILE_SUITE, passed=2, commit="3" * 40,
           started="2026-03-04T09:00:00+00:00")
    record(store, "other" + "0" * 27, suite="plain", passed=10, commit="9" * 40, started="2026-03-05T10:00:00+00:00",
           branch="feature")
    record(store, "unfinished" + "0" * 22, suite="plain", passed=5, commit="8" * 40,
           started="2026-03-06T10:00:00+00:00", branch="feature", status="running")
    # An aligned judge `referee align` recorded, fitted for a judge whose model name is hostile.
    from referee.store import record_alignment

    def iv(est: float, lo: float, hi: float) -> dict[str, float]:
        return {"estimate": est, "lo": lo, "hi": hi, "n": 20}

    record_alignment(store, alignment_id="a1" * 16, judge_key="k" * 32,
                     config={"judge": {"provider": "openai", "model": HOSTILE_MODEL}},
                     metrics={"method": ["examples", "map"], "n_labels": 40,
                              "prompt": {"diff": "--- rubric\n+++ aligned\n+" + XSS[0], "examples": ["c01", "c02"]},
                              "heldout": {"n": 20, "metric": "kappa",
                                          "gains": {"raw": {"kappa": iv(0.4, 0.1, 0.7)},
                                                    "baseline": {"kappa": iv(0.6, 0.3, 0.9)}}}},
                     labels=[{"case_id": f"c{i:02d}", "reviewer": "Ada", "score": 1.0} for i in range(3)])


def serve_history(url: str, tmp: Path, reviewer: str | None = None) -> Served:
    app = build_app([], lock=True)
    app.history = History(url)
    app.reviewer = reviewer
    server = ViewServer(app, "127.0.0.1", 0)
    server.start_background()
    return Served(app, server, server.url)


@pytest.fixture
def hist(store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Served]:
    monkeypatch.chdir(tmp_path)  # a Postgres store's opened runs go to .referee/ here
    with open_store(store_url) as st:
        seed(st)
    s = serve_history(store_url, tmp_path, reviewer="Ada Reviewer")
    yield s
    s.server.shutdown()
    s.server.server_close()
    close_app(s.app)


def post(s: Served, path: str, body: Any) -> tuple[int, Any]:
    status, data, _ = call(s, "POST", path, body, headers={"Origin": s.url.rstrip("/")})
    return status, data


def test_the_index_says_a_history_is_read_and_names_the_reviewer(hist: Served) -> None:
    idx = get(hist, "/api/runs")
    assert idx["runs"] == [] and idx["reviewer"] == "Ada Reviewer"
    assert idx["history"]["store"] and "password" not in idx["history"]["store"]


def test_runs_are_listed_newest_first_with_filters(hist: Served) -> None:
    d = get(hist, "/api/history")
    ids = [r["id"][:6] for r in d["runs"]]
    assert ids == ["unfini", "other0", "run300", "run400", "run200", "run100", "run000"]
    assert d["total"] == 7 and d["more"] is False
    assert set(d["facets"]["suites"]) == {HOSTILE_SUITE, "plain"}
    assert d["facets"]["tags"] == [HOSTILE_TAG] and set(d["facets"]["branches"]) == {"main", "feature"}
    first = d["runs"][0]
    assert first["status"] == "incomplete" and first["pass_rate"] == [None, None, None]
    r2 = next(r for r in d["runs"] if r["id"].startswith("run2"))
    assert r2["pass_rate"][0] == pytest.approx(0.4) and r2["pass_rate"][1] < 0.4 < r2["pass_rate"][2]
    assert r2["tags"] == [HOSTILE_TAG] and r2["suite"] == HOSTILE_SUITE and r2["commit"] == "2" * 40

    def ids_for(q: str) -> list[str]:
        return [r["id"][:4] for r in get(hist, "/api/history?" + q)["runs"]]

    assert ids_for("suite=plain") == ["unfi", "othe"]
    assert ids_for("suite=" + quote(HOSTILE_SUITE)) == ["run3", "run4", "run2", "run1", "run0"]
    assert ids_for("tag=" + quote(HOSTILE_TAG)) == ["run2"]
    assert ids_for("branch=feature&status=complete") == ["othe"]
    assert ids_for("status=incomplete") == ["unfi"]
    assert ids_for("since=2026-03-04&until=2026-03-05") == ["othe", "run3", "run4"]
    assert ids_for("until=2026-03-01") == ["run0"]
    page = get(hist, "/api/history?limit=2")
    assert len(page["runs"]) == 2 and page["more"] is True
    for bad in ("status=nope", "since=yesterday", "limit=0", "limit=x", "until=2026-03-01';--", "since=2026-13-01",
                "until=2026-03-01T25:00"):
        status, data, _ = call(hist, "GET", "/api/history?" + bad)
        assert status == 400 and data["error"], bad


def test_the_trend_has_one_point_per_commit_the_band_the_gate_and_the_regression(hist: Served) -> None:
    t = get(hist, "/api/history/trend?suite=" + quote(HOSTILE_SUITE))
    assert t["suite"] == HOSTILE_SUITE and t["gate"] == pytest.approx(0.6)
    # Commit 3 ran twice: its newest run (run3, 85%) stands for it, never the older 10%.
    assert [p["id"][:4] for p in t["points"]] == ["run0", "run1", "run2", "run3"]
    assert [p["regression"]["pass_rate"] for p in t["points"]] == [False, False, True, False]
    charts = {c["metric"]: c["svg"] for c in t["charts"]}
    assert set(charts) == {"pass_rate", "mean"}
    pr = charts["pass_rate"]
    assert pr.count("<circle") == 4 and pr.count('class="point regression"') == 1
    assert 'class="band"' in pr and 'class="gate"' in pr and "gate 60.0%" in pr
    assert 'class="gate"' not in charts["mean"]  # the gate is on the pass rate
    for p in t["points"]:
        assert f'href="#/history/open/{p["id"]}"' in pr
    # Text from the store is data in the chart: escaped, never markup.
    assert "<script" not in json.dumps(t["charts"])
    # With no suite named: the newest complete run's suite.
    assert get(hist, "/api/history/trend")["suite"] == "plain"
    assert get(hist, "/api/history/trend?suite=nothing")["charts"] == []
    assert call(hist, "GET", "/api/history/trend?by=week")[0] == 400


def test_recorded_alignments_are_listed_with_their_held_out_gains(hist: Served) -> None:
    data = get(hist, "/api/history/alignments")
    assert data["total"] == 1 and not data["more"]
    (a,) = data["alignments"]
    assert a["id"] == "a1" * 16 and a["method"] == ["examples", "map"] and a["judge"] == "openai/" + HOSTILE_MODEL
    assert a["metric"] == "kappa" and a["n_labels"] == 40 and a["heldout"] == 20 and a["labels"] == 3
    assert a["gain_raw"]["lo"] == 0.1 and a["gain_baseline"]["estimate"] == 0.6
    assert a["prompt_diff"].endswith(XSS[0]) and a["examples"] == ["c01", "c02"]
    status, data, _ = call(hist, "GET", "/api/history/alignments?limit=0")
    assert status == 400 and "limit" in json.dumps(data)


def test_a_stored_run_opens_as_a_run_and_two_compare_with_paired_statistics(hist: Served) -> None:
    ids = [r["id"] for r in get(hist, "/api/history?suite=" + quote(HOSTILE_SUITE))["runs"]]
    base, cand = ids[-1], ids[2]  # run0 (80%) and run2 (40%)
    status, opened = post(hist, "/api/history/open", {"runs": [base, cand]})
    assert status == 200, opened
    kb, kc = opened["runs"]
    idx = get(hist, "/api/runs")
    assert [(r["run"], r["stored_run"]) for r in idx["runs"]] == [(kb, base), (kc, cand)]
    assert idx["runs"][0]["rows"] == 20
    summ = get(hist, f"/api/runs/{kc}/summary")["summary"]
    assert summ["overall"]["pass_rate"]["estimate"] == pytest.approx(0.4)
    # Opening again gives the same run, never a second copy.
    assert post(hist, "/api/history/open", {"runs": [cand]})[1]["runs"] == [kc]
    assert len(get(hist, "/api/runs")["runs"]) == 2
    cmp = get(hist, f"/api/compare/{kb}/{kc}?filter=regressions")
    assert cmp["counts"]["regression"] == 8
    comparison = cmp["summary"]["comparison"]
    assert comparison["regression_count"] == 8 and comparison["tests"]
    assert all(0.0 <= t["p_value"] <= 1.0 for t in comparison["tests"] if t.get("p_value") is not None)
    # A label posted with no name carries the --reviewer's; one with a name keeps it.
    st, lab = post(hist, "/api/labels", {"run": kc, "id": "c00", "passed": True})
    assert st == 201 and lab["label"]["reviewer"] == "Ada Reviewer"
    st, lab = post(hist, "/api/labels", {"run": kc, "id": "c01", "passed": False, "reviewer": "Bo"})
    assert st == 201 and lab["label"]["reviewer"] == "Bo"
    assert Path(lab["path"]).is_file() and Path(lab["path"]).name.endswith(".labels.jsonl")


def test_opening_is_refused_cross_site_unknown_or_malformed(hist: Served) -> None:
    status, data, _ = call(hist, "POST", "/api/history/open", {"runs": ["run0"]},
                           headers={"Origin": "http://evil.example"})
    assert status == 403
    assert post(hist, "/api/history/open", {"runs": ["no-such-run"]})[0] == 404
    bad: object
    for bad in ({"runs": []}, {"runs": ["a", "b", "c"]}, {"runs": [1]}, {"runs": "run0"}, ["run0"]):
        assert post(hist, "/api/history/open", bad)[0] == 400, bad
    assert get(hist, "/api/runs")["runs"] == []


def test_a_viewer_over_files_has_no_history(served: Served) -> None:
    status, data, _ = call(served, "GET", "/api/history")
    assert status == 404 and "history" in data["error"]
    assert get(served, "/api/runs")["history"] is None


def test_the_newcomers_flow_needs_no_set_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """`referee init evals`, `referee run evals/suite.yaml` twice, `runs list`, `runs compare`, `referee view`."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("REFEREE_STORE")  # the default: on, in .referee/ here
    assert cli(["init", "evals"]) == 0
    for _ in range(2):
        assert cli(["run", "evals/suite.yaml"]) == 0
    capsys.readouterr()
    assert cli(["runs", "list", "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)
    assert len(runs) == 2 and {r["status"] for r in runs} == {"complete"}
    assert cli(["runs", "compare", runs[1]["id"], runs[0]["id"]]) == 0
    assert "McNemar" in capsys.readouterr().out
    assert (tmp_path / ".referee" / "history.sqlite").is_file()
    env = {k: v for k, v in os.environ.items() if k != "REFEREE_STORE"} | {"PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "referee", "view", "--port", "0"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        lines = []
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if "serving on" in line:
                break
        assert "2 run(s) stored" in "".join(lines), lines
        url = re.search(r"http://\S+", lines[-1])
        assert url is not None
        from urllib.request import urlopen

        with urlopen(url.group(0).rstrip("/") + "/api/history", timeout=30) as r:
            hist = json.load(r)
        assert sorted(x["id"] for x in hist["runs"]) == sorted(r["id"] for r in runs)
        with urlopen(url.group(0).rstrip("/") + "/api/history/trend?by=run", timeout=30) as r:
            trend = json.load(r)
        assert len(trend["points"]) == 2 and trend["gate"] == pytest.approx(0.6)
        assert trend["charts"][0]["svg"].count("<circle") == 2
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.communicate(timeout=30)


def test_a_viewer_where_nothing_was_recorded_says_so_and_makes_no_store(tmp_path: Path) -> None:
    # A viewer only reads: in a folder where nothing was recorded, or given a mistyped --store file, it used to
    # make an empty database (and a .referee/ folder) and serve an empty history.
    env = {k: v for k, v in os.environ.items() if k != "REFEREE_STORE"}
    typo = tmp_path / "histroy.sqlite"
    for extra in ([], ["--store", str(typo)]):
        try:
            done = subprocess.run([sys.executable, "-m", "referee", "view", "--port", "0", *extra], cwd=tmp_path,
                                  env=env, capture_output=True, text=True, timeout=60, start_new_session=True)
        except subprocess.TimeoutExpired as exc:  # serving an empty history: the fault this test is about
            raise AssertionError(f"the viewer served with no history ({extra}): {exc.stdout!r}") from None
        assert done.returncode == 2, done
        assert "no run history at" in done.stderr and "referee run SUITE" in done.stderr, done.stderr
        assert "serving on" not in done.stdout
    assert not (tmp_path / ".referee").exists() and not typo.exists()


def test_a_run_open_for_labelling_in_another_viewer_is_refused_not_shared(hist: Served, store_url: str,
                                                                          tmp_path: Path) -> None:
    rid = "run1" + "0" * 28
    assert post(hist, "/api/history/open", {"runs": [rid]})[0] == 200
    other = serve_history(store_url, tmp_path)
    try:
        status, data = post(other, "/api/history/open", {"runs": [rid]})
        assert status == 409 and "label" in data["error"].lower()
        assert get(other, "/api/runs")["runs"] == []
        # Another run opens there as usual.
        assert post(other, "/api/history/open", {"runs": ["run2" + "0" * 28]})[0] == 200
    finally:
        other.server.shutdown()
        other.server.server_close()
        close_app(other.app)


def test_reviewers_on_two_machines_share_labels_through_a_shared_store(pg_url: str, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # Two viewers in two folders (two machines) over one PostgreSQL store: each reviewer's labels on a stored run
    # reach the other's viewer through the store; neither viewer's own newer label is written over.
    from referee.store import record_view_label
    from referee.view import _app

    monkeypatch.setattr(_app, "LABEL_SYNC_S", 0.0)
    with open_store(pg_url) as st:
        seed(st)
    rid = "run1" + "0" * 28
    viewers, opened = [], []
    try:
        for name in ("ada", "bo"):
            (tmp_path / name).mkdir()
            monkeypatch.chdir(tmp_path / name)  # a Postgres store's opened runs go to .referee/ in the folder
            v = serve_history(pg_url, tmp_path / name, reviewer=name)
            viewers.append(v)
            status, data = post(v, "/api/history/open", {"runs": [rid]})
            assert status == 200, data
            opened.append(data["runs"][0])
        (ada, ada_key), (bo, bo_key) = zip(viewers, opened, strict=True)
        status, data = post(ada, "/api/labels", {"run": ada_key, "id": "c01", "passed": True,
                                                 "comment": "<b>fine</b>"})
        assert status == 201 and data["store"] and "store_warning" not in data
        status, data = post(bo, "/api/labels", {"run": bo_key, "id": "c01", "passed": False})
        assert status == 201 and data["store"]
        # Hostile rows in the shared table: a line for another case id, and one that is not JSON, are ignored.
        with open_store(pg_url) as st:
            record_view_label(st, rid, {"id": "c02", "passed": True, "score": 1.0, "reviewer": "eve"})
            from referee.store import _schema as s

            with st.engine.begin() as conn:
                conn.execute(s.labels.insert().values(run_id=rid, case_id="c03", reviewer="mallory",
                                                      label='{"id": "c04", "score": 0}', created_at="2026"))
                conn.execute(s.labels.insert().values(run_id=rid, case_id="c03", reviewer="mallory",
                                                      label="not json", created_at="2026"))
        labels = {(x["id"], x["reviewer"]): x for x in get(ada, f"/api/runs/{ada_key}/labels")["labels"]}
        assert labels[("c01", "ada")]["passed"] is True and labels[("c01", "bo")]["passed"] is False
        assert labels[("c02", "eve")]["score"] == 1.0 and not any(r == "mallory" for _, r in labels)
        # Ada changes her mind; Bo sees the new label, and Ada's file never went back to the old one.
        assert post(ada, "/api/labels", {"run": ada_key, "id": "c01", "passed": False})[0] == 200
        bo_labels = {(x["id"], x["reviewer"]): x for x in get(bo, f"/api/runs/{bo_key}/labels")["labels"]}
        assert bo_labels[("c01", "ada")]["passed"] is False and bo_labels[("c01", "bo")]["passed"] is False
        ada_labels = {(x["id"], x["reviewer"]): x for x in get(ada, f"/api/runs/{ada_key}/labels")["labels"]}
        assert ada_labels[("c01", "ada")]["passed"] is False
    finally:
        for v in viewers:
            v.server.shutdown()
            v.server.server_close()
            close_app(v.app)
