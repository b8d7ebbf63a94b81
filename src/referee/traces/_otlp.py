"""OTLP/HTTP trace bodies -> span records, with the maintained ``opentelemetry-proto`` messages.

A protobuf body is parsed as ``ExportTraceServiceRequest``; an OTLP/JSON body is read directly into the same span
records (protobuf's JSON parser cost three times the rest of a recorded file's replay), with its ids checked
(OTLP/JSON writes them as hex, 32 digits for a trace id and 16 for a span id, unlike proto3 JSON's base64) and
every field read checked for type and range; a test holds the two paths equal on the SDK's own output. Bounds are
checked per span: a span over ``max_span_bytes`` or with an attribute value over ``max_attribute_bytes`` is rejected
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

from .._util._fastjson import dumps_bytes, loads_document
from ..errors import MissingExtraError, RefereeError

_HEX = re.compile(r"[0-9a-fA-F]*")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")

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
        # A character is 1 to 4 UTF-8 bytes: past ``limit`` characters it is over, and only a string of more than
        # a quarter of it needs encoding to tell.
        return len(value) > limit or (len(value) * 4 > limit and len(value.encode("utf-8", "surrogatepass")) > limit)
    if isinstance(value, list | dict):
        return len(json.dumps(value, default=str)) > limit
    return False


_NO_TRACE, _NO_SPAN = bytes(16), bytes(8)
"""All-zero ids are invalid (the specification's words): such a trace or span id is refused, and such a parent
is none, as a root span's empty one is."""


def _service(value: Any) -> str | None:
    """``service.name`` as text; a value with no kind (or a NaN) names no service, not one called "None"."""
    return None if value is None else str(value)


def _from_message(req: Any, *, max_span_bytes: int, max_attribute_bytes: int, body_bytes: int | None = None) -> Decoded:
    """``body_bytes``: the protobuf body's size; a span is a part of it, so none can be larger when it fits."""
    out = Decoded()
    check_size = body_bytes is None or body_bytes > max_span_bytes
    accepted = out.spans
    for rs in req.resource_spans:
        service = None
        for kv in rs.resource.attributes:
            if kv.key == "service.name":
                service = _service(_value(kv.value))
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
                    # A character is at most 4 UTF-8 bytes: only a string longer than a quarter of the bound needs
                    # a closer look.
                    if (len(value) * 4 > max_attribute_bytes if type(value) is str else  # noqa: E721 - exact type
                            isinstance(value, list | dict)) and _too_big(value, max_attribute_bytes):
                        too_big = True
                if too_big:
                    out.reject(f"with an attribute value over {max_attribute_bytes} bytes")
                    continue
                parent = sp.parent_span_id
                status = sp.status
                accepted.append(SpanRecord(
                    trace_id=trace_id.hex(), span_id=span_id.hex(),
                    parent_span_id=parent.hex() if len(parent) == 8 and parent != _NO_SPAN else None,
                    name=sp.name, start_ns=sp.start_time_unix_nano, end_ns=sp.end_time_unix_nano,
                    service=service, status_code=int(status.code), status_message=status.message,
                    attributes=attrs,
                ))
    return out


_STATUS_CODES = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}
_U64, _I64 = (0, (1 << 64) - 1), (-(1 << 63), (1 << 63) - 1)
_DECIMAL = re.compile(r"-?[0-9]{1,20}")


class _Malformed(ValueError):
    """A field of an OTLP/JSON body with the wrong type or range (the request is refused)."""


def _int(v: Any, bounds: tuple[int, int], what: str) -> int:
    """A 64-bit integer as proto3 JSON writes it: a number or a decimal string."""
    if type(v) is str and 0 < len(v) <= 20 and v.isascii() and v.isdigit():  # the common case, as below
        v = int(v)
    elif isinstance(v, str) and _DECIMAL.fullmatch(v):
        v = int(v)
    elif isinstance(v, float) and v.is_integer():
        v = int(v)
    if type(v) is not int or not bounds[0] <= v <= bounds[1]:  # bool is an int to Python, not to proto3 JSON
        raise _Malformed(f"{what}: not a 64-bit integer: {str(v)[:40]!r}")
    return v


def _str(v: Any, what: str) -> str:
    if v is None:
        return ""
    if not isinstance(v, str):
        raise _Malformed(f"{what}: not a string: {str(v)[:40]!r}")
    return v


def _list(v: Any, what: str) -> list[Any]:
    if v is None:
        return []
    if not isinstance(v, list):
        raise _Malformed(f"{what}: not a list")
    return v


def _obj(v: Any, what: str) -> dict[str, Any]:
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise _Malformed(f"{what}: not an object")
    return v


def _json_value(v: Any) -> Any:
    """An OTLP/JSON ``AnyValue`` as a plain value, as :func:`_value` reads the protobuf one."""
    if type(v) is dict and len(v) == 1 and type(x := v.get("stringValue")) is str:
        return x  # the common case, as the checks below read it
    v = {k: x for k, x in _obj(v, "value").items() if x is not None and k in _ANY_VALUE_KINDS}
    if not v:
        return None
    if len(v) > 1:
        raise _Malformed(f"a value with more than one kind: {sorted(v)}")
    ((kind, x),) = v.items()
    if kind == "stringValue":
        return _str(x, kind)
    if kind == "boolValue":
        if not isinstance(x, bool):
            raise _Malformed(f"boolValue: not a boolean: {str(x)[:40]!r}")
        return x
    if kind == "intValue":
        return _int(x, _I64, kind)
    if kind == "doubleValue":
        number: Any = x
        if isinstance(x, str):  # proto3 JSON: "NaN", "Infinity" and numbers as text are numbers too
            try:
                number = float(x)
            except ValueError:
                number = None
        if type(number) not in (int, float):  # a boolean is not a number here
            raise _Malformed(f"doubleValue: not a number: {str(x)[:40]!r}")
        f = float(number)
        return f if math.isfinite(f) else None
    if kind == "arrayValue":
        return [_json_value(y) for y in _list(_obj(x, kind).get("values"), "arrayValue.values")]
    if kind == "kvlistValue":
        return {_str(kv.get("key"), "key"): _json_value(kv.get("value"))
                for kv in (_obj(y, "kvlistValue.values") for y in _list(_obj(x, kind).get("values"), kind))}
    text = _str(x, kind).replace("-", "+").replace("_", "/")
    try:  # bytesValue: base64 (either alphabet, padded or not), kept as standard base64 like the protobuf path
        return base64.b64encode(base64.b64decode(text + "=" * (-len(text) % 4), validate=True)).decode("ascii")
    except binascii.Error:
        raise _Malformed("bytesValue: not base64") from None


_ANY_VALUE_KINDS = ("stringValue", "boolValue", "intValue", "doubleValue", "arrayValue", "kvlistValue", "bytesValue")


def _json_span_bytes(sp: dict[str, Any]) -> int:
    """The span's protobuf size, for the span bound: built as the protobuf message only for a span whose JSON is
    over the bound (a message's JSON is never smaller than its protobuf encoding: every field's name outweighs
    its tag and length, and hex ids are twice their bytes)."""
    from google.protobuf import json_format
    from opentelemetry.proto.trace.v1 import trace_pb2

    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [json.loads(json.dumps(sp))]}]}]}
    _json_ids_to_base64(doc)  # proto3 JSON's bytes are base64; OTLP/JSON's ids are hex
    msg = trace_pb2.Span()
    try:
        json_format.ParseDict(doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0], msg, ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError, RecursionError) as exc:
        raise _Malformed(str(exc)[:200]) from None
    return int(msg.ByteSize())


def _from_json(doc: Any, *, max_span_bytes: int, max_attribute_bytes: int, body_bytes: int) -> Decoded:
    """An OTLP/JSON request (lowerCamelCase keys, hex ids, unknown keys ignored) read directly: the same span
    records and rejections as parsing it into the protobuf message, without the protobuf JSON parser's cost
    (three-quarters of a recorded file's replay)."""
    if not isinstance(doc, dict):
        raise OTLPDecodeError("an OTLP/JSON body must be an object with 'resourceSpans'")
    out = Decoded()
    accepted = out.spans
    try:
        for rs in _list(doc.get("resourceSpans"), "resourceSpans"):
            rs = _obj(rs, "resourceSpans")
            service = None
            for kv in _list(_obj(rs.get("resource"), "resource").get("attributes"), "resource.attributes"):
                kv = _obj(kv, "resource.attributes")
                if kv.get("key") == "service.name":
                    service = _service(_json_value(kv.get("value")))
            for ss in _list(rs.get("scopeSpans"), "scopeSpans"):
                for sp in _list(_obj(ss, "scopeSpans").get("spans"), "spans"):
                    if not isinstance(sp, dict):
                        raise OTLPDecodeError("a span must be an object")
                    trace_id, span_id, parent = (_span_id(sp, "traceId", 32), _span_id(sp, "spanId", 16),
                                                 _span_id(sp, "parentSpanId", 16))
                    for link in _list(sp.get("links"), "links"):
                        for key, digits in (("traceId", 32), ("spanId", 16)):
                            if key in _obj(link, "links"):
                                _check_hex(link[key], digits, f"links.{key}")
                    attrs = {}
                    too_big = False
                    for kv in _list(sp.get("attributes"), "attributes"):
                        kv = _obj(kv, "attributes")
                        value = attrs[_str(kv.get("key"), "key")] = _json_value(kv.get("value"))
                        if _too_big(value, max_attribute_bytes):
                            too_big = True
                    status = _obj(sp.get("status"), "status")
                    code = status.get("code")
                    code = _STATUS_CODES.get(code, -1) if isinstance(code, str) and not code.isdigit() else \
                        _int(code or 0, (0, (1 << 31) - 1), "status.code")
                    if code < 0:
                        raise _Malformed(f"status.code: unknown {str(status.get('code'))[:40]!r}")
                    record = SpanRecord(
                        trace_id=trace_id, span_id=span_id, parent_span_id=parent.strip("0") and parent or None,
                        name=_str(sp.get("name"), "name"),
                        start_ns=_int(sp.get("startTimeUnixNano") or 0, _U64, "startTimeUnixNano"),
                        end_ns=_int(sp.get("endTimeUnixNano") or 0, _U64, "endTimeUnixNano"),
                        service=service, status_code=code, status_message=_str(status.get("message"), "message"),
                        attributes=attrs)
                    if len(trace_id) != 32 or len(span_id) != 16 or not trace_id.strip("0") \
                            or not span_id.strip("0"):
                        out.reject("with an invalid trace or span id")
                        continue
                    if body_bytes > max_span_bytes and len(dumps_bytes(sp)) > max_span_bytes \
                            and _json_span_bytes(sp) > max_span_bytes:
                        out.reject(f"over {max_span_bytes} bytes")
                        continue
                    if too_big:
                        out.reject(f"with an attribute value over {max_attribute_bytes} bytes")
                        continue
                    accepted.append(record)
    except _Malformed as exc:
        raise OTLPDecodeError(f"not an OTLP/JSON trace export: {exc}") from None
    except RecursionError:
        raise OTLPDecodeError("not an OTLP/JSON trace export: nested too deeply") from None
    return out


def _check_hex(value: Any, digits: int, what: str) -> str:
    """An OTLP/JSON id: hex text of ``digits`` digits (or empty, which the span check rejects), lower-cased."""
    if not isinstance(value, str) or not _HEX.fullmatch(value):
        raise OTLPDecodeError(f"{what} must be hex text (OTLP/JSON), got {str(value)[:40]!r}")
    if value and len(value) != digits:
        raise OTLPDecodeError(f"{what} must have {digits} hex digits, got {len(value)}")
    return value.lower()


def _span_id(sp: dict[str, Any], key: str, digits: int) -> str:
    """A span's own id field, checked; absent or null reads as empty (which the span check rejects)."""
    value = sp.get(key)
    return _check_hex("" if value is None else value, digits, key)


def _hex_id(value: Any, digits: int, what: str) -> str:
    return base64.b64encode(bytes.fromhex(_check_hex(value, digits, what))).decode("ascii")


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
    if content_type == "application/json":
        try:
            # json.loads's values in about two thirds of its time (not orjson: it reads an integer past 64 bits
            # as a rounded double, which the 64-bit checks would then take)
            doc = loads_document(body)
        except (ValueError, RecursionError) as exc:
            raise OTLPDecodeError(f"malformed JSON: {exc}") from None
        out = _from_json(doc, max_span_bytes=max_span_bytes, max_attribute_bytes=max_attribute_bytes,
                         body_bytes=len(body))
        if _SURROGATE_ESCAPE.search(body):
            # JSON can escape half of a surrogate pair alone, which is no UTF-8 text: the store cannot keep it, and
            # a protobuf body with a string that is not UTF-8 is refused the same way.
            for span in out.spans:
                try:
                    json.dumps(span.as_dict(), ensure_ascii=False).encode("utf-8")
                except UnicodeEncodeError:
                    raise OTLPDecodeError("not an OTLP/JSON trace export: a string holds a lone surrogate escape "
                                          "(\\ud800-\\udfff), which is not UTF-8 text") from None
        return out
    from google.protobuf.message import DecodeError

    req = _proto().ExportTraceServiceRequest()
    try:
        req.ParseFromString(body)
    except (DecodeError, RecursionError, ValueError) as exc:
        raise OTLPDecodeError(f"malformed protobuf: {str(exc)[:200]}") from None
    return _from_message(req, max_span_bytes=max_span_bytes, max_attribute_bytes=max_attribute_bytes,
                         body_bytes=len(body))


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
