"""Traces in the run-history store, on SQLite and PostgreSQL: spans once each, the cap per trace, quiet traces,
one score per (trace, evaluator), the export mark, counts and alerts, the traces with an error span (and
``traces_to_cases``'s selection of them, as the memory sink does it); a second process (another Store on the same
database) sees what the first wrote."""

from __future__ import annotations

import logging

import pytest

from referee.store import Store
from referee.traces import Alert, Score, SpanRecord, StoreSink


def _span(trace: str, span: str, *, parent: str | None = None, attrs: dict[str, object] | None = None,
          status: int = 2) -> SpanRecord:
    return SpanRecord(trace_id=trace, span_id=span, parent_span_id=parent, name="chat m", start_ns=int(span, 16),
                      end_ns=int(span, 16) + 5, service="svc", status_code=status, status_message="boom",
                      attributes=attrs if attrs is not None else {"gen_ai.operation.name": "chat", "n": 1.5})


T1, T2 = "a" * 32, "b" * 32


def test_spans_are_stored_once_and_read_back_whole(trace_store: Store) -> None:
    sink = StoreSink(trace_store, max_spans_per_trace=3)
    added = sink.add_spans([_span(T1, "0000000000000001"), _span(T1, "0000000000000002", parent="01" * 8),
                            _span(T1, "0000000000000002")], received_ns=10)
    assert (added.stored, added.duplicates) == (2, 1)
    again = sink.add_spans([_span(T1, "0000000000000001"), _span(T1, "0000000000000003"),
                            _span(T1, "0000000000000004")], received_ns=20)
    assert (again.stored, again.duplicates, again.over_trace_cap) == (1, 1, 1)
    assert sink.trace_truncated(T1)
    spans = sorted(sink.trace_spans(T1), key=lambda s: s["spanId"])
    assert [s["spanId"] for s in spans] == ["0000000000000001", "0000000000000002", "0000000000000003"]
    assert spans[1]["parentSpanId"] == "01" * 8
    assert spans[0]["attributes"] == {"gen_ai.operation.name": "chat", "n": 1.5}
    assert spans[0]["status"] == {"code": 2, "message": "boom"} and spans[0]["service"] == "svc"


def test_quiet_traces_are_those_without_a_recent_span(trace_store: Store) -> None:
    sink = StoreSink(trace_store)
    sink.add_spans([_span(T1, "0000000000000001")], received_ns=100)
    sink.add_spans([_span(T2, "0000000000000001")], received_ns=200)
    assert sink.quiet_traces(before_ns=150, limit=10) == [T1]
    assert sink.quiet_traces(before_ns=250, limit=10) == [T1, T2]
    sink.add_spans([_span(T1, "0000000000000002")], received_ns=300)  # a late span keeps the trace open
    assert sink.quiet_traces(before_ns=250, limit=10) == [T2]
    sink.mark_trace(T2, "scored")
    assert sink.quiet_traces(before_ns=1000, limit=10) == [T1]


def test_one_score_per_trace_and_evaluator_and_the_export_mark(trace_store: Store) -> None:
    sink = StoreSink(trace_store)
    sink.add_spans([_span(T1, "0000000000000001")], received_ns=1)
    s = Score(trace_id=T1, span_id="0000000000000001", evaluator="faithfulness", status="scored", score=0.4,
              passed=False, explanation="claim 2 unsupported", at_ns=5)
    assert sink.record_score(s) is True
    assert sink.record_score(Score(trace_id=T1, span_id="x", evaluator="faithfulness", status="scored",
                                   score=0.9, passed=True, at_ns=6)) is False
    other = StoreSink(Store(trace_store.url))  # another process on the same database
    [got] = other.scores()
    assert (got.score, got.passed, got.span_id, got.explanation) == (0.4, False, "0000000000000001",
                                                                     "claim 2 unsupported")
    assert other.scored_units(T1) == {("", "faithfulness")}
    assert [x.evaluator for x in other.unexported(10)] == ["faithfulness"]
    other.mark_exported([got])
    assert sink.unexported(10) == []
    other.store.close()


def test_counts_add_up_and_alerts_are_kept(trace_store: Store) -> None:
    sink = StoreSink(trace_store)
    sink.count("skipped: sampled_out", 3)
    sink.count("skipped: sampled_out", 2)
    sink.count("no_convention")
    assert sink.counts() == {"skipped: sampled_out": 5, "no_convention": 1}
    sink.record_alert(Alert(metric="faithfulness", reference_mean=0.8, reference_n=200, window_mean=0.5,
                            window_n=20, effect=-0.3, low=-0.5, high=-0.1, examples=[T1]))
    [a] = sink.alerts()
    assert a["metric"] == "faithfulness" and a["examples"] == [T1]


def test_retention_prunes_by_age_and_by_count(trace_store: Store) -> None:
    sink = StoreSink(trace_store)
    for i, tid in enumerate(["1" * 32, "2" * 32, "3" * 32, "4" * 32]):
        sink.add_spans([_span(tid, "0000000000000001")], received_ns=100 * (i + 1))
    sink.record_score(Score(trace_id="1" * 32, span_id="", evaluator="m", status="scored", score=1.0, at_ns=1))
    assert sink.prune(older_than_ns=150) == 1  # the first trace, its span and its score
    assert sink.trace_spans("1" * 32) == [] and sink.scores() == []
    assert sink.prune(max_traces=2) == 1  # the oldest left
    assert sink.quiet_traces(before_ns=10**9, limit=10) == ["3" * 32, "4" * 32]
    assert sink.counts()["pruned"] == 2


def test_recent_traces_are_the_last_to_arrive_scored_or_not(trace_store: Store) -> None:
    from referee.traces import MemorySink

    T3 = "c" * 32
    for sink in (StoreSink(trace_store), MemorySink()):
        sink.add_spans([_span(T1, "0000000000000001")], received_ns=100)
        sink.add_spans([_span(T2, "0000000000000001")], received_ns=200)
        sink.add_spans([_span(T3, "0000000000000001")], received_ns=300)
        sink.add_spans([_span(T1, "0000000000000002")], received_ns=400)  # a late span: T1 arrived last
        sink.mark_trace(T2, "scored")
        assert sink.recent_traces(2) == [T3, T1]
        assert sink.recent_traces(10) == [T2, T3, T1]
        assert sink.recent_traces(0) == []


def test_traces_with_an_error_span_are_selected_as_cases(trace_store: Store) -> None:
    from referee.traces import MemorySink, traces_to_cases

    T3, T4 = "c" * 32, "d" * 32
    asked: dict[str, object] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": '[{"role": "user", "parts": [{"type": "text", "content": "why?"}]}]'}
    for sink in (StoreSink(trace_store), MemorySink()):
        sink.add_spans([_span(T1, "0000000000000001", attrs=asked, status=1),
                        _span(T1, "0000000000000002", attrs=asked, status=2)], received_ns=100)
        sink.add_spans([_span(T2, "0000000000000001", attrs=asked, status=0)], received_ns=200)
        sink.add_spans([_span(T3, "0000000000000001", attrs=asked, status=1)], received_ns=300)
        sink.add_spans([_span(T3, "0000000000000002", attrs=asked, status=2)], received_ns=400)  # fails later
        sink.add_spans([_span(T4, "0000000000000001", attrs=asked, status=1)], received_ns=500)
        assert sink.error_traces() == [T1, T3], type(sink).__name__
        cases = traces_to_cases(sink, errors=True)
        assert [c["metadata"]["trace_id"] for c in cases] == [T1, T3] and cases[0]["input"] == "why?"
        assert traces_to_cases(sink) == []  # nothing selected
        # The selections add up, each trace once: a named trace, then the error ones.
        both = traces_to_cases(sink, trace_ids=[T4, T1], errors=True)
        assert [c["metadata"]["trace_id"] for c in both] == [T4, T1, T3]


def test_a_trace_that_makes_no_case_is_logged_never_printed(
        caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]) -> None:
    """Library code never prints: a program calling ``traces_to_cases`` decides where the skip is said."""
    from referee.traces import MemorySink, traces_to_cases

    sink = MemorySink()
    sink.add_spans([_span(T1, "0000000000000001", attrs={"http.route": "/x"})], received_ns=100)
    with caplog.at_level(logging.WARNING, logger="referee"):
        assert traces_to_cases(sink, trace_ids=[T1]) == []
    assert [r.name for r in caplog.records] == ["referee.traces._files"]
    assert caplog.records[0].getMessage().startswith(f"skipped trace {T1}: ")
    assert capsys.readouterr().err == ""
