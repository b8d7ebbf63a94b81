"""OTLP request bodies built with the protocol's own messages, for the receiver's hostile tests."""

from __future__ import annotations

import http.client
import json
from typing import Any

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.trace.v1 import trace_pb2


def span(trace: int, span_id: int, name: str = "chat m", *, parent: int | None = None, start: int = 1,
         attrs: dict[str, Any] | None = None) -> trace_pb2.Span:
    s = trace_pb2.Span(trace_id=trace.to_bytes(16, "big"), span_id=span_id.to_bytes(8, "big"), name=name,
                       start_time_unix_nano=start, end_time_unix_nano=start + 10)
    if parent is not None:
        s.parent_span_id = parent.to_bytes(8, "big")
    for k, v in (attrs if attrs is not None else {"gen_ai.operation.name": "chat"}).items():
        kv = s.attributes.add()
        kv.key = k
        if isinstance(v, bool):
            kv.value.bool_value = v
        elif isinstance(v, int):
            kv.value.int_value = v
        elif isinstance(v, float):
            kv.value.double_value = v
        else:
            kv.value.string_value = str(v)
    return s


def request(spans: list[trace_pb2.Span], service: str = "svc") -> bytes:
    req = trace_service_pb2.ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    rs.resource.attributes.append(common_pb2.KeyValue(key="service.name",
                                                      value=common_pb2.AnyValue(string_value=service)))
    rs.scope_spans.add().spans.extend(spans)
    return bytes(req.SerializeToString())


def json_request(trace_hex: str, span_hex: str, attrs: dict[str, str] | None = None) -> bytes:
    attrs = attrs if attrs is not None else {"gen_ai.operation.name": "chat"}
    return json.dumps({"resourceSpans": [{"resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": "svc"}}]}, "scopeSpans": [{"spans": [{
            "traceId": trace_hex, "spanId": span_hex, "name": "chat m", "kind": 1,
            "startTimeUnixNano": "1", "endTimeUnixNano": "2",
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()]}]}]}]}).encode()


def post(port: int, body: bytes, *, path: str = "/v1/traces", ctype: str = "application/x-protobuf",
         headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": ctype, **(headers or {})})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def partial(body: bytes) -> tuple[int, str]:
    resp = trace_service_pb2.ExportTraceServiceResponse()
    resp.ParseFromString(body)
    return resp.partial_success.rejected_spans, resp.partial_success.error_message
