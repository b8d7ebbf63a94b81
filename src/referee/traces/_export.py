"""Scores back out: each stored score as the GenAI ``gen_ai.evaluation.result`` event, an OTLP log record carrying
the evaluated span's trace and span ids, sent with the OpenTelemetry SDK's own OTLP/HTTP log exporter to the
collector the user names.

Delivery is at-least-once: a score is marked exported only after the exporter reports success, so a failure or
a crash in between sends it again on the next pass (a receiver may see a score twice, never miss one).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import MissingExtraError
from . import _conventions as conv
from ._sink import Score

MAX_EXPLANATION_CHARS = 2000


def evaluation_attributes(score: Score) -> dict[str, Any]:
    """The event's attributes: a scored case carries its value and label; one that was not scored carries
    ``error.type`` and no score (never a made-up number)."""
    attrs: dict[str, Any] = {conv.EVALUATION_NAME: score.evaluator}
    if score.status == "scored" and score.score is not None:
        attrs[conv.SCORE_VALUE] = float(score.score)
        if score.passed is not None:
            attrs[conv.SCORE_LABEL] = "pass" if score.passed else "fail"
    else:
        attrs[conv.ERROR_TYPE] = score.error_type or score.status
    if score.explanation:
        attrs[conv.EXPLANATION] = score.explanation[:MAX_EXPLANATION_CHARS]
    return attrs


class EvaluationExporter:
    """Sends scores to ``endpoint`` (an OTLP/HTTP base URL such as ``http://127.0.0.1:4318``, or a full
    ``.../v1/logs`` URL) with ``headers`` (e.g. an ``Authorization``) and a per-request ``timeout``."""

    def __init__(self, endpoint: str, *, headers: dict[str, str] | None = None, timeout: float = 10.0,
                 service_name: str = "referee-monitor") -> None:
        try:
            from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
            from opentelemetry.sdk.resources import Resource
        except ImportError as exc:  # pragma: no cover - installed with the traces extra
            raise MissingExtraError("traces", "opentelemetry-exporter-otlp-proto-http",
                                    "Exporting evaluation results") from exc
        url = endpoint.rstrip("/")
        if not url.endswith("/v1/logs"):
            url += "/v1/logs"
        self.endpoint = url
        self._exporter = OTLPLogExporter(endpoint=url, headers=headers, timeout=timeout)
        self._resource = Resource.create({"service.name": service_name})

    def _record(self, score: Score) -> Any:
        from opentelemetry import trace
        from opentelemetry._logs import LogRecord
        from opentelemetry.sdk._logs import ReadWriteLogRecord
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope

        ctx = trace.set_span_in_context(trace.NonRecordingSpan(trace.SpanContext(
            trace_id=int(score.trace_id, 16), span_id=int(score.span_id, 16), is_remote=True,
            trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED))))
        record = LogRecord(timestamp=score.at_ns or None, context=ctx, event_name=conv.EVALUATION_EVENT,
                           attributes=evaluation_attributes(score))
        return ReadWriteLogRecord(record, resource=self._resource,
                                  instrumentation_scope=InstrumentationScope("referee.traces"))

    def export(self, scores: Sequence[Score]) -> bool:
        """True when the collector accepted every record (the caller then marks them exported)."""
        if not scores:
            return True
        from opentelemetry.sdk._logs.export import LogRecordExportResult

        return bool(self._exporter.export([self._record(s) for s in scores]) == LogRecordExportResult.SUCCESS)

    def shutdown(self) -> None:
        self._exporter.shutdown()
