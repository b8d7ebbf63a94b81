"""Decoded spans into a trace sink: sampling at ingest, the conventions' filter, the redaction hook, the counts.
The receiver (``referee collect``) and ``referee monitor --replay`` both go through here; replaying recorded files
loads no HTTP server."""

from __future__ import annotations

from ..trajectories import follows_convention
from ._otlp import Decoded
from ._redact import RedactionHookError, RedactionTimeout, Redactor
from ._sampler import trace_fraction
from ._sink import Added, TraceSink

DEFAULT_MAX_DECODED_BYTES = 64 << 20
"""A body's bound once decompressed (the receiver's; a recorded file's, replayed)."""


def ingest(sink: TraceSink, decoded: Decoded, redactor: Redactor, *, received_ns: int,
           sample_rate: float | None = None) -> Added:
    """Decoded spans into the sink: with ``sample_rate``, the spans of traces not sampled (by the hash of the trace
    id, so every span of a trace gets the same decision with nothing remembered) counted and not stored; spans
    with neither convention counted and skipped, the redaction hook applied before anything is stored, rejections
    and spans over their trace's cap counted. The receiver and ``referee monitor --replay`` (recorded OTLP files)
    both go through here."""
    kept = []
    spans = decoded.spans
    if sample_rate is not None and sample_rate < 1.0:
        decided: dict[str, bool] = {}
        sampled = []
        out_spans = out_traces = 0
        for span in spans:
            keep = decided.get(span.trace_id)
            if keep is None:
                keep = decided[span.trace_id] = trace_fraction(span.trace_id) < sample_rate
            if keep:
                sampled.append(span)
            else:
                out_spans += 1
                out_traces += not span.parent_span_id  # a trace is counted once, by its root span
        if out_spans:
            sink.count("not stored: sampled_out (spans)", out_spans)
            sink.count("not stored: sampled_out (traces)", out_traces)
        spans = sampled
    for span in spans:
        if not follows_convention(span.attributes):
            sink.count("no_convention")
            continue
        try:
            red = redactor.apply(span)
        except RedactionTimeout:
            sink.count("not stored: redaction_timeout")
            continue
        except RedactionHookError:
            sink.count("not stored: redaction_hook_error")
            continue
        if red is None:
            sink.count("redacted_out")
            continue
        kept.append(red)
    added = sink.add_spans(kept, received_ns=received_ns)
    for reason, n in decoded.reasons.items():
        sink.count(f"rejected: {reason}", n)
    if added.over_trace_cap:
        sink.count("over_trace_cap", added.over_trace_cap)
    return added
