"""The viewer's traces page API over a store filled the real way: an application instrumented with the
OpenTelemetry SDK sends spans to ``referee collect``'s receiver, the monitor scores them (a program check, no
judge) and raises a drift alert; span text carrying markup comes back as plain JSON strings. SQLite and
PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from referee.store import Store
from referee.traces import Collector, CollectorConfig, Monitor, MonitorConfig, StoreSink
from referee.view import close_app
from tests.support.otel import App, Sent
from tests.view.conftest import PAYLOAD, XSS, Served
from tests.view.test_api import call, get
from tests.view.test_history import record, serve_history

OFFLINE_RUN = "offline" + "0" * 25
OFFLINE_BRANCH = "release " + XSS[0]
"""The suite's offline run shown beside the alerts (a branch name is the user's text too)."""
HOSTILE_SERVICE = "svc " + XSS[1]
PLAIN_SERVICE = "plain-svc"
T0 = 1_000_000.0
"""The injected clock's start (seconds since the epoch): 1970-01-12."""


@dataclass
class Seeded:
    url: str
    plain: list[Sent]
    hostile: list[Sent]
    """Four JSON answers, one plain-text answer, then the hostile trace (markup everywhere, an error status)."""


class _Clock:
    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> float:
        return self.t

    def ns(self) -> int:
        return int(self.t * 1e9)


def _send(endpoint: str, service: str, qa: list[tuple[str, str]], **kw: Any) -> list[Sent]:
    app = App(endpoint, service=service)
    sent = [app.ask(q, a, **kw) for q, a in qa]
    app.flush()
    app.close()
    return sent


def seed_traces(url: str) -> Seeded:
    """Eight traces from two services, scored by ``is_json``; the drop after the first six raises an alert."""
    clock = _Clock()
    with Store(url) as store, Collector(StoreSink(store), CollectorConfig(port=0), clock_ns=clock.ns) as c:
        plain = _send(c.endpoint, PLAIN_SERVICE, [(f"plain {i}?", '{"ok": true}') for i in range(2)])
        hostile = _send(c.endpoint, HOSTILE_SERVICE, [(f"q {i}?", '{"ok": true}') for i in range(4)])
        hostile += _send(c.endpoint, HOSTILE_SERVICE, [("q 4?", "not json")])
        hostile += _send(c.endpoint, HOSTILE_SERVICE, [(PAYLOAD, PAYLOAD)], error=True, attrs={"app.note": PAYLOAD})
        c.wait_for(lambda s: s.spans_stored >= 3 * 8)
        clock.t += 60
        cfg = MonitorConfig.parse({"quiet_seconds": 5, "alerts": {"reference": 3, "window": 5}}, ["is_json"],
                                  clock=clock)
        # The suite's offline run (three of four cases pass): beside each alert, never its reference.
        cfg.suite = "seed-suite"
        record(store, OFFLINE_RUN, suite="seed-suite", passed=3, n=4, commit="ab" * 20, branch=OFFLINE_BRANCH,
               started="1970-01-11T00:00:00+00:00", evaluator="is_json")
        alerts: list[str] = []
        mon = Monitor(c.sink, cfg, judge="standin", clock=clock, alert_sink=alerts.append)
        while mon.step().traces:
            pass
        assert len(c.sink.scores()) == 8 and alerts  # the seed is what the tests below assume
    return Seeded(url, plain, hostile)


@pytest.fixture
def traced(store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Served, Seeded]]:
    """The seeded store on SQLite and on a real PostgreSQL server."""
    monkeypatch.chdir(tmp_path)
    seeded = seed_traces(store_url)
    s = serve_history(seeded.url, tmp_path)
    yield s, seeded
    s.server.shutdown()
    s.server.server_close()
    close_app(s.app)


def test_the_list_filters_by_service_state_and_time(traced: tuple[Served, Seeded]) -> None:
    s, seeded = traced
    d = get(s, "/api/traces")
    assert d["total"] == 8 and len(d["traces"]) == 8 and not d["more"]
    assert d["facets"]["services"] == sorted([HOSTILE_SERVICE, PLAIN_SERVICE])
    assert d["facets"]["evaluators"] == ["is_json"]
    assert {t["state"] for t in d["traces"]} == {"scored"}
    assert {t["id"] for t in d["traces"]} == {x.trace_id for x in seeded.plain + seeded.hostile}
    by_id = {t["id"]: t for t in d["traces"]}
    bad = seeded.hostile[-1].trace_id
    assert by_id[bad]["service"] == HOSTILE_SERVICE  # the text as sent, for the page to show as text
    assert [(x["evaluator"], x["score"], x["passed"]) for x in by_id[bad]["scores"]] == [("is_json", 0.0, False)]
    assert by_id[seeded.plain[0].trace_id]["scores"][0]["passed"] is True

    only = get(s, "/api/traces?service=" + PLAIN_SERVICE)
    assert {t["id"] for t in only["traces"]} == {x.trace_id for x in seeded.plain}
    assert get(s, "/api/traces?state=open")["traces"] == []
    # The spans arrived at the injected clock's time, 1970-01-12: a day given as `until` includes that day.
    assert len(get(s, "/api/traces?since=1970-01-12&until=1970-01-12")["traces"]) == 8
    assert get(s, "/api/traces?since=1970-01-13")["traces"] == []
    assert get(s, "/api/traces?until=1970-01-11")["traces"] == []
    # Dates past what a stored time can be are bounds every trace is inside (a 500 from an integer overflow before)
    assert len(get(s, "/api/traces?since=0001-01-01&until=9999-12-31")["traces"]) == 8
    assert get(s, "/api/traces?since=9999-12-31")["traces"] == []
    page = get(s, "/api/traces?limit=3")
    assert len(page["traces"]) == 3 and page["more"]
    rest = get(s, "/api/traces?limit=5&offset=3")
    assert not rest["more"] and {t["id"] for t in page["traces"]} | {t["id"] for t in rest["traces"]} == set(by_id)
    for bad_q in ("since=yesterday", "until=1970-13-45", "limit=0", "limit=abc", "offset=-1"):
        status, body, _ = call(s, "GET", "/api/traces?" + bad_q)
        assert status == 400, bad_q
        assert "must be" in body["error"]


def test_the_list_filters_on_an_error_span_and_refuses_any_other_value(traced: tuple[Served, Seeded]) -> None:
    s, seeded = traced
    failed = seeded.hostile[-1].trace_id  # the one request sent with an error status
    d = get(s, "/api/traces")
    assert {t["id"]: t["error"] for t in d["traces"]} == {
        x.trace_id: x.trace_id == failed for x in seeded.plain + seeded.hostile}
    only = get(s, "/api/traces?error=1")
    assert [t["id"] for t in only["traces"]] == [failed] and only["traces"][0]["error"] is True
    assert only["total"] == 8  # the store's count, as with the other filters
    without = get(s, "/api/traces?error=0")
    assert {t["id"] for t in without["traces"]} == {x.trace_id for x in seeded.plain + seeded.hostile[:-1]}
    assert not any(t["error"] for t in without["traces"])
    assert len(get(s, "/api/traces?error=")["traces"]) == 8  # empty: no filter, as the page's unchecked box
    assert [t["id"] for t in get(s, f"/api/traces?error=1&service={PLAIN_SERVICE}")["traces"]] == []
    assert [t["id"] for t in get(s, "/api/traces?error=1&state=scored")["traces"]] == [failed]
    for bad_q in ("error=1;DROP", "error=1%3BDROP%20TABLE%20traces", "error=yes", "error=true", "error=2",
                  "error=-1", "error=%201", "error=1%00", "error=%3Cscript%3E"):
        status, body, _ = call(s, "GET", "/api/traces?" + bad_q)
        assert status == 400, bad_q
        assert body["error"] == "error must be 1 (only traces with an error span) or 0 (only traces without one)"
    assert get(s, "/api/traces")["total"] == 8  # nothing was changed by them


def test_the_list_draws_each_metric_with_its_alert_and_counts(traced: tuple[Served, Seeded]) -> None:
    s, seeded = traced
    d = get(s, "/api/traces")
    [chart] = d["charts"]
    assert chart["metric"] == "is_json" and chart["n"] == 8
    assert chart["svg"].startswith("<svg")
    # The dashed line is the alert's reference level (the first three scores passed: 1.0).
    assert chart["reference"] == d["alerts"][-1]["reference_mean"] == 1.0
    assert 'class="gate"' in chart["svg"] and ">reference 1<" in chart["svg"]
    # The first drop (the seventh score) alarms; the CUSUM restarts and the eighth alarms again.
    assert [(a["metric"], a["at_index"]) for a in d["alerts"]] == [("is_json", 7), ("is_json", 8)]
    assert all(a["effect"] < 0 for a in d["alerts"])
    assert seeded.hostile[4].trace_id in d["alerts"][0]["examples"]
    # One point per score here: the two alerts' points are the red ones.
    assert chart["svg"].count('class="point regression"') == 2
    # The suite's offline run beside them, as context: its own mean, not the reference the alerts compared against.
    for offline in [chart["offline"]] + [a["offline"] for a in d["alerts"]]:
        assert offline["run"] == OFFLINE_RUN and offline["branch"] == OFFLINE_BRANCH
        assert offline["mean"] == 0.75 and offline["n"] == 4 and offline["commit"] == ("ab" * 20)[:12]
    assert chart["offline"]["mean"] != chart["reference"]


def test_a_stored_alerts_offline_run_is_read_back_as_data(traced: tuple[Served, Seeded]) -> None:
    from referee.store import TraceStore

    s, seeded = traced
    with Store(seeded.url) as st:
        TraceStore(st).record_alert({"metric": "is_json", "reference_mean": 1.0, "reference_n": 3, "window_mean": 0.0,
                                     "window_n": 2, "effect": -1.0, "low": -1.0, "high": -1.0, "examples": [],
                                     "at_index": 8, "offline": {"run": ["not", "text"], "mean": "NaN", "n": True}})
        TraceStore(st).record_alert({"metric": "is_json", "reference_mean": 1.0, "reference_n": 3, "window_mean": 0.0,
                                     "window_n": 2, "effect": -1.0, "low": -1.0, "high": -1.0, "examples": [],
                                     "at_index": 8, "offline": {"run": "r" * 500, "mean": 0.5, "low": float("inf"),
                                                                "n": True, "branch": 7}})
    d = get(s, "/api/traces")
    assert d["alerts"][-2]["offline"] is None  # no finite mean: nothing to show
    last = d["alerts"][-1]["offline"]
    assert last == {"run": "r" * 32, "started_at": None, "commit": None, "branch": None, "mean": 0.5, "low": None,
                    "high": None, "n": None}


def test_a_trace_opens_as_the_case_the_monitor_judged_with_its_spans_and_scores(
        traced: tuple[Served, Seeded]) -> None:
    s, seeded = traced
    bad = seeded.hostile[-1]
    d = get(s, "/api/traces/" + bad.trace_id)
    assert d["trace"]["id"] == bad.trace_id and d["trace"]["spans"] == 3
    assert d["case"]["input"] == PAYLOAD and d["case"]["output"] == PAYLOAD  # data, unchanged
    assert [st["tool"] for st in d["case"]["trajectory"]] == ["search"]
    names = [sp["name"] for sp in d["spans"]]
    assert sorted(names) == ["chat m", "execute_tool search", "invoke_agent shop"]
    root = next(sp for sp in d["spans"] if sp["span_id"] == bad.root_span_id)
    assert root["status"] == "error" and root["status_message"] == "boom" and root["kind"] == "agent"
    assert json.loads(root["attributes"])["app.note"] == PAYLOAD
    [score] = d["scores"]
    assert score["evaluator"] == "is_json" and score["status"] == "scored" and score["passed"] is False
    first = get(s, "/api/traces/" + seeded.plain[0].trace_id)
    assert first["alerts"] == [] and first["scores"][0]["passed"] is True
    named = get(s, "/api/traces/" + seeded.hostile[4].trace_id)
    assert [a["at_index"] for a in named["alerts"]] == [7, 8]  # both windows hold it


def test_bad_trace_requests_are_refused(traced: tuple[Served, Seeded], tmp_path: Path) -> None:
    s, _ = traced
    assert call(s, "GET", "/api/traces/" + "f" * 32)[0] == 404
    for bad in ("zz", "0" * 33, "%3Cscript%3E"):
        status, body, _ = call(s, "GET", "/api/traces/" + bad)
        assert status == 400 and "hex" in body["error"], bad


def test_a_viewer_over_results_files_has_no_traces_page(served: Served) -> None:
    status, body, _ = call(served, "GET", "/api/traces")
    assert status == 404 and "store" in body["error"]


def test_a_chart_draws_the_newest_scores_and_still_marks_the_alerts(traced: tuple[Served, Seeded],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from referee.view import _traces

    s, _ = traced
    monkeypatch.setattr(_traces, "MAX_CHART_SCORES", 4)
    [chart] = get(s, "/api/traces")["charts"]
    assert chart["n"] == 4 and chart["before"] == 4
    assert chart["svg"].count("<circle") == 4  # one point per score drawn
    assert chart["svg"].count('class="point regression"') == 2  # the 7th and 8th scores
