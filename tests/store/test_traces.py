"""The store's face for production traces: spans in once, the listing's filters and paging, scores by trace,
alerts with their time (SQLite here; tests/traces runs the same writes on PostgreSQL through the sink). A trace
with an error span is marked as its spans arrive and listed by that mark, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from referee.store import SpansWritten, Store, TraceScore, TraceStore
from referee.traces import SpanRecord


def _span(tid: str, sid: str, service: str, status: int = 0) -> SpanRecord:
    return SpanRecord(trace_id=tid, span_id=sid, parent_span_id=None, name="chat m", start_ns=1, end_ns=2,
                      service=service, status_code=status, status_message="boom" if status == 2 else "",
                      attributes={"gen_ai.operation.name": "chat"})


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


def test_a_damaged_span_text_names_its_trace_and_span(ts: TraceStore) -> None:
    # A store file from elsewhere whose span body is not what its packing says: a StoreError naming the store,
    # the trace and the span, not a crash deep in a decompressor.
    from sqlalchemy import update

    from referee.store import StoreError
    from referee.store import _schema as schema

    a = "a" * 32
    ts.add_spans([_span(a, "1" * 16, "s")], received_ns=10)
    with ts.store.engine.begin() as conn:
        h = conn.execute(schema.spans.select().where(schema.spans.c.trace_id == a)).mappings().one()["attrs"]
        conn.execute(update(schema.texts).where(schema.texts.c.hash == h).values(packed=2, data=b"not a frame"))
    with pytest.raises(StoreError, match=f"trace {a}, span {'1' * 16}: a stored text is not a Zstandard frame"):
        ts.trace_spans(a)


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


# -- traces with an error span (OpenTelemetry status code 2), on SQLite and PostgreSQL ------------------------------
A, B, C, D, E = ("a" * 32, "b" * 32, "c" * 32, "d" * 32, "e" * 32)


@pytest.fixture
def both(store_url: str) -> Iterator[TraceStore]:
    with Store(store_url) as st:
        yield TraceStore(st, max_spans_per_trace=3)


def _error(ts: TraceStore, tid: str) -> bool:
    tr = ts.get_trace(tid)
    assert tr is not None, tid
    return tr.error


def test_a_new_trace_with_an_error_span_is_marked_and_one_without_is_not(both: TraceStore) -> None:
    got = both.add_spans([_span(A, "1" * 16, "s", 1), _span(A, "2" * 16, "s", 2), _span(B, "1" * 16, "s", 1),
                          _span(B, "2" * 16, "s", 0)], received_ns=10)
    assert got == SpansWritten(stored=4)
    assert _error(both, A) is True and _error(both, B) is False
    # Status codes other than 2 (unset 0, OK 1) are not errors; only 2 is.
    both.add_spans([_span(C, "1" * 16, "s", 1)], received_ns=11)
    assert _error(both, C) is False


def test_a_trace_turns_error_when_a_later_span_fails_and_never_back(both: TraceStore) -> None:
    both.add_spans([_span(A, "1" * 16, "s")], received_ns=10)
    assert _error(both, A) is False
    both.add_spans([_span(A, "2" * 16, "s", 2)], received_ns=20)
    assert _error(both, A) is True
    both.add_spans([_span(A, "3" * 16, "s", 1)], received_ns=30)  # a later OK span does not clear it
    tr = both.get_trace(A)
    assert tr is not None and tr.error and tr.span_count == 3 and tr.last_ns == 30
    assert both.drop_spans(A) == 3 and _error(both, A) is True  # a trace whose spans were dropped still failed


def test_an_error_span_not_stored_does_not_mark_the_trace(both: TraceStore) -> None:
    # The cap is 3 spans: the fourth (an error) is counted over the cap, not stored, so the trace is not an error.
    both.add_spans([_span(A, f"{i:016x}", "s") for i in range(1, 4)], received_ns=10)
    got = both.add_spans([_span(A, "f" * 16, "s", 2)], received_ns=20)
    assert got == SpansWritten(over_trace_cap=1)
    tr = both.get_trace(A)
    assert tr is not None and tr.truncated and not tr.error
    # A retry of an error span already stored is a duplicate: the trace stays marked.
    both.add_spans([_span(B, "1" * 16, "s", 2)], received_ns=30)
    assert both.add_spans([_span(B, "1" * 16, "s", 2)], received_ns=40) == SpansWritten(duplicates=1)
    assert _error(both, B) is True


def test_the_listing_filters_on_an_error_span(both: TraceStore) -> None:
    for i, (tid, status, service) in enumerate([(A, 2, "web"), (B, 0, "web"), (C, 2, "api"), (D, 1, "api")]):
        both.add_spans([_span(tid, "1" * 16, service, status)], received_ns=100 * (i + 1))
    both.add_spans([_span(E, "1" * 16, "web")], received_ns=500)
    both.add_spans([_span(E, "2" * 16, "web", 2)], received_ns=600)  # turns error on its second request
    assert [t.id for t in both.list_traces(error=True)] == [E, C, A]  # newest arrival first
    assert [t.id for t in both.list_traces(error=False)] == [D, B]
    assert [t.id for t in both.list_traces()] == [E, D, C, B, A]  # None: no filter
    assert [t.id for t in both.list_traces(error=True, service="web")] == [E, A]
    assert [t.id for t in both.list_traces(error=True, since_ns=200, until_ns=600)] == [C]
    assert [t.id for t in both.list_traces(error=True, limit=1, offset=1)] == [C]
    assert {t.id: t.error for t in both.list_traces()} == {A: True, B: False, C: True, D: False, E: True}
    assert both.error_traces() == [A, C, E]  # oldest arrival first, as recent_traces
    # Bounds past what a stored time or count can be (year 1, year 9999, 10**30) are bounds, not an OverflowError.
    big = 10**30
    assert [t.id for t in both.list_traces(since_ns=-big, until_ns=big)] == [E, D, C, B, A]
    assert both.list_traces(offset=big) == [] and both.list_traces(since_ns=big) == []
    assert both.quiet_traces(before_ns=big, limit=big) == [A, B, C, D, E]
    assert both.prune(older_than_ns=-big) == 0


def _statements(ts: TraceStore) -> list[str]:
    seen: list[str] = []

    def note(_conn: Any, _cursor: Any, statement: str, *_a: Any) -> None:
        seen.append(statement.split()[0].upper())

    event.listen(ts.store.engine, "before_cursor_execute", note)
    return seen


def test_marking_costs_no_statement_per_span(both: TraceStore) -> None:
    # A request of 40 new traces of 3 spans each costs the same statements whether its spans failed or not...
    both.add_spans([_span("f" * 32, "1" * 16, "s")], received_ns=0)  # the connection's one-off settings
    seen = _statements(both)
    both.add_spans([_span(f"{i:032x}", f"{j:016x}", "s") for i in range(40) for j in range(1, 4)], received_ns=1)
    plain = list(seen)
    seen.clear()
    both.add_spans([_span(f"{i:032x}", f"{j:016x}", "s", 2 if j == 2 else 0) for i in range(40, 80)
                    for j in range(1, 4)], received_ns=2)
    assert seen == plain and len(both.list_traces(error=True, limit=1000)) == 40
    # ... and so does a request growing existing traces, each turning error (the update it makes anyway).
    grown = [f"{i:032x}" for i in range(100, 110)]
    both.add_spans([_span(tid, "1" * 16, "s") for tid in grown], received_ns=3)
    seen.clear()
    both.add_spans([_span(tid, "2" * 16, "s") for tid in grown], received_ns=4)
    grown_plain = list(seen)
    seen.clear()
    both.add_spans([_span(tid, "3" * 16, "s", 2) for tid in grown], received_ns=5)
    assert seen == grown_plain
    assert all(_error(both, tid) for tid in grown)


def test_a_request_that_lost_the_race_to_create_a_trace_still_marks_it(both: TraceStore) -> None:
    """Two requests creating one trace at once (PostgreSQL's READ COMMITTED): the first writer's row stays, and the
    loser's error span still marks it. Written here as the loser's insert of a row that is already there."""
    from referee.store._traces import _insert_new_traces

    both.add_spans([_span(A, "1" * 16, "first")], received_ns=10)
    st = both.store
    row = {"id": A, "service": "second", "last_ns": 20, "state": "open", "span_count": 1, "truncated": False}
    with st.engine.begin() as conn:
        st._many(conn, "traces", _insert_new_traces, [{**row, "error": False}])
    assert _error(both, A) is False
    with st.engine.begin() as conn:
        st._many(conn, "traces", _insert_new_traces, [{**row, "error": True}])
    tr = both.get_trace(A)
    assert tr is not None and tr.error and tr.service == "first" and tr.last_ns == 10  # the first writer's row
