"""OTLP/JSON read directly: the same span records, rejections and refusals as parsing the body into the protocol's
own message with protobuf's JSON parser (the reference below), on the SDK's own output and on hostile bodies."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import pytest
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, Status, StatusCode

from referee.traces import OTLPDecodeError, decode_traces
from referee.traces._otlp import _from_message, _json_ids_to_base64

LIMITS = {"max_span_bytes": 1 << 20, "max_attribute_bytes": 4096}


def reference(doc: Any, **limits: int) -> Any:
    """The body as protobuf's own JSON parser reads it into ``ExportTraceServiceRequest``."""
    doc = copy.deepcopy(doc)
    try:
        _json_ids_to_base64(doc)
        req = json_format.ParseDict(doc, trace_service_pb2.ExportTraceServiceRequest(), ignore_unknown_fields=True)
    except (OTLPDecodeError, json_format.ParseError, ValueError, TypeError):
        return "refused"
    return _outcome(_from_message(req, **{**LIMITS, **limits}))


def direct(doc: Any, **limits: int) -> Any:
    try:
        return _outcome(decode_traces(json.dumps(doc).encode(), "application/json", **{**LIMITS, **limits}))
    except OTLPDecodeError:
        return "refused"


def _outcome(decoded: Any) -> Any:
    return [s.as_dict() for s in decoded.spans], decoded.reasons


def sdk_document() -> dict[str, Any]:
    """What an exporter writes as OTLP/JSON for spans the SDK made: every attribute type, events, links, an error."""
    exp = InMemorySpanExporter()
    tp = TracerProvider(resource=Resource.create({"service.name": "shop", "deployment": "eu-1"}))
    tp.add_span_processor(SimpleSpanProcessor(exp))
    t = tp.get_tracer("t")
    with t.start_as_current_span("invoke_agent support", attributes={"gen_ai.operation.name": "invoke_agent"}) as a:
        with t.start_as_current_span("chat m", links=[Link(a.get_span_context(), {"why": "retry"})], attributes={
                "gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 40, "temperature": 0.25,
                "stream": False, "stop": ["\n\n", "END"], "ids": [1, -2], "weights": [0.5, 1.5],
                "flags": [True, False], "text": "caf\u00e9 \U0001f600 \"quoted\"", "empty": ""}) as c:
            c.add_event("retry", {"attempt": 2})
            c.set_status(Status(StatusCode.ERROR, "rate limited"))
    doc: dict[str, Any] = json_format.MessageToDict(encode_spans(exp.get_finished_spans()))
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for sp in ss["spans"]:
                for holder in [sp, *sp.get("links", [])]:
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if key in holder:
                            holder[key] = base64.b64decode(holder[key]).hex()
    return doc


def test_the_sdks_own_spans_read_the_same_both_ways() -> None:
    doc = sdk_document()
    spans, reasons = direct(doc)
    assert (spans, reasons) == reference(doc)
    chat = next(s for s in spans if s["name"] == "chat m")
    assert chat["status"] == {"code": 2, "message": "rate limited"} and chat["service"] == "shop"
    assert chat["attributes"]["ids"] == [1, -2] and chat["attributes"]["text"].startswith("caf\u00e9")


def _chat(doc: dict[str, Any]) -> dict[str, Any]:
    return next(s for s in doc["resourceSpans"][0]["scopeSpans"][0]["spans"] if s["name"] == "chat m")


def _attr(value: Any) -> Any:
    def change(doc: dict[str, Any]) -> None:
        _chat(doc)["attributes"].append({"key": "x", "value": value})
    return change


def _field(key: str, value: Any) -> Any:
    def change(doc: dict[str, Any]) -> None:
        _chat(doc)[key] = value
    return change


HOSTILE = {
    "an int64 as a number": _attr({"intValue": 7}),
    "an int64 as text": _attr({"intValue": "-9223372036854775808"}),
    "an int64 over its range": _attr({"intValue": str(1 << 63)}),
    "an int64 under its range, as a number": _attr({"intValue": -(1 << 63) - 1}),
    "an int64 far over its range, as a number": _attr({"intValue": 1 << 70}),
    "an int64 that is not a number": _attr({"intValue": "seven"}),
    "an int64 that is a boolean": _attr({"intValue": True}),
    "a boolean as text": _attr({"boolValue": "true"}),
    "a double as text": _attr({"doubleValue": "2.5"}),
    "a double that is NaN": _attr({"doubleValue": "NaN"}),
    "an unknown key holding an integer past 64 bits": _field("futureField", 1 << 70),
    "an unknown key holding a lone surrogate": _field("futureField", "\ud800"),
    "a double that is infinite": _attr({"doubleValue": "-Infinity"}),
    "a double that is a boolean": _attr({"doubleValue": True}),
    "a string that is a number": _attr({"stringValue": 5}),
    "bytes": _attr({"bytesValue": base64.b64encode(b"\x00\xffsecret").decode()}),
    "bytes that are not base64": _attr({"bytesValue": "not base64!"}),
    "an empty value": _attr({}),
    "a value of two kinds": _attr({"stringValue": "a", "intValue": 1}),
    "a value of an unknown kind": _attr({"futureValue": 1}),
    "an array that is not one": _attr({"arrayValue": "x"}),
    "a kvlist inside an array": _attr({"arrayValue": {"values": [{"kvlistValue": {"values": [
        {"key": "k", "value": {"intValue": "3"}}]}}]}}),
    "an attribute over the bound": _attr({"stringValue": "x" * 5000}),
    "a name that is a number": _field("name", 5),
    "a start time that is negative": _field("startTimeUnixNano", "-1"),
    "a start time over 64 bits": _field("startTimeUnixNano", str(1 << 64)),
    "a start time as a number": _field("startTimeUnixNano", 1700000000000000000),
    "a status code by name": _field("status", {"code": "STATUS_CODE_OK"}),
    "a status code unknown by name": _field("status", {"code": "STATUS_CODE_MAYBE"}),
    "a status that is a list": _field("status", []),
    "an upper-case span id": lambda d: _chat(d).update(spanId=_chat(d)["spanId"].upper()),
    "a span id of zeros": _field("spanId", "0" * 16),
    "no span id": lambda d: _chat(d).pop("spanId"),
    "a span id with a newline": _field("spanId", "0123456789abcde\n"),
    "unknown keys": _field("futureField", {"anything": [1, 2]}),
    "attributes that are not a list": _field("attributes", {"k": "v"}),
    "an attribute that is a string": _field("attributes", ["k=v"]),
}


# Where protobuf's parser (with unknown fields ignored, as OTLP asks) quietly coerces or drops a known field of the
# wrong type (true as 1.0, "x" as an empty list, a status of [] as none, an attribute "k=v" as nothing, an unknown
# status name as unset), the direct reader refuses the body: a field it cannot read is a malformed request.
STRICTER = {"a double that is a boolean", "an array that is not one", "a status that is a list",
            "an attribute that is a string", "a status code unknown by name"}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_body_reads_as_protobufs_parser_reads_it(name: str) -> None:
    doc = sdk_document()
    HOSTILE[name](doc)
    if name in STRICTER:
        assert direct(doc) == "refused" and reference(doc) != "refused"
    else:
        assert direct(doc) == reference(doc)


def test_a_bare_nan_is_read_as_pythons_json_reads_it() -> None:
    """``NaN`` is not JSON (msgspec refuses it) but Python's JSON writes it: read as before, a double that is not a
    number, so no value. (Protobuf's parser refuses it, so this is not held to the reference.)"""
    doc = sdk_document()
    _chat(doc)["attributes"].append({"key": "nan", "value": {"doubleValue": float("nan")}})
    body = json.dumps(doc).encode()
    assert b"NaN" in body
    chat = next(s for s in decode_traces(body, "application/json", **LIMITS).spans if s.name == "chat m")
    assert chat.attributes["nan"] is None and chat.attributes["temperature"] == 0.25


@pytest.mark.parametrize("unknown", [None, 1 << 70, "\ud800"], ids=["plain", "an int past 64 bits", "a lone surrogate"])
@pytest.mark.parametrize("bound", [700, 2000])
def test_the_span_bound_rejects_the_same_spans_both_ways(bound: int, unknown: Any) -> None:
    doc = sdk_document()
    _chat(doc)["attributes"].append({"key": "long", "value": {"stringValue": "y" * 1500}})
    if unknown is not None:  # what orjson will not write: the standard library's JSON takes over
        _chat(doc)["futureField"] = unknown
    got = direct(doc, max_span_bytes=bound)
    assert got == reference(doc, max_span_bytes=bound)
    assert (f"over {bound} bytes" in got[1]) == (bound == 700)


@pytest.mark.parametrize("depth", [300, 5000])
def test_a_value_nested_deep_is_read_or_refused_never_a_crash(depth: int) -> None:
    doc = sdk_document()
    _chat(doc)["attributes"].append({"key": "deep", "value": {"stringValue": "@"}})
    text = json.dumps(doc).replace('{"stringValue": "@"}',
                                   '{"arrayValue": {"values": [' * depth + "{}" + "]}}" * depth)
    try:
        spans = decode_traces(text.encode(), "application/json", **LIMITS).spans
    except OTLPDecodeError as exc:
        assert depth == 5000 and ("deep" in str(exc) or "JSON" in str(exc))
    else:
        value = next(s for s in spans if s.name == "chat m").attributes["deep"]
        for _ in range(depth - 1):
            (value,) = value
        assert value == [None]


@pytest.mark.parametrize("value", [{}, {"stringValue": None}, {"doubleValue": "NaN"}])
def test_a_service_name_with_no_value_names_no_service(value: dict[str, Any]) -> None:
    doc = sdk_document()
    for rs in doc["resourceSpans"]:
        rs["resource"]["attributes"] = [{"key": "service.name", "value": value}]
    got = direct(doc)
    assert got != "refused" and {s["service"] for s in got[0]} == {None}
    if value != {"doubleValue": "NaN"}:  # protobuf's JSON parser refuses a NaN written as text
        assert reference(doc) == got


def test_an_all_zero_parent_span_id_is_no_parent() -> None:
    """An all-zero id is invalid: as a parent it marks a root span, as an empty one does (JSON and protobuf)."""
    doc = sdk_document()
    roots = [sp for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for sp in ss["spans"]
             if not sp.get("parentSpanId")]
    assert roots
    for sp in roots:
        sp["parentSpanId"] = "0" * 16
    got, ref = direct(doc), reference(doc)
    assert got != "refused" and ref == got
    names = {sp["name"] for sp in roots}
    assert {s["name"] for s in got[0] if s["parentSpanId"] is None} == names
