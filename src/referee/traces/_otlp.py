"""OTLP/HTTP trace bodies -> span records, with the maintained ``opentelemetry-proto`` messages.

Both encodings go through one decoder: a protobuf body is parsed as ``ExportTraceServiceRequest``; an OTLP/JSON
body has its ids checked (OTLP/JSON writes them as hex, 32 digits for a trace id and 16 for a span id, unlike
proto3 JSON's base64) and converted before ``json_format`` parses it into the same message. Bounds are checked
per span: a span over ``max_span_bytes`` or with an attribute value over ``max_attribute_bytes`` is rejected
(counted in the partial-success reply), never cut silently.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import MissingExtraError, RefereeError

_HEX = re.compile(r"^[0-9a-fA-F]*$")

DEFAULT_MAX_SPAN_BYTES = 1 << 20
"""A span's encoded size above which it is rejected (1 MiB)."""
DEFAULT_MAX_ATTRIBUTE_BYTES = 256 << 10
"""An attribute value's size above which its span is rejected (256 KiB)."""


class OTLPDecodeError(RefereeError, ValueError):
    """A body that is not a valid OTLP export request: the whole request is refused (HTTP 400)."""


def _proto() -> Any:
    try:
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
    except ImportError as exc:  # pragma: no cover - the extra is installed by scripts/setup and scripts/test
        raise MissingExtraError("traces", "opentelemetry-proto", "Receiving OTLP traces") from exc
    return trace_service_pb2


@dataclass
class SpanRecord:
    """One received span, in the plain shape the trajectory mapping reads (``attributes`` a plain dict)."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    start_ns: int
    end_ns: int
    service: str | None = None
    status_code: int = 0
    status_message: str = ""
    attributes: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The span as the trajectory mapping and the store read it."""
        return {
            "traceId": self.trace_id, "spanId": self.span_id, "parentSpanId": self.parent_span_id,
            "name": self.name, "startTimeUnixNano": self.start_ns, "endTimeUnixNano": self.end_ns,
            "service": self.service, "status": {"code": self.status_code, "message": self.status_message},
            "attributes": self.attributes,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SpanRecord:
        status = d.get("status") or {}
        return cls(trace_id=d["traceId"], span_id=d["spanId"], parent_span_id=d.get("parentSpanId"),
                   name=d.get("name", ""), start_ns=int(d.get("startTimeUnixNano") or 0),
                   end_ns=int(d.get("endTimeUnixNano") or 0), service=d.get("service"),
                   status_code=int(status.get("code") or 0), status_message=status.get("message") or "",
                   attributes=dict(d.get("attributes") or {}))


@dataclass
class Decoded:
    """The spans accepted from one request and what was rejected (the partial-success reply)."""

    spans: list[SpanRecord] = field(default_factory=list)
    rejected: int = 0
    reasons: dict[str, int] = field(default_factory=dict)

    def reject(self, reason: str) -> None:
        self.rejected += 1
        self.reasons[reason] = self.reasons.get(reason, 0) + 1

    @property
    def error_message(self) -> str:
        return "; ".join(f"{n} span(s) {reason}" for reason, n in sorted(self.reasons.items()))


def _value(v: Any) -> Any:
    """A protobuf ``AnyValue`` as a plain value; a non-finite double is refused (None)."""
    kind = v.WhichOneof("value")
    if kind == "string_value":  # most attributes: read first
        return v.string_value
    if kind is None:
        return None
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return base64.b64encode(v.bytes_value).decode("ascii")
    out = getattr(v, kind)
    if isinstance(out, float) and not math.isfinite(out):
        return None
    return out


def _too_big(value: Any, limit: int) -> bool:
    if isinstance(value, str):
        return len(value) > limit and len(value.encode("utf-8")) > limit
    if isinstance(value, list | dict):
        return len(json.dumps(value, default=str)) > limit
    return False


_NO_TRACE, _NO_SPAN = bytes(16), bytes(8)


def _from_message(req: Any, *, max_span_bytes: int, max_attribute_bytes: int, body_bytes: int | None = None) -> Decoded:
    """``body_bytes``: the protobuf body's size; a span is a part of it, so none can be larger when it fits."""
    out = Decoded()
    check_size = body_bytes is None or body_bytes > max_span_bytes
    accepted = out.spans
    for rs in req.resource_spans:
        service = None
        for kv in rs.resource.attributes:
            if kv.key == "service.name":
                service = str(_value(kv.value))
        for ss in rs.scope_spans:
            for sp in ss.spans:
                trace_id, span_id = sp.trace_id, sp.span_id
                if len(trace_id) != 16 or len(span_id) != 8 or trace_id == _NO_TRACE or span_id == _NO_SPAN:
                    out.reject("with an invalid trace or span id")
                    continue
                if check_size and sp.ByteSize() > max_span_bytes:
                    out.reject(f"over {max_span_bytes} bytes")
                    continue
                attrs = {}
                too_big = False
                for kv in sp.attributes:
                    value = attrs[kv.key] = _value(kv.value)
                    # A string's characters never outnumber its UTF-8 bytes: only a long one needs encoding.
                    if (len(value) > max_attribute_bytes if type(value) is str else  # noqa: E721 - exact type
                            isinstance(value, list | dict)) and _too_big(value, max_attribute_bytes):
                        too_big = True
                if too_big:
                    out.reject(f"with an attribute value over {max_attribute_bytes} bytes")
                    continue
                parent = sp.parent_span_id
                status = sp.status
                accepted.append(SpanRecord(
                    trace_id=trace_id.hex(), span_id=span_id.hex(),
                    parent_span_id=parent.hex() if len(parent) == 8 else None,
                    name=sp.name, start_ns=sp.start_time_unix_nano, end_ns=sp.end_time_unix_nano,
                    service=service, status_code=int(status.code), status_message=status.message,
                    attributes=attrs,
                ))
    return out


def _hex_id(value: Any, digits: int, what: str) -> str:
    if not isinstance(value, str) or not _HEX.match(value):
        raise OTLPDecodeError(f"{what} must be hex text (OTLP/JSON), got {str(value)[:40]!r}")
    if value and len(value) != digits:
        raise OTLPDecodeError(f"{what} must have {digits} hex digits, got {len(value)}")
    try:
        return base64.b64encode(binascii.unhexlify(value)).decode("ascii")
    except binascii.Error as exc:  # pragma: no cover - the regex and length already rule this out
        raise OTLPDecodeError(f"{what}: {exc}") from None


def _json_ids_to_base64(doc: Any) -> None:
    """OTLP/JSON's hex ids -> the base64 that ``json_format`` expects for ``bytes`` fields, checked for length."""
    if not isinstance(doc, dict):
        raise OTLPDecodeError("an OTLP/JSON body must be an object with 'resourceSpans'")
    for rs in doc.get("resourceSpans") or []:
        for ss in (rs.get("scopeSpans") or []) if isinstance(rs, dict) else []:
            for sp in (ss.get("spans") or []) if isinstance(ss, dict) else []:
                if not isinstance(sp, dict):
                    raise OTLPDecodeError("a span must be an object")
                for key, digits in (("traceId", 32), ("spanId", 16), ("parentSpanId", 16)):
                    if key in sp:
                        sp[key] = _hex_id(sp[key], digits, key)
                for link in sp.get("links") or []:
                    if isinstance(link, dict):
                        for key, digits in (("traceId", 32), ("spanId", 16)):
                            if key in link:
                                link[key] = _hex_id(link[key], digits, f"links.{key}")


def decode_traces(body: bytes, content_type: str, *, max_span_bytes: int = DEFAULT_MAX_SPAN_BYTES,
                  max_attribute_bytes: int = DEFAULT_MAX_ATTRIBUTE_BYTES) -> Decoded:
    """An ``ExportTraceServiceRequest`` body (``application/x-protobuf`` or ``application/json``) as span records;
    raises :class:`OTLPDecodeError` for a body that is not one."""
    pb = _proto()
    req = pb.ExportTraceServiceRequest()
    if content_type == "application/json":
        from google.protobuf import json_format

        try:
            doc = json.loads(body)
        except (ValueError, RecursionError) as exc:
            raise OTLPDecodeError(f"malformed JSON: {exc}") from None
        _json_ids_to_base64(doc)
        try:
            json_format.ParseDict(doc, req, ignore_unknown_fields=True)
        except (json_format.ParseError, ValueError, TypeError, RecursionError) as exc:
            raise OTLPDecodeError(f"not an OTLP/JSON trace export: {str(exc)[:200]}") from None
    else:
        from google.protobuf.message import DecodeError

        try:
            req.ParseFromString(body)
        except (DecodeError, RecursionError, ValueError) as exc:
            raise OTLPDecodeError(f"malformed protobuf: {str(exc)[:200]}") from None
        return _from_message(req, max_span_bytes=max_span_bytes, max_attribute_bytes=max_attribute_bytes,
                             body_bytes=len(body))
    return _from_message(req, max_span_bytes=max_span_bytes, max_attribute_bytes=max_attribute_bytes)


def trace_response(rejected: int, message: str, content_type: str) -> bytes:
    """The ``ExportTraceServiceResponse`` body, with ``partial_success`` when spans were rejected."""
    pb = _proto()
    resp = pb.ExportTraceServiceResponse()
    if rejected:
        resp.partial_success.rejected_spans = rejected
        resp.partial_success.error_message = message
    return _encode(resp, content_type)


def _encode(msg: Any, content_type: str) -> bytes:
    if content_type == "application/json":
        from google.protobuf import json_format

        return json.dumps(json_format.MessageToDict(msg)).encode()
    return bytes(msg.SerializeToString())


def other_signal_response(path: str, body: bytes, content_type: str) -> bytes:
    """The stated reply on ``/v1/logs`` and ``/v1/metrics``: every item rejected in ``partial_success``, with a
    message saying referee collect receives traces only (a malformed body raises :class:`OTLPDecodeError`)."""
    req: Any
    resp: Any
    if path == "/v1/logs":
        from opentelemetry.proto.collector.logs.v1 import logs_service_pb2

        req, resp = logs_service_pb2.ExportLogsServiceRequest(), logs_service_pb2.ExportLogsServiceResponse()
    else:
        from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2

        req = metrics_service_pb2.ExportMetricsServiceRequest()
        resp = metrics_service_pb2.ExportMetricsServiceResponse()
    try:
        if content_type == "application/json":
            from google.protobuf import json_format

            json_format.Parse(body, req, ignore_unknown_fields=True)
        else:
            req.ParseFromString(body)
    except Exception as exc:  # any parse failure is the client's malformed body
        raise OTLPDecodeError(f"malformed body: {str(exc)[:200]}") from None
    message = f"referee collect receives traces only (POST /v1/traces); {path} is not stored"
    if path == "/v1/logs":
        n = sum(len(sl.log_records) for rl in req.resource_logs for sl in rl.scope_logs)
        if n:
            resp.partial_success.rejected_log_records = n
            resp.partial_success.error_message = message
    else:
        n = 0
        for rm in req.resource_metrics:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    kind = m.WhichOneof("data")
                    n += len(getattr(m, kind).data_points) if kind else 0
        if n:
            resp.partial_success.rejected_data_points = n
            resp.partial_success.error_message = message
    return _encode(resp, content_type)
