"""The store's face for production traces: spans in once, the listing's filters and paging, scores by trace,
alerts with their time (SQLite here; tests/traces runs the same writes on PostgreSQL through the sink)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from referee.store import SpansWritten, Store, TraceScore, TraceStore
from referee.traces import SpanRecord


def _span(tid: str, sid: str, service: str) -> SpanRecord:
    return SpanRecord(trace_id=tid, span_id=sid, parent_span_id=None, name="chat m", start_ns=1, end_ns=2,
                      service=service, attributes={"gen_ai.operation.name": "chat"})


@pytest.fixture
def ts(tmp_path: Path) -> Iterator[TraceStore]:
    with Store(f"sqlite:///{tmp_path / 'h.sqlite'}") as st:
        yield TraceStore(st, max_spans_per_trace=2)


def test_spans_are_written_once_and_cut_at_the_cap(ts: TraceStore) -> None:
    a = "a" * 32
    got = ts.add_spans([_span(a, "1" * 16, "s"), _span(a, "1" * 16, "s"), _span(a, "2" * 16, "s")], received_ns=10)
    assert got == SpansWritten(stored=2, duplicates=1, over_trace_cap=0)
    assert ts.add_spans([_span(a, "3" * 16, "s"), _span(a, "2" * 16, "s")], received_ns=20) == SpansWritten(0, 1, 1)
    tr = ts.get_trace(a)
    assert tr is not None and tr.span_count == 2 and tr.truncated and tr.last_ns == 20 and tr.state == "open"
    assert ts.get_trace("b" * 32) is None


def test_the_listing_filters_pages_and_names_its_choices(ts: TraceStore) -> None:
    ids = [f"{i:032x}" for i in range(6)]
    for i, tid in enumerate(ids):
        ts.add_spans([_span(tid, "1" * 16, "web" if i % 2 else "api")], received_ns=100 * (i + 1))
    ts.mark_trace(ids[0], "sampled_out")
    assert [t.id for t in ts.list_traces()] == ids[::-1]  # newest arrival first
    assert [t.id for t in ts.list_traces(service="web")] == [ids[5], ids[3], ids[1]]
    assert [t.id for t in ts.list_traces(state="sampled_out")] == [ids[0]]
    assert [t.id for t in ts.list_traces(since_ns=300, until_ns=500)] == [ids[3], ids[2]]  # until excluded
    assert [t.id for t in ts.list_traces(limit=2, offset=2)] == [ids[3], ids[2]]
    ts.record_score(TraceScore(trace_id=ids[1], span_id="1" * 16, evaluator="m", status="scored", score=0.5))
    assert ts.trace_facets() == {"services": ["api", "web"], "states": ["open", "sampled_out"], "evaluators": ["m"]}


def test_scores_by_trace_and_alerts_with_their_time(ts: TraceStore) -> None:
    a, b = "a" * 32, "b" * 32
    for tid in (a, b):
        ts.add_spans([_span(tid, "1" * 16, "s")], received_ns=1)
    assert ts.record_score(TraceScore(trace_id=a, span_id="1" * 16, evaluator="m", status="scored", score=1.0))
    assert not ts.record_score(TraceScore(trace_id=a, span_id="1" * 16, evaluator="m", status="scored", score=0.0))
    ts.record_score(TraceScore(trace_id=b, span_id="1" * 16, evaluator="m", status="unscored", error_type="x"))
    assert [(s.trace_id, s.score) for s in ts.scores(trace_id=a)] == [(a, 1.0)]  # the first one kept
    assert {s.trace_id for s in ts.scores(trace_ids=[a, b])} == {a, b}
    assert ts.scores(trace_ids=[]) == []
    ts.record_alert({"metric": "m", "examples": [a]})
    [alert] = ts.alerts()
    assert alert["metric"] == "m" and alert["examples"] == [a] and alert["at_ns"] > 0


def test_the_newest_scores_and_their_count(ts: TraceStore) -> None:
    ids = [f"{i:032x}" for i in range(5)]
    for i, tid in enumerate(ids):
        ts.add_spans([_span(tid, "1" * 16, "s")], received_ns=1)
        ts.record_score(TraceScore(trace_id=tid, span_id="1" * 16, evaluator="m",
                                   status="scored" if i != 2 else "unscored", score=i / 10, at_ns=100 + i))
    assert [s.trace_id for s in ts.scores(evaluator="m", last=2)] == ids[3:]  # oldest first
    assert len(ts.scores(evaluator="m", last=10)) == 5
    assert ts.count_scores(evaluator="m") == 5 and ts.count_scores(evaluator="m", status="scored") == 4
    assert ts.count_scores(evaluator="other") == 0


def test_score_values_are_the_newest_scored_ones(ts: TraceStore) -> None:
    for i in range(4):
        tid = f"{i:032x}"
        ts.add_spans([_span(tid, "1" * 16, "s")], received_ns=1)
        ts.record_score(TraceScore(trace_id=tid, span_id="1" * 16, evaluator="m",
                                   status="scored" if i != 3 else "error", score=i / 10 if i != 3 else None,
                                   at_ns=10 + i))
    assert ts.score_values("m", last=2) == [(11, 0.1), (12, 0.2)]  # the error has no score: not drawn
    assert ts.score_values("other", last=5) == []


def test_dropping_a_traces_spans_keeps_its_row(ts: TraceStore) -> None:
    a, b = "a" * 32, "b" * 32
    ts.add_spans([_span(a, "1" * 16, "s"), _span(a, "2" * 16, "s"), _span(b, "1" * 16, "s")], received_ns=1)
    ts.mark_trace(a, "sampled_out")
    assert ts.drop_spans(a) == 2 and ts.drop_spans(a) == 0
    tr = ts.get_trace(a)
    assert tr is not None and tr.state == "sampled_out" and tr.span_count == 0 and ts.trace_spans(a) == []
    assert len(ts.trace_spans(b)) == 1  # another trace's spans are left alone
