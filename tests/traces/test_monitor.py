"""End to end: an application instrumented with the OpenTelemetry SDK sends spans over OTLP/HTTP to the receiver;
the monitor samples, judges with the local LLM server through the one runner, stores one score per (trace,
evaluator) and exports gen_ai.evaluation.result log records to a second OTLP receiver."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from referee import Judge, UserError
from referee.testing import Reply, WireRequest
from referee.traces import Collector, CollectorConfig, Monitor, MonitorConfig
from tests.support.judging import verdict
from tests.support.otel import App, logs_receiver
from tests.traces.conftest import SinkFactory

RUBRIC = {"llm_judge": {"rubric": "- the answer is correct"}}


class Clock:
    def __init__(self) -> None:
        self.t = 1_000_000.0

    def __call__(self) -> float:
        return self.t

    def ns(self) -> int:
        return int(self.t * 1e9)


def grading(req: WireRequest) -> str:
    return verdict(0.1, "wrong") if "WRONG" in req.prompt_text else verdict(0.9, "right")


@pytest.fixture
def judge(fake_server: Any, monkeypatch: pytest.MonkeyPatch) -> Judge:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    fake_server.responder = grading
    return Judge("openai:gpt-test", base_url=fake_server.url + "/v1")


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def collector(clock: Clock, make_sink: SinkFactory) -> Iterator[Collector]:
    with Collector(make_sink(), CollectorConfig(port=0), clock_ns=clock.ns) as c:
        yield c


def _send(collector: Collector, questions: list[tuple[str, str]], **kw: Any) -> list[Any]:
    app = App(collector.endpoint, **kw)
    sent = [app.ask(q, a) for q, a in questions]
    app.flush()
    app.close()
    collector.wait_for(lambda s: s.spans_received >= 3 * len(sent))
    return sent


@pytest.mark.parametrize("openinference", [False, True], ids=["genai", "openinference"])
def test_every_trace_is_received_scored_once_and_exported_with_its_ids(
        collector: Collector, judge: Judge, clock: Clock, openinference: bool, fake_server: Any) -> None:
    qa = [(f"question {i}?", "WRONG answer" if i % 3 == 0 else f"answer {i}") for i in range(9)]
    sent = _send(collector, qa, openinference=openinference)
    assert collector.stats().spans_stored == 27
    with logs_receiver() as (logs, url):
        cfg = MonitorConfig.parse({"quiet_seconds": 5, "export": {"endpoint": url}}, [RUBRIC], clock=clock)
        mon = Monitor(collector.sink, cfg, judge=judge, clock=clock)
        assert mon.step().traces == 0  # not quiet yet: the clock has not moved
        clock.t += 10
        report = mon.step()
        assert report.traces == 9 and report.scored == 9 and report.exported == 9
        records = logs.wait_for(9)
    scores = {s.trace_id: s for s in collector.sink.scores()}
    assert set(scores) == {s.trace_id for s in sent}
    for s in sent:
        assert scores[s.trace_id].span_id == s.root_span_id
        assert scores[s.trace_id].passed is ("WRONG" not in s.answer)
    by_trace = {r["trace_id"]: r for r in records}
    assert set(by_trace) == {s.trace_id for s in sent}
    for s in sent:
        r = by_trace[s.trace_id]
        assert r["span_id"] == s.root_span_id and r["event_name"] == "gen_ai.evaluation.result"
        assert r["attributes"]["gen_ai.evaluation.name"] == "llm_judge"
        want = 0.1 if "WRONG" in s.answer else 0.9
        assert r["attributes"]["gen_ai.evaluation.score.value"] == pytest.approx(want)
        assert r["attributes"]["gen_ai.evaluation.score.label"] == ("fail" if want < 0.7 else "pass")
    judged = len(fake_server.requests)
    clock.t += 100
    assert mon.step().traces == 0 and len(fake_server.requests) == judged  # nothing judged twice


def test_a_restarted_monitor_resumes_without_judging_twice(collector: Collector, judge: Judge, clock: Clock,
                                                           fake_server: Any) -> None:
    _send(collector, [(f"q{i}", f"a{i}") for i in range(4)])
    clock.t += 60
    cfg = MonitorConfig.parse({"quiet_seconds": 5}, [RUBRIC, "is_json"], clock=clock)
    first = Monitor(collector.sink, cfg, judge=judge, clock=clock)
    # Simulate a crash after the first evaluator's scores were stored: the second never ran.
    first._entries = {"llm_judge": RUBRIC}
    first.step()
    judged = len(fake_server.requests)
    assert judged == 4
    for tid in {s.trace_id for s in collector.sink.scores()}:
        collector.sink.mark_trace(tid, "open")  # as the store finds them after a kill: not closed
    second = Monitor(collector.sink, cfg, judge=judge, clock=clock)
    second.step()
    assert len(fake_server.requests) == judged  # the judge is not called again
    by_eval: dict[str, int] = {}
    for s in collector.sink.scores():
        by_eval[s.evaluator] = by_eval.get(s.evaluator, 0) + 1
    assert by_eval == {"llm_judge": 4, "is_json": 4}


def test_sampling_by_rate_and_always_rules_is_counted(collector: Collector, judge: Judge, clock: Clock) -> None:
    app = App(collector.endpoint)
    sent = [app.ask(f"q{i}", f"a{i}", error=(i % 10 == 0)) for i in range(40)]
    app.flush()
    app.close()
    collector.wait_for(lambda s: s.spans_stored >= 120)
    clock.t += 60
    cfg = MonitorConfig.parse({"quiet_seconds": 5, "sampling": {"rate": 0.25, "always": [{"status": "error"}]}},
                              [RUBRIC], clock=clock)
    mon = Monitor(collector.sink, cfg, judge=judge, clock=clock)
    mon.step()
    scored = {s.trace_id for s in collector.sink.scores()}
    expected = {s.trace_id for i, s in enumerate(sent) if i % 10 == 0 or cfg.sampler.rate_sampled(s.trace_id)}
    assert scored == expected
    assert collector.sink.counts().get("skipped: sampled_out", 0) == 40 - len(expected)


def test_a_judge_that_is_down_leaves_the_scores_waiting(collector: Collector, clock: Clock, fake_server: Any,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    _send(collector, [("q", "a")])
    clock.t += 60
    down = Judge("openai:gpt-test", base_url="http://127.0.0.1:9/v1", max_retries=0, timeout=2)
    cfg = MonitorConfig.parse({"quiet_seconds": 5}, [RUBRIC], clock=clock)
    Monitor(collector.sink, cfg, judge=down, clock=clock).step()
    assert collector.sink.scores() == []
    assert collector.sink.counts()["skipped: judge_unavailable"] == 1
    fake_server.responder = grading
    up = Judge("openai:gpt-test", base_url=fake_server.url + "/v1")
    Monitor(collector.sink, cfg, judge=up, clock=clock).step()
    assert [s.status for s in collector.sink.scores()] == ["scored"]


def test_traces_are_mapped_to_cases_while_the_first_judge_calls_are_in_flight(
        collector: Collector, clock: Clock, fake_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import referee.traces._monitor as monitor_module

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    mapped: list[str] = []
    real = monitor_module.case_from_spans

    def counting(spans: Any, **kw: Any) -> Any:
        mapped.append(kw["case_id"])
        return real(spans, **kw)

    monkeypatch.setattr(monitor_module, "case_from_spans", counting)
    mapped_at_call: list[int] = []

    def answer(req: WireRequest) -> str:
        mapped_at_call.append(len(mapped))
        return grading(req)

    fake_server.responder = answer
    _send(collector, [(f"q{i}", "WRONG" if i % 4 == 0 else f"a{i}") for i in range(12)])
    clock.t += 60
    cfg = MonitorConfig.parse({"quiet_seconds": 5}, [RUBRIC], clock=clock)
    judge = Judge("openai:gpt-test", base_url=fake_server.url + "/v1", concurrency=2)
    report = Monitor(collector.sink, cfg, judge=judge, clock=clock).step()
    assert report.traces == 12 and report.scored == 12
    assert mapped_at_call[0] < 12  # the first call went out before every trace was mapped
    assert sorted(mapped) == sorted({s.trace_id for s in collector.sink.scores()})  # each mapped once, scored once
    assert len(fake_server.requests) == 12


def test_a_judge_that_fails_mid_pass_leaves_its_traces_for_the_next_pass_none_lost_none_scored_twice(
        collector: Collector, clock: Clock, fake_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    calls: list[int] = []

    def revoked_after_three(req: WireRequest) -> Any:
        calls.append(1)
        return Reply(status=401, body={"error": {"message": "key revoked"}}) if len(calls) == 4 else grading(req)

    fake_server.responder = revoked_after_three
    sent = _send(collector, [(f"q{i}", f"a{i}") for i in range(10)])
    clock.t += 60
    cfg = MonitorConfig.parse({"quiet_seconds": 5}, [RUBRIC], clock=clock)
    judge = Judge("openai:gpt-test", base_url=fake_server.url + "/v1", concurrency=1, max_retries=0)
    Monitor(collector.sink, cfg, judge=judge, clock=clock).step()
    # The pass stopped at the refusal: its scores wait (at-least-once), the traces not reached were not touched.
    assert collector.sink.scores() == []
    assert collector.sink.counts()["skipped: judge_unavailable"] >= 1
    Monitor(collector.sink, cfg, judge=judge, clock=clock).step()  # the key works again
    scores = collector.sink.scores()
    assert sorted(s.trace_id for s in scores) == sorted(t.trace_id for t in sent)  # every trace, once each
    assert {s.status for s in scores} == {"scored"}
    # Three answered before the refusal (asked again from the response cache, free), the refused one, six more.
    assert len(calls) == 11


def test_unscored_traces_carry_error_type_and_no_score(clock: Clock, judge: Judge, make_sink: SinkFactory) -> None:
    sink = make_sink(max_spans_per_trace=2)
    with Collector(sink, CollectorConfig(port=0), clock_ns=clock.ns) as c:
        _send(c, [("q", "a")])  # three spans: over the cap of two
        assert sink.counts()["over_trace_cap"] == 1
        clock.t += 60
        with logs_receiver() as (logs, url):
            cfg = MonitorConfig.parse({"quiet_seconds": 5, "export": {"endpoint": url}}, [RUBRIC], clock=clock)
            Monitor(sink, cfg, judge=judge, clock=clock).step()
            [record] = logs.wait_for(1)
    attrs = record["attributes"]
    assert attrs["error.type"] == "too_large"
    assert "gen_ai.evaluation.score.value" not in attrs and "gen_ai.evaluation.score.label" not in attrs
    assert sink.counts()["skipped: too_large"] == 1


def test_a_failed_export_is_sent_again_on_the_next_pass(collector: Collector, judge: Judge, clock: Clock) -> None:
    sent = _send(collector, [("q1", "a1"), ("q2", "a2")])
    clock.t += 60
    with logs_receiver() as (logs, url):
        logs.fail_next = 1
        cfg = MonitorConfig.parse({"quiet_seconds": 5, "export": {"endpoint": url}}, [RUBRIC], clock=clock)
        mon = Monitor(collector.sink, cfg, judge=judge, clock=clock)
        assert mon.step().exported == 0
        assert collector.sink.counts()["export_failed"] == 2
        assert mon.step().exported == 2
        records = logs.wait_for(2)
    assert sorted(r["trace_id"] for r in records) == sorted(s.trace_id for s in sent)


def test_a_planted_quality_drop_raises_an_alert_and_an_unchanged_stream_does_not(
        collector: Collector, judge: Judge, clock: Clock) -> None:
    alerts: list[str] = []
    cfg = MonitorConfig.parse({"quiet_seconds": 5, "alerts": {"reference": 20, "window": 20, "h": 4}},
                              [RUBRIC], clock=clock)
    mon = Monitor(collector.sink, cfg, judge=judge, clock=clock, alert_sink=alerts.append)
    _send(collector, [(f"q{i}", f"a{i}" if i % 5 else f"WRONG {i}") for i in range(40)])
    clock.t += 60
    while mon.step().traces:
        pass
    assert alerts == []  # the same quality as the reference: no alarm
    _send(collector, [(f"r{i}", f"WRONG {i}" if i % 5 else f"b{i}") for i in range(30)])
    clock.t += 60
    while mon.step().traces:
        pass
    assert len(alerts) >= 1 and "llm_judge" in alerts[0]
    assert mon.alerts[0].effect < 0


def test_the_monitor_prunes_by_the_retention_it_is_given(collector: Collector, judge: Judge, clock: Clock) -> None:
    _send(collector, [("q", "a")])
    clock.t += 2 * 86400
    cfg = MonitorConfig.parse({"quiet_seconds": 5, "retention": {"days": 1}}, [RUBRIC], clock=clock)
    report = Monitor(collector.sink, cfg, judge=judge, clock=clock).step()
    assert report.traces == 0 and collector.sink.counts()["pruned"] == 1


def _drop_with_webhook(collector: Collector, judge: Judge, clock: Clock, port: int) -> Monitor:
    """Ten good traces then ten wrong ones, monitored until every pass is done, alerts going to a webhook on
    ``port``: the drop raises an alert."""
    cfg = MonitorConfig.parse({"quiet_seconds": 5, "alerts": {
        "reference": 10, "window": 10, "h": 2, "webhook": f"http://127.0.0.1:{port}/hook"}}, [RUBRIC], clock=clock)
    mon = Monitor(collector.sink, cfg, judge=judge, clock=clock, alert_sink=lambda m: None)
    _send(collector, [(f"q{i}", f"a{i}") for i in range(10)] + [(f"r{i}", f"WRONG {i}") for i in range(10)])
    clock.t += 60
    while mon.step().traces:
        pass
    return mon


def test_an_alert_goes_to_the_webhook_and_the_store(collector: Collector, judge: Judge, clock: Clock) -> None:
    import json as _json
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    got: list[dict[str, Any]] = []
    done = threading.Event()

    class Hook(BaseHTTPRequestHandler):
        def log_message(self, *a: Any) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802
            got.append(_json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(204)
            self.end_headers()
            done.set()

    srv = HTTPServer(("127.0.0.1", 0), Hook)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        _drop_with_webhook(collector, judge, clock, srv.server_address[1])
        assert done.wait(30)
    finally:
        srv.shutdown()
        srv.server_close()
        th.join()
    assert got[0]["metric"] == "llm_judge" and got[0]["effect"] < 0 and got[0]["examples"]
    stored = getattr(collector.sink, "alerts", None)
    if callable(stored):  # the store keeps alerts; the memory sink keeps nothing past the process
        assert stored()[0]["metric"] == "llm_judge"


def test_a_webhook_that_answers_garbage_stops_nothing(collector: Collector, judge: Judge, clock: Clock) -> None:
    # A webhook answering what is not HTTP raised http.client's BadStatusLine (not an OSError) out of the pass that
    # raised the alert: the traces after it in that pass were left unscored. It is counted as a failed webhook.
    import socket
    import threading

    srv = socket.create_server(("127.0.0.1", 0))
    srv.settimeout(30)

    def answer_garbage() -> None:
        try:
            while True:
                conn, _ = srv.accept()
                with conn:
                    conn.recv(65536)
                    conn.sendall(b"garbage\r\n\r\n")
        except OSError:  # closed by the test, or no one came
            pass

    th = threading.Thread(target=answer_garbage, daemon=True)
    th.start()
    try:
        mon = _drop_with_webhook(collector, judge, clock, srv.getsockname()[1])
    finally:
        srv.close()
        th.join(30)
    assert mon.alerts and collector.sink.counts()["alert_webhook_failed"] >= 1
    assert len(collector.sink.scores()) == 20  # every trace scored, the ones after the alert too


def test_over_the_budget_traces_are_skipped_and_counted(collector: Collector, fake_server: Any, clock: Clock,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    fake_server.responder = grading
    priced = Judge("openai:gpt-test", base_url=fake_server.url + "/v1", input_price_per_mtok=1000.0,
                   output_price_per_mtok=1000.0)
    _send(collector, [(f"q{i}", f"a{i}") for i in range(6)])
    clock.t += 60
    cfg = MonitorConfig.parse({"quiet_seconds": 5, "batch": 2, "budget": {"usd_per_hour": 0.0001}}, [RUBRIC],
                              clock=clock)
    mon = Monitor(collector.sink, cfg, judge=priced, clock=clock)
    while mon.step().traces:
        pass
    assert len(collector.sink.scores()) == 2  # the first pass spent the hour's budget
    assert collector.sink.counts()["skipped: over_budget"] == 4
    assert len(fake_server.requests) == 2


def test_span_filters_evaluate_each_retrieval_span_and_export_its_ids(make_sink: SinkFactory, clock: Clock) -> None:
    from referee.example import DATA
    from referee.traces import Redactor, replay

    sink = make_sink()
    replay([DATA / "production" / "traces.otlp.jsonl"], sink, Redactor(), received_ns=clock.ns())
    clock.t += 60
    retrieval = {}
    for tid in sink.quiet_traces(before_ns=clock.ns(), limit=100):
        [span] = [s for s in sink.trace_spans(tid) if s["name"] == "retrieval"]
        retrieval[tid] = span["spanId"]
    with logs_receiver() as (logs, url):
        cfg = MonitorConfig.parse({"quiet_seconds": 5, "spans": {"kind": "retriever"}, "export": {"endpoint": url}},
                                  ["faithfulness"], clock=clock)
        mon = Monitor(sink, cfg, judge="standin", clock=clock)
        while mon.step().traces:
            pass
        records = logs.wait_for(12)
    scores = sink.scores()
    assert len(scores) == 12 and {(s.trace_id, s.unit) for s in scores} == set(retrieval.items())
    assert {(r["trace_id"], r["span_id"]) for r in records} == set(retrieval.items())
    assert sum(s.passed is False for s in scores) == 4  # the four answers their document does not support


def test_an_unknown_span_kind_is_named() -> None:
    with pytest.raises(Exception, match="retriever"):
        MonitorConfig.parse({"spans": {"kind": "retrieval"}}, ["faithfulness"])


def test_monitor_passes_are_not_recorded_as_runs(tmp_path: Any, judge: Judge, clock: Clock,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from referee.store import Store
    from referee.traces import StoreSink

    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    monkeypatch.setenv("REFEREE_STORE", url)  # the store in force is the one the traces go to
    with Store(url) as store, Collector(StoreSink(store), CollectorConfig(port=0), clock_ns=clock.ns) as c:
        _send(c, [("q", "a"), ("q2", "a2")])
        clock.t += 60
        Monitor(c.sink, MonitorConfig.parse({"quiet_seconds": 5}, [RUBRIC], clock=clock), judge=judge,
                clock=clock).step()
        assert len(c.sink.scores()) == 2
        assert store.count_runs() == 0


def _chat_trace(i: int) -> Any:
    from referee.traces import SpanRecord

    msgs = [{"role": "user", "parts": [{"type": "text", "content": f"question {i}?"}]}]
    out = [{"role": "assistant", "parts": [{"type": "text", "content": f"answer {i}"}]}]
    return SpanRecord(trace_id=f"{i:032x}", span_id=f"{i:016x}", parent_span_id=None, name="chat m", start_ns=i,
                      end_ns=i + 1, service="svc", attributes={
                          "gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps(msgs),
                          "gen_ai.output.messages": json.dumps(out)})


def test_a_budget_lowers_the_sampling_rate_instead_of_stopping(make_sink: SinkFactory, fake_server: Any,
                                                               clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    from referee.traces import trace_fraction

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    fake_server.responder = grading
    priced = Judge("openai:gpt-test", base_url=fake_server.url + "/v1", input_price_per_mtok=1000.0,
                   output_price_per_mtok=1000.0)
    sink = make_sink()
    sink.add_spans([_chat_trace(i) for i in range(1, 61)], received_ns=clock.ns())
    clock.t += 60
    said: list[str] = []
    cfg = MonitorConfig.parse({"quiet_seconds": 5, "batch": 4}, [RUBRIC], clock=clock)
    mon = Monitor(sink, cfg, judge=priced, clock=clock, alert_sink=said.append)
    first = mon.step()
    assert first.scored == 4 and mon.rate_factor == 1.0
    spent = mon.spent_usd()
    assert spent > 0
    # A budget four times under what the first pass projects to the hour (its spend over the 60 s floor), yet
    # well over what was spent: the rate is lowered to a quarter, and judging goes on.
    cfg.budget_usd_per_hour = spent * 60 / 4
    judged_before = len(fake_server.requests)
    while mon.step().traces:
        pass
    assert 0 < mon.rate_factor <= 0.25
    assert said and said[0].startswith("budget: sampling rate lowered to 25.00% of traces")
    later = {s.trace_id for s in sink.scores()} - {f"{i:032x}" for i in range(1, 5)}
    assert later and all(trace_fraction(t) < 0.25 for t in later)  # a subset of the hash's, never others
    assert len(fake_server.requests) - judged_before == len(later)
    counts = sink.counts()
    assert counts["skipped: budget_lowered_rate"] + counts.get("skipped: over_budget", 0) + len(later) == 56
    assert counts["budget: sampling rate lowered"] >= 1
    # No new spend: the rate stays where it is (it is not lowered again by the same spend) ...
    factor = mon.rate_factor
    clock.t += 1
    mon.step()
    assert mon.rate_factor == factor
    # ... and once the spend has aged out of the hour, the full rate is back, and said.
    clock.t += 3601
    mon.step()
    assert mon.rate_factor == 1.0 and said[-1].startswith("budget: sampling rate raised to 100.00% of traces")


def test_at_ingest_sampling_is_parsed_and_refused_with_always_rules() -> None:
    cfg = MonitorConfig.parse({"sampling": {"rate": 0.2, "at_ingest": True}}, [RUBRIC])
    assert cfg.ingest_rate == 0.2
    assert MonitorConfig.parse({"sampling": {"rate": 0.2}}, [RUBRIC]).ingest_rate is None
    with pytest.raises(UserError, match="trace id alone"):
        MonitorConfig.parse({"sampling": {"rate": 0.2, "at_ingest": True, "always": [{"status": "error"}]}}, [RUBRIC])
    with pytest.raises(UserError, match="true or false"):
        MonitorConfig.parse({"sampling": {"at_ingest": "yes"}}, [RUBRIC])


def test_unsampled_traces_can_be_kept_as_counts_only(collector: Collector, judge: Judge, clock: Clock) -> None:
    app = App(collector.endpoint)
    sent = [app.ask(f"q{i}", f"a{i}") for i in range(20)] + [app.ask("failed", "a", error=True)]
    app.flush()
    app.close()
    collector.wait_for(lambda s: s.spans_stored >= 3 * 21)
    clock.t += 60
    cfg = MonitorConfig.parse({"quiet_seconds": 5, "sampling": {"rate": 0.3, "always": [{"status": "error"}],
                                                                "keep_unsampled": False}}, [RUBRIC], clock=clock)
    mon = Monitor(collector.sink, cfg, judge=judge, clock=clock)
    while mon.step().traces:
        pass
    kept = {s.trace_id for s in sent if cfg.sampler.rate_sampled(s.trace_id)} | {sent[-1].trace_id}
    assert {s.trace_id for s in collector.sink.scores()} == kept  # the failed trace too: `always` still holds
    for s in sent:
        assert len(collector.sink.trace_spans(s.trace_id)) == (3 if s.trace_id in kept else 0)
    counts = collector.sink.counts()
    assert counts["skipped: sampled_out"] == 21 - len(kept)
    assert counts["not kept: spans of unsampled traces"] == 3 * (21 - len(kept))
    with pytest.raises(UserError, match="keep_unsampled"):
        MonitorConfig.parse({"sampling": {"keep_unsampled": "no"}}, [RUBRIC])


BAD_SECTIONS = [
    ({"quiet_seconds": float("inf")}, "quiet_seconds: expected a finite number at least 0 and at most 86400"),
    ({"quiet_seconds": -1}, "quiet_seconds: expected a finite number at least 0"),
    # Finite, but past any sensible value: the cut-off time's arithmetic overflowed mid-run.
    ({"quiet_seconds": 1e300}, "quiet_seconds: expected a finite number at least 0 and at most 86400"),
    ({"threshold": float("nan")}, "threshold: expected a finite number at least 0 and at most 1"),
    ({"threshold": 7}, "at most 1, got 7"),
    ({"batch": 0}, "batch: expected a whole number from 1 to 10,000"),
    ({"batch": 10**20}, "batch: expected a whole number from 1 to 10,000"),  # an OverflowError in the query
    ({"batch": 2.5}, "batch: expected a whole number"),
    ({"max_input_chars": True}, "max_input_chars: expected a whole number"),
    ({"budget": {"usd_per_hour": float("nan")}}, "budget.usd_per_hour: expected a finite number above 0"),
    ({"budget": 5}, "budget: expected a mapping"),
    ({"alerts": {"reference": "abc"}}, "alerts.reference: expected a whole number from 2 to 100,000"),
    ({"alerts": {"window": 1}}, "alerts.window: expected a whole number from 2 to 100,000"),
    ({"alerts": {"window": 10**20}}, "alerts.window: expected a whole number from 2 to 100,000"),  # OverflowError
    ({"retention": {"days": 1e300}}, "retention.days: expected a finite number above 0 and at most 36525"),
    ({"alerts": {"k": float("nan")}}, "alerts.k: expected a finite number at least 0"),
    ({"alerts": {"h": 0}}, "alerts.h: expected a finite number above 0"),
    ({"alerts": {"webhok": "https://x"}}, "alerts.webhok: unknown key (did you mean 'webhook'?)"),
    ({"alerts": {"h": 1, "wndow": 5, "zz": 1}}, "alerts.wndow: unknown key (did you mean 'window'?); also unknown: zz"),
    ({"sampling": {"rate": 1.5}}, "sampling.rate: expected a finite number at least 0 and at most 1, got 1.5"),
    ({"sampling": {"per_minute": -1}}, "sampling.per_minute: expected a whole number of at least 0, got -1"),
    ({"sampling": {"always": [{"statuss": "error"}]}},
     "sampling.always[0].statuss: unknown field (did you mean 'status'?)"),
    ({"alerts": {"webhook": "file:///etc/passwd"}}, "alerts.webhook: expected an http:// or https:// URL"),
    ({"export": {"endpoint": "ftp://x"}}, "export.endpoint: expected an http:// or https:// URL"),
    ({"export": {"headers": {"authorization": 1}}}, "export.headers: expected a mapping of header names to text"),
    ({"retention": {"days": -1}}, "retention.days: expected a finite number above 0"),
    ({"retention": {"max_traces": 0}}, "retention.max_traces: expected a whole number of at least 1"),  # no most
    ({"traces": 5}, "traces: expected a list of rules"),
    ({"traces": ["abc"]}, "traces[0]: expected a mapping such as {status: error}"),
    ({"sampling": 5}, "sampling: expected a mapping"),
    ({"sampling": {"always": [5]}}, "sampling.always[0]: expected a mapping"),
]


@pytest.mark.parametrize(("section", "message"), BAD_SECTIONS, ids=[m.split(":")[0] for _, m in BAD_SECTIONS])
def test_every_number_and_url_of_the_monitor_section_is_checked(section: dict[str, Any], message: str) -> None:
    # A NaN threshold passed nothing and failed nothing, an infinite quiet period never closed a trace, a typo under
    # alerts: was ignored, and 'abc' as a window was a traceback: each is refused, naming the key.
    with pytest.raises(UserError) as exc:
        MonitorConfig.parse(section, [RUBRIC])
    assert message in str(exc.value) and str(exc.value).startswith("monitor.")


def test_the_monitor_sections_limits_may_be_lifted_with_null() -> None:
    cfg = MonitorConfig.parse({"retention": {"days": None, "max_traces": None}, "threshold": 1,
                               "alerts": {"webhook": "https://hooks.example.com/x", "k": 0}}, [RUBRIC])
    assert (cfg.retention_days, cfg.max_traces, cfg.threshold, cfg.drift_k) == (None, None, 1.0, 0.0)


def test_a_monitor_suite_is_checked_before_any_trace_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A typo in an evaluator's name was found at the first pass, once traffic had arrived; `referee validate` said
    # the monitor suite lacked `cases:` and never read its monitor: section. Both now check it whole, at once.
    from referee.example import DATA
    from referee.suites import SuiteInvalid
    from referee.traces import check_monitor, load_monitor
    from tests.support.cli import run_cli

    good = tmp_path / "monitor.yaml"
    good.write_text("name: prod\nevaluators:\n  - llm_judge: {rubric: '- answers the question'}\nmonitor:\n"
                    "  sampling: {rate: 0.25}\n  redact: {patterns: ['sk-[a-z]+'], hook: 'no_such_module:fn'}\n")
    # The hook's module is looked up, never imported: here it is not found.
    code, out, err = run_cli(["validate", str(good)], capsys)
    assert code == 2 and "monitor.redact.hook: cannot find module 'no_such_module'" in err
    good.write_text(good.read_text().replace(", hook: 'no_such_module:fn'", ""))
    config = check_monitor(good)
    assert config is not None and config.sampler.rate == 0.25
    code, out, err = run_cli(["validate", str(good)], capsys)
    assert code == 0 and "no cases (a monitor suite); monitor: 1 evaluator(s), sampling rate 0.25" in out
    typo = tmp_path / "typo.yaml"
    typo.write_text(good.read_text().replace("llm_judge", "llm_judeg"))
    with pytest.raises(SuiteInvalid, match=r"typo.yaml:3 evaluators\[0\].llm_judeg: unknown evaluator 'llm_judeg' "
                                           r"\(did you mean 'llm_judge'\?\)"):
        load_monitor(typo)
    code, _, err = run_cli(["monitor", str(typo), "--replay", str(DATA / "production" / "traces.otlp.jsonl"),
                            "--once", "--store", f"sqlite:///{tmp_path / 'h.sqlite'}", "--provider", "standin"],
                           capsys)
    assert code == 2 and "llm_judeg" in err and "replayed" not in err and not (tmp_path / "h.sqlite").exists()
    bad_rate = tmp_path / "rate.yaml"
    bad_rate.write_text(good.read_text().replace("rate: 0.25", "rate: 1.5"))
    code, _, err = run_cli(["validate", str(bad_rate)], capsys)
    assert code == 2 and "rate.yaml:5 monitor.sampling.rate: expected a finite number at least 0 and at most 1, got 1.5" in err
    plain = tmp_path / "plain.yaml"  # an offline suite still needs its cases
    plain.write_text("name: p\nevaluators:\n  - contains: {value: x}\n")
    code, _, err = run_cli(["validate", str(plain)], capsys)
    assert code == 2 and "cases" in err


def test_a_monitor_sections_problem_names_its_file_line_and_field_as_a_suites_do(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The suite's other sections were FILE:LINE PATH, with a "did you mean"; the monitor: section's problems named
    # the file alone ("monitor: unknown key(s) quiet_secs"), and a bad redaction pattern did not say which.
    from referee.example import DATA
    from referee.suites import SuiteInvalid
    from referee.traces import check_monitor, load_monitor
    from tests.support.cli import run_cli

    head = "name: prod\nevaluators:\n  - llm_judge: {rubric: '- answers the question'}\nmonitor:\n"
    cases = [
        ("  quiet_secs: 5\n", 5, "monitor.quiet_secs: unknown key (did you mean 'quiet_seconds'?)"),
        ("  sampling:\n    rate: 0.5\n    always:\n      - {status: error}\n      - statuss: ok\n", 9,
         "monitor.sampling.always[1].statuss: unknown field (did you mean 'status'?)"),
        ("  redact:\n    patterns:\n      - 'sk-[a-z]+'\n      - 'sk-live-[A-Z'\n", 8,
         "monitor.redact.patterns[1]: redaction pattern 'sk-live-[A-Z': unterminated character set"),
        ("  redact: {hooks: x}\n", 5, "monitor.redact.hooks: unknown key (did you mean 'hook'?)"),
        ("  alerts:\n    h: 2\n    window: 1\n", 7, "monitor.alerts.window: expected a whole number from 2"),
        # a field the file does not hold: the line of the nearest one it does
        ("  threshold: .nan\n", 5, "monitor.threshold: expected a finite number"),
    ]
    for i, (body, line, message) in enumerate(cases):
        f = tmp_path / f"m{i}.yaml"
        f.write_text(head + body)
        for read in (check_monitor, load_monitor):
            with pytest.raises(SuiteInvalid) as exc:
                read(f)
            (problem,) = exc.value.problems
            assert (problem.file, problem.line) == (str(f), line), (body, problem)
            assert str(problem).startswith(f"{f}:{line} {message}"), (body, str(problem))
        code, _, err = run_cli(["validate", str(f)], capsys)
        assert code == 2 and f"{f}:{line} {message}" in err and f"{f}: 1 problem(s)" in err
    code, _, err = run_cli(["monitor", str(tmp_path / "m0.yaml"), "--replay",
                            str(DATA / "production" / "traces.otlp.jsonl"), "--once", "--provider", "standin",
                            "--store", f"sqlite:///{tmp_path / 'h.sqlite'}"], capsys)
    assert code == 2 and f"m0.yaml:5 {cases[0][2]}" in err and not (tmp_path / "h.sqlite").exists()


def test_a_redaction_hook_that_cannot_be_imported_is_named_with_its_line(tmp_path: Path) -> None:
    # `referee monitor` said "FILE:4: cannot import module ..." with the line of `monitor:` and no field, where
    # `referee validate` names monitor.redact.hook.
    from referee.suites import SuiteInvalid
    from referee.traces import load_monitor

    f = tmp_path / "m.yaml"
    for hook, message in [("no_such_module:fn", "cannot import module 'no_such_module'"),
                          ("os:no_such_fn", "module 'os' has no attribute 'no_such_fn'"),
                          ("os.path", "'os.path' is not a dotted path")]:
        f.write_text("name: prod\nevaluators:\n  - llm_judge: {rubric: '- answers'}\nmonitor:\n  redact:\n"
                     f"    hook: '{hook}'\n")
        with pytest.raises(SuiteInvalid) as exc:
            load_monitor(f)
        (problem,) = exc.value.problems
        assert problem.line == 6 and str(problem).startswith(f"{f}:6 monitor.redact.hook: {message}"), str(problem)


def test_an_export_header_the_exporter_cannot_send_is_refused_without_echoing_its_value() -> None:
    # It passed `referee validate`, and then every export failed with the SDK's message quoting the value.
    for headers, message in [({"Authorization": "Bearer SECRET\r\nX-Evil: 1"}, "headers.Authorization: its value"),
                             ({"x-api-key": " SECRET"}, "headers.x-api-key: its value"),
                             ({"bad name": "v"}, "headers.bad name: not a header name")]:
        with pytest.raises(UserError) as exc:
            MonitorConfig.parse({"export": {"endpoint": "http://127.0.0.1:4319", "headers": headers}}, [RUBRIC])
        assert message in str(exc.value) and "SECRET" not in str(exc.value)
    cfg = MonitorConfig.parse({"export": {"endpoint": "http://127.0.0.1:4319",
                                          "headers": {"Authorization": "Bearer a b", "x-honeycomb-team": ""}}}, [RUBRIC])
    assert cfg.export_headers == {"Authorization": "Bearer a b", "x-honeycomb-team": ""}


def test_a_bad_webhook_or_endpoint_is_refused_without_echoing_it() -> None:
    # An incoming webhook's URL is its credential: a mistyped one (no scheme) went into the error, and so into CI logs.
    secret = "hooks.example.com/services/T000/B000/XXXXSECRETXXXX"
    refused: list[tuple[dict[str, Any], str]] = [
        ({"alerts": {"webhook": secret}}, "text without a scheme"),
        ({"alerts": {"webhook": f"smtp://{secret}"}}, "a URL whose scheme is 'smtp'"),
        ({"export": {"endpoint": "https:///SECRETPATH"}}, "a URL without a host"),
        ({"export": {"endpoint": 42}}, "a value of type int")]
    for section, got in refused:
        with pytest.raises(UserError) as exc:
            MonitorConfig.parse(section, [RUBRIC])
        assert str(exc.value).endswith(f"expected an http:// or https:// URL with a host, got {got}")
        assert "SECRET" not in str(exc.value)


def test_an_alert_shows_the_suites_newest_offline_run_beside_it_never_as_its_reference(
        tmp_path: Path, judge: Judge, clock: Clock, fake_server: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from referee.store import Store
    from referee.traces import StoreSink, load_monitor
    from tests.support.cli import run_cli

    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    (tmp_path / "cases.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "input": f"question {i}?", "output": "WRONG" if i == 0 else f"answer {i}"}) + "\n"
        for i in range(4)))
    suite = tmp_path / "support.yaml"
    suite.write_text("name: support-bot\ncases: cases.jsonl\nevaluators:\n  - llm_judge: {rubric: '- the answer is "
                     "correct'}\nmonitor:\n  quiet_seconds: 5\n  alerts: {reference: 10, window: 10, h: 2}\n")
    other = tmp_path / "other.yaml"
    other.write_text(suite.read_text().replace("support-bot", "another-bot"))
    judge_args = ["--provider", "openai", "--model", "gpt-test", "--base-url", fake_server.url + "/v1",
                  "--store", url, "--no-gates"]
    # The suite run offline (one wrong answer in four), then another suite's run, newer, that must not be taken.
    for path in (suite, other):
        code, _, err = run_cli(["run", str(path), "-o", str(tmp_path / f"{path.stem}.jsonl"), *judge_args], capsys)
        assert code == 0, err
    config, _, _ = load_monitor(suite, clock=clock)
    assert config.suite == "support-bot"
    with Store(url) as store:
        [offline_run] = store.list_runs(suite="support-bot")
        offline_scores = [r.score for r in store.rows(offline_run.id)]
        assert len(offline_scores) == 4 and all(s is not None for s in offline_scores)
        alerts: list[str] = []
        with Collector(StoreSink(store), CollectorConfig(port=0), clock_ns=clock.ns) as c:
            mon = Monitor(c.sink, config, judge=judge, clock=clock, alert_sink=alerts.append)
            _send(c, [(f"q{i}", f"a{i}") for i in range(10)] + [(f"r{i}", f"WRONG {i}") for i in range(10)])
            clock.t += 60
            while mon.step().traces:
                pass
            assert isinstance(c.sink, StoreSink)
            stored = c.sink.alerts()
    assert alerts and mon.alerts
    first = mon.alerts[0]
    assert first.offline is not None and first.offline["run"] == offline_run.id
    assert first.offline["n"] == 4 and first.offline["mean"] == pytest.approx(sum(offline_scores) / 4)  # type: ignore[arg-type]
    assert first.offline["low"] <= first.offline["mean"] <= first.offline["high"]
    # The windows are production's alone: the reference is the first ten production scores (all right), not the
    # offline mean (which a wrong answer in four pulls down).
    assert first.reference_mean == pytest.approx(0.9) and first.reference_mean != first.offline["mean"]
    assert f"offline run {offline_run.id[:12]}" in alerts[0] and "for context, not the reference" in alerts[0]
    assert stored[0]["offline"]["run"] == offline_run.id


def test_an_alert_without_a_history_of_runs_names_no_offline_run(collector: Collector, judge: Judge,
                                                                  clock: Clock) -> None:
    alerts: list[str] = []
    cfg = MonitorConfig.parse({"quiet_seconds": 5, "alerts": {"reference": 10, "window": 10, "h": 2}}, [RUBRIC],
                              clock=clock)
    cfg.suite = "support-bot"  # no run of it is stored (or the sink keeps no runs at all)
    mon = Monitor(collector.sink, cfg, judge=judge, clock=clock, alert_sink=alerts.append)
    _send(collector, [(f"q{i}", f"a{i}") for i in range(10)] + [(f"r{i}", f"WRONG {i}") for i in range(10)])
    clock.t += 60
    while mon.step().traces:
        pass
    assert alerts and mon.alerts[0].offline is None and "offline" not in alerts[0]
    assert mon.last_error is None


def test_an_alert_goes_to_the_referee_logger_by_default_never_printed(
        collector: Collector, judge: Judge, clock: Clock, caplog: pytest.LogCaptureFixture,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Library code never prints: without an ``alert_sink`` an alert is a warning of the ``referee`` loggers,
    which the CLI shows as a ``referee:`` line on stderr and a program routes where it wants."""
    cfg = MonitorConfig.parse({"quiet_seconds": 5, "alerts": {"reference": 10, "window": 10, "h": 2}}, [RUBRIC],
                              clock=clock)
    mon = Monitor(collector.sink, cfg, judge=judge, clock=clock)
    _send(collector, [(f"q{i}", f"a{i}") for i in range(10)] + [(f"r{i}", f"WRONG {i}") for i in range(10)])
    clock.t += 60
    with caplog.at_level(logging.WARNING, logger="referee"):
        while mon.step().traces:
            pass
    said = [r for r in caplog.records if r.name == "referee.traces._monitor"]
    assert mon.alerts and [r.getMessage() for r in said] == [a.message() for a in mon.alerts]
    assert capsys.readouterr().err == ""


def test_a_pass_is_kept_until_the_next_pass_with_traces_and_no_longer(collector: Collector, judge: Judge,
                                                                     clock: Clock,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A pass's cases and rows stay alive until the next pass that has traces (a `--once` run then ends without
    freeing them), never longer: memory holds one pass."""
    import gc
    import weakref

    made: list[weakref.ref[Any]] = []
    units = Monitor._units

    def spy(self: Monitor, *a: Any) -> Any:
        got = units(self, *a)
        made.extend(weakref.ref(u) for u in got)
        return got

    monkeypatch.setattr(Monitor, "_units", spy)
    mon = Monitor(collector.sink, MonitorConfig.parse({"quiet_seconds": 5}, [RUBRIC], clock=clock), judge=judge,
                  clock=clock)
    _send(collector, [("q1", "a1"), ("q2", "a2")])
    clock.t += 10
    assert mon.step().scored == 2
    first = made[:]
    gc.collect()
    assert len(first) == 2 and all(r() is not None for r in first)
    clock.t += 10
    assert mon.step().traces == 0  # an empty pass keeps them
    gc.collect()
    assert all(r() is not None for r in first)
    _send(collector, [("q3", "a3")])
    clock.t += 10
    assert mon.step().scored == 1
    gc.collect()
    assert all(r() is None for r in first) and all(r() is not None for r in made[2:])


def test_scores_are_stored_in_the_order_the_traces_began_whatever_order_they_were_judged_in(
        make_sink: SinkFactory, judge: Judge, clock: Clock) -> None:
    """Traces that arrived (and are judged, one at a time) in the reverse of the order they began: their scores,
    made as each answer arrives, are stored in the order the traces began, the drift statistic's order, and a
    restart reads them back in that order."""
    sink = make_sink()
    for i in range(1, 7):  # trace 1 arrives first (and has the lowest id) but began last
        sink.add_spans([dataclasses.replace(_chat_trace(i), start_ns=100 - i, end_ns=101 - i)],
                       received_ns=clock.ns() + i)
    clock.t += 60
    cfg = MonitorConfig.parse({"quiet_seconds": 5}, [RUBRIC], clock=clock)
    mon = Monitor(sink, cfg, judge=dataclasses.replace(judge, concurrency=1), clock=clock)
    judged: list[str] = []
    arrived = Monitor._evaluate

    def spy(self: Monitor, units: Any, *a: Any) -> Any:
        def taking() -> Any:
            for u in units:
                judged.append(u.trace_id)
                yield u
        return arrived(self, taking(), *a)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Monitor, "_evaluate", spy)
        assert mon.step().scored == 6
    began = [f"{i:032x}" for i in range(6, 0, -1)]
    assert judged == began[::-1]
    assert [s.trace_id for s in sink.scores()] == began
    assert [s.trace_id for s in sorted(sink.scores(), key=lambda s: s.at_ns)] == began  # as a restart reads them
