"""referee collect's receiver: OTLP/HTTP as the specification defines it, and every hostile input the issue
names (malformed bodies, gzip bombs, bounds, duplicates, floods, secrets, non-loopback without a token)."""

from __future__ import annotations

import base64
import gzip
import http.client
import json
import logging
import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http import Compression

from referee import UserError
from referee.traces import Added, Collector, CollectorConfig, MemorySink, Redactor, SpanRecord, decode_traces
from referee.traces._receiver import STORE_WARNING_EVERY_S
from tests.support.otel import App
from tests.traces._bodies import json_request, partial, post, request, span
from tests.traces.conftest import SinkFactory


@pytest.fixture
def collector(make_sink: SinkFactory) -> Iterator[Collector]:
    with Collector(make_sink(), CollectorConfig(port=0, max_body_bytes=1 << 20, max_decoded_bytes=4 << 20,
                                                 max_attribute_bytes=1024)) as c:
        yield c


def test_the_sdk_exporter_with_gzip_is_received_in_full(collector: Collector) -> None:
    app = App(collector.endpoint, compression=Compression.Gzip)
    sent = [app.ask(f"q{i}", f"a{i}") for i in range(5)]
    app.flush()
    app.close()
    collector.wait_for(lambda s: s.spans_stored >= 15)
    for s in sent:
        spans = collector.sink.trace_spans(s.trace_id)
        assert len(spans) == 3 and {sp["service"] for sp in spans} == {"shop-agent"}


def test_json_bodies_with_hex_ids(collector: Collector) -> None:
    code, headers, body = post(collector.port, json_request("5b8efff798038103d269b633813fc60c",
                                                            "eee19b7ec3c1b174"), ctype="application/json")
    assert code == 200 and headers["content-type"] == "application/json"
    assert json.loads(body) == {}
    assert [s["spanId"] for s in collector.sink.trace_spans("5b8efff798038103d269b633813fc60c")] == \
        ["eee19b7ec3c1b174"]


@pytest.mark.parametrize("trace_id,span_id", [
    ("5b8efff798038103d269b633813fc6", "eee19b7ec3c1b174"),  # 30 hex digits
    ("W47/95gDgQPSabYzgT/GDA==", "7uGbfsPBsXQ="),  # proto3 JSON's base64, not OTLP/JSON's hex
    ("5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b1"),
])
def test_json_ids_that_are_not_hex_of_the_right_length_are_refused(collector: Collector, trace_id: str,
                                                                    span_id: str) -> None:
    code, _, body = post(collector.port, json_request(trace_id, span_id), ctype="application/json")
    assert code == 400 and (b"hex" in body)
    assert collector.stats().spans_stored == 0


@pytest.mark.parametrize("body,ctype", [
    (b"\x0a\xff\xff\xff\xff\x0f", "application/x-protobuf"),
    (b"{not json", "application/json"),
    (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": 5}]}]}]}', "application/json"),
    (b'{"resourceSpans": "x"}', "application/json"),
])
def test_malformed_bodies_get_400_and_store_nothing(collector: Collector, body: bytes, ctype: str) -> None:
    code, _, _ = post(collector.port, body, ctype=ctype)
    assert code == 400
    assert collector.stats().refused_requests == {"malformed": 1}


def test_a_gzip_bomb_stops_at_the_bound(collector: Collector) -> None:
    bomb = gzip.compress(b"\0" * (64 << 20))  # 64 MiB of zeros in ~64 KiB
    assert len(bomb) < (1 << 20)
    code, _, _ = post(collector.port, bomb, headers={"Content-Encoding": "gzip"})
    assert code == 413


@pytest.mark.parametrize("ctype", ["application/x-protobuf", "application/json"])
def test_a_gzip_body_of_several_members_is_read_whole(collector: Collector, ctype: str) -> None:
    # RFC 1952: a gzip file may be several members, read as their concatenation. Two protobuf requests one after
    # the other are one request with the spans of both.
    if ctype == "application/x-protobuf":
        first, second = request([span(8, 1)]), request([span(8, 2)])
    else:
        whole = json_request(f"{8:032x}", f"{1:016x}")
        first, second = whole[:40], whole[40:]
    body = gzip.compress(first) + gzip.compress(second)
    code, _, _ = post(collector.port, body, ctype=ctype, headers={"Content-Encoding": "gzip"})
    assert code == 200
    want = [f"{1:016x}", f"{2:016x}"] if ctype == "application/x-protobuf" else [f"{1:016x}"]
    assert sorted(s["spanId"] for s in collector.sink.trace_spans(f"{8:032x}")) == want
    # Bytes after the last member that are not a member: a malformed body, not a part of one.
    code, _, _ = post(collector.port, gzip.compress(first) + b"trailing", ctype=ctype,
                      headers={"Content-Encoding": "gzip"})
    assert code == 400
    # The bound holds over all the members together.
    bomb = gzip.compress(b"\0" * (3 << 20))
    assert post(collector.port, bomb + bomb, ctype=ctype, headers={"Content-Encoding": "gzip"})[0] == 413


def test_a_body_over_the_bound_is_refused_before_it_is_read(collector: Collector) -> None:
    # Only the headers are sent: the reply comes from Content-Length alone, no byte of the body is awaited.
    conn = http.client.HTTPConnection("127.0.0.1", collector.port, timeout=30)
    conn.putrequest("POST", "/v1/traces")
    conn.putheader("Content-Type", "application/x-protobuf")
    conn.putheader("Content-Length", str((1 << 20) + 1))
    conn.endheaders()
    assert conn.getresponse().status == 413
    conn.close()


def test_spans_over_the_attribute_bound_are_rejected_in_a_partial_success(collector: Collector) -> None:
    body = request([span(1, 1), span(1, 2, attrs={"gen_ai.operation.name": "chat", "big": "x" * 2000})])
    code, _, reply = post(collector.port, body)
    assert code == 200
    rejected, message = partial(reply)
    assert rejected == 1 and "1024 bytes" in message
    assert collector.stats().spans_stored == 1


@pytest.mark.parametrize("ctype", ["application/x-protobuf", "application/json"])
def test_the_attribute_bound_counts_utf8_bytes_not_characters(collector: Collector, ctype: str) -> None:
    # 600 characters of two bytes each: under the 1024-byte bound by characters, over it in bytes.
    attrs = {"gen_ai.operation.name": "chat", "big": "\u00e9" * 600}
    body = request([span(1, 1), span(1, 2, attrs=attrs)]) if ctype == "application/x-protobuf" else \
        json_request(f"{1:032x}", f"{2:016x}", attrs)
    code, _, reply = post(collector.port, body, ctype=ctype)
    assert code == 200
    rejected, message = (partial(reply) if ctype == "application/x-protobuf" else
                         (int(json.loads(reply)["partialSuccess"]["rejectedSpans"]),
                          json.loads(reply)["partialSuccess"]["errorMessage"]))
    assert rejected == 1 and "1024 bytes" in message
    assert f"{2:016x}" not in {s["spanId"] for s in collector.sink.trace_spans(f"{1:032x}")}


def test_a_lone_surrogate_escape_in_json_is_a_malformed_request_not_a_store_failure(collector: Collector) -> None:
    # Valid JSON, but not UTF-8 text: the store cannot keep it, and a 503 would have the exporter retry it forever.
    body = json_request(f"{3:032x}", f"{3:016x}", {"gen_ai.operation.name": "chat", "q": "\ud800"})
    assert b"\\ud800" in body
    code, _, reply = post(collector.port, body, ctype="application/json")
    assert code == 400 and b"surrogate" in reply
    assert collector.stats().refused_requests == {"malformed": 1}
    # A pair (one character outside the BMP) is text, and is stored.
    body = json_request(f"{3:032x}", f"{4:016x}", {"gen_ai.operation.name": "chat", "q": "\U0001f600"})
    assert b"\\ud83d\\ude00" in body
    assert post(collector.port, body, ctype="application/json")[0] == 200
    assert collector.sink.trace_spans(f"{3:032x}")[0]["attributes"]["q"] == "\U0001f600"


@pytest.mark.parametrize("ctype", ["application/x-protobuf", "application/json"])
def test_a_span_over_the_span_bound_is_rejected_and_its_neighbours_kept(ctype: str) -> None:
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

    small, big = span(1, 1), span(1, 2, attrs={"gen_ai.operation.name": "chat", "big": "x" * 3000})
    body = request([small, big])
    if ctype == "application/json":  # OTLP/JSON: hex ids, as an exporter writes them
        doc = json_format.MessageToDict(trace_service_pb2.ExportTraceServiceRequest.FromString(body))
        for sp in doc["resourceSpans"][0]["scopeSpans"][0]["spans"]:
            for key in ("traceId", "spanId"):
                sp[key] = base64.b64decode(sp[key]).hex()
        body = json.dumps(doc).encode()
    out = decode_traces(body, ctype, max_span_bytes=2000, max_attribute_bytes=1 << 20)
    assert [s.span_id for s in out.spans] == [f"{1:016x}"] and out.reasons == {"over 2000 bytes": 1}
    # A bound the whole body fits under rejects nothing: no span of it can be larger.
    assert len(decode_traces(body, ctype, max_span_bytes=len(body), max_attribute_bytes=1 << 20).spans) == 2


def test_invalid_ids_in_protobuf_are_rejected_per_span(collector: Collector) -> None:
    bad = span(1, 1)
    bad.trace_id = b"\0" * 16
    code, _, reply = post(collector.port, request([bad, span(2, 2)]))
    assert code == 200 and partial(reply)[0] == 1


def test_duplicate_spans_from_an_exporter_retry_are_kept_once(collector: Collector) -> None:
    body = request([span(7, 1), span(7, 2, parent=1)])
    assert post(collector.port, body)[0] == 200
    assert post(collector.port, body)[0] == 200
    s = collector.stats()
    assert s.spans_stored == 2 and s.duplicates == 2
    assert len(collector.sink.trace_spans(f"{7:032x}")) == 2


def test_spans_with_neither_convention_are_counted_and_skipped(collector: Collector) -> None:
    post(collector.port, request([span(3, 1, "GET /", attrs={"http.method": "GET"}), span(3, 2)]))
    assert collector.sink.counts()["no_convention"] == 1
    assert [s["spanId"] for s in collector.sink.trace_spans(f"{3:032x}")] == [f"{2:016x}"]


def test_missing_parents_and_clocks_out_of_order_still_make_one_trace(collector: Collector) -> None:
    # The child arrives first, its parent never does; start times run backwards.
    post(collector.port, request([span(4, 2, parent=99, start=50)]))
    post(collector.port, request([span(4, 3, parent=2, start=10)]))
    assert {s["spanId"] for s in collector.sink.trace_spans(f"{4:032x}")} == {f"{2:016x}", f"{3:016x}"}


def test_logs_and_metrics_get_a_stated_partial_success(collector: Collector) -> None:
    from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
    from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2

    req = logs_service_pb2.ExportLogsServiceRequest()
    req.resource_logs.add().scope_logs.add().log_records.add().severity_text = "INFO"
    code, _, body = post(collector.port, req.SerializeToString(), path="/v1/logs")
    resp = logs_service_pb2.ExportLogsServiceResponse()
    resp.ParseFromString(body)
    assert code == 200 and resp.partial_success.rejected_log_records == 1
    assert "traces only" in resp.partial_success.error_message
    mreq = metrics_service_pb2.ExportMetricsServiceRequest()
    m = mreq.resource_metrics.add().scope_metrics.add().metrics.add()
    m.gauge.data_points.add().as_int = 3
    code, _, body = post(collector.port, mreq.SerializeToString(), path="/v1/metrics")
    mresp = metrics_service_pb2.ExportMetricsServiceResponse()
    mresp.ParseFromString(body)
    assert code == 200 and mresp.partial_success.rejected_data_points == 1


class _SlowSink(MemorySink):
    """Holds every write until released, as a store under load would."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()

    def add_spans(self, spans: Sequence[SpanRecord], *, received_ns: int) -> Added:
        self.entered.set()
        assert self.release.wait(30)
        return super().add_spans(spans, received_ns=received_ns)


def test_a_flood_gets_503_with_retry_after_not_a_growing_queue() -> None:
    sink = _SlowSink()
    with Collector(sink, CollectorConfig(port=0, max_inflight=1)) as c:
        first: list[Any] = []
        t = threading.Thread(target=lambda: first.append(post(c.port, request([span(5, 1)]))))
        t.start()
        assert sink.entered.wait(30)
        code, headers, _ = post(c.port, request([span(5, 2)]))
        assert code == 503 and headers["retry-after"] == "1"
        sink.release.set()
        t.join(30)
        assert first[0][0] == 200
        assert c.stats().busy_replies == 1
        assert post(c.port, request([span(5, 2)]))[0] == 200  # the retry goes through


@pytest.mark.slow
def test_a_trace_with_100000_spans_is_cut_at_the_stated_cap(make_sink: SinkFactory) -> None:
    sink = make_sink(max_spans_per_trace=10_000)
    with Collector(sink, CollectorConfig(port=0)) as c:
        for part in range(4):
            spans = [span(6, part * 25_000 + i + 1) for i in range(25_000)]
            assert post(c.port, request(spans))[0] == 200
        assert c.stats().spans_received == 100_000
    assert len(sink.trace_spans(f"{6:032x}")) == 10_000
    assert sink.trace_truncated(f"{6:032x}")
    assert sink.counts()["over_trace_cap"] == 90_000


def test_secrets_in_span_attributes_are_redacted_before_storing(make_sink: SinkFactory) -> None:
    sink = make_sink()
    hook_seen: list[str] = []

    def hook(s: dict[str, Any]) -> dict[str, Any] | None:
        hook_seen.append(s["name"])
        return None if s["attributes"].get("drop") else s

    red = Redactor([r"card=\d+"], hook)
    with Collector(sink, CollectorConfig(port=0, redactor=red)) as c:
        post(c.port, request([
            span(8, 1, attrs={"gen_ai.operation.name": "chat", "gen_ai.input.messages":
                              "my key is sk-abcdefghijklmnop1234 and card=4111111111111111"}),
            span(8, 2, attrs={"gen_ai.operation.name": "chat", "drop": True}),
        ]))
    stored = sink.trace_spans(f"{8:032x}")
    assert len(stored) == 1 and len(hook_seen) == 2
    text = stored[0]["attributes"]["gen_ai.input.messages"]
    assert "sk-abcdefghijklmnop1234" not in text and "4111111111111111" not in text and "***" in text
    assert sink.counts()["redacted_out"] == 1


def test_redaction_reaches_attribute_keys_nested_keys_and_the_service_name(make_sink: SinkFactory) -> None:
    # Only values were masked: an e-mail address as a key (of the span's attributes or of a map inside one), or
    # in the service's name, reached the store as it was, and so did an API key written as a key.
    from opentelemetry.proto.common.v1 import common_pb2

    sink = make_sink()
    sp = span(13, 1, attrs={"gen_ai.operation.name": "chat", "user.bob@example.com": "x",
                            "sk-ant-api03-" + "a" * 40: 1})
    nested = sp.attributes.add(key="meta")
    nested.value.kvlist_value.values.append(common_pb2.KeyValue(
        key="alice@example.com", value=common_pb2.AnyValue(string_value="v")))
    with Collector(sink, CollectorConfig(port=0, redactor=Redactor([r"[a-z]+@example\.com"]))) as c:
        assert post(c.port, request([sp], service="shop carol@example.com"))[0] == 200
    (stored,) = sink.trace_spans(f"{13:032x}")
    text = json.dumps(stored)
    assert "@example.com" not in text and "sk-ant-api03" not in text, text
    assert stored["service"] == "shop ***" and stored["attributes"]["meta"] == {"***": "v"}
    assert stored["attributes"]["user.***"] == "x"


def test_a_redaction_hook_that_fails_on_a_span_drops_that_span_only(make_sink: SinkFactory) -> None:
    # The hook is the operator's code: failing on one span is no store failure (a 503 had the exporter resend the
    # same request without end), and the span it could not redact is never stored.
    sink = make_sink()

    def hook(s: dict[str, Any]) -> Any:
        what = s["attributes"].get("what")
        if what == "raise":
            raise ValueError("cannot redact " + s["attributes"]["gen_ai.input.messages"])
        return "not a span" if what == "text" else {"name": "no ids"} if what == "partial" else s

    with Collector(sink, CollectorConfig(port=0, redactor=Redactor([], hook))) as c:
        code, _, _ = post(c.port, request([
            span(10, i + 1, attrs={"gen_ai.operation.name": "chat", "gen_ai.input.messages": "private", "what": w})
            for i, w in enumerate(["raise", "text", "partial", "fine"])]))
        assert code == 200 and c.last_error is None
    assert [s["attributes"]["what"] for s in sink.trace_spans(f"{10:032x}")] == ["fine"]
    assert sink.counts()["not stored: redaction_hook_error"] == 3


def test_a_redaction_pattern_that_backtracks_cannot_hold_the_receiver(make_sink: SinkFactory,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # The pattern is the operator's, the text the application's users': each match has the time bound every
    # user's pattern has. A span the pattern cannot get through in time is never stored unredacted: it is dropped
    # and counted, and the receiver goes on with the next.
    monkeypatch.setattr("referee._util._regex.TIMEOUT_S", 0.5)  # the hostile span needs days; the other, microseconds
    sink = make_sink()
    red = Redactor([r"(a|a)+b"])
    hostile = "a" * 40 + "!"  # 2^40 ways to fail for a backtracking engine: days, not seconds
    with Collector(sink, CollectorConfig(port=0, redactor=red)) as c:
        assert post(c.port, request([
            span(9, 1, attrs={"gen_ai.operation.name": "chat", "gen_ai.input.messages": hostile}),
            span(9, 2, attrs={"gen_ai.operation.name": "chat", "gen_ai.input.messages": "id aab, ok"}),
        ]))[0] == 200
    stored = sink.trace_spans(f"{9:032x}")
    assert [s["attributes"]["gen_ai.input.messages"] for s in stored] == ["id ***, ok"]
    assert sink.counts()["not stored: redaction_timeout"] == 1
    with pytest.raises(UserError, match=r"redaction pattern '\[': "):
        Redactor(["["])


def test_non_loopback_needs_the_flag_a_token_and_tls_or_a_proxy() -> None:
    with pytest.raises(UserError, match="--allow-remote"):
        CollectorConfig(host="0.0.0.0", port=0).check()
    with pytest.raises(UserError, match="--token"):
        CollectorConfig(host="0.0.0.0", port=0, allow_remote=True).check()
    with pytest.raises(UserError, match="TLS"):
        CollectorConfig(host="0.0.0.0", port=0, allow_remote=True, token="t0ken-long-enough").check()
    CollectorConfig(host="0.0.0.0", port=0, allow_remote=True, token="t0ken-long-enough", behind_proxy=True).check()
    # A token no header can carry intact (a space, a newline, a non-ASCII letter) was taken, and then no request
    # matched; beyond loopback a short one is guessable.
    for bad in (" ", "two words", "line\nbreak", "tökén-long-enough-really"):
        with pytest.raises(UserError, match="visible ASCII characters without spaces"):
            CollectorConfig(port=0, token=bad).check()
    with pytest.raises(UserError, match="--token is 5 characters: listening beyond loopback it must be at least 16"):
        CollectorConfig(host="0.0.0.0", port=0, allow_remote=True, token="short", behind_proxy=True).check()
    CollectorConfig(port=0, token="short").check()  # on loopback, the operator's choice


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"])
def test_a_method_other_than_post_gets_405_naming_post(collector: Collector, method: str) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", collector.port, timeout=30)
    try:
        conn.request(method, "/v1/traces", body=b"{}" if method != "HEAD" else None,
                     headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        body = r.read()
    finally:
        conn.close()
    assert r.status == 405 and r.getheader("Allow") == "POST" and b"<html" not in body
    assert (body == b"") == (method == "HEAD")


def test_a_port_in_use_is_named_with_the_address() -> None:
    # The bare "[Errno 98] Address already in use" named neither the port nor what to do (referee monitor listens
    # on 4318 by default, where a collector may already be).
    with Collector(MemorySink(), CollectorConfig(port=0)) as first:
        with pytest.raises(UserError, match=rf"cannot listen on 127\.0\.0\.1 port {first.port}: .*--port"):
            Collector(MemorySink(), CollectorConfig(port=first.port))


def test_a_token_is_checked_on_every_request(make_sink: SinkFactory) -> None:
    sink = make_sink()
    with Collector(sink, CollectorConfig(port=0, token="s3cret-token")) as c:
        assert post(c.port, request([span(9, 1)]))[0] == 401
        assert post(c.port, request([span(9, 1)]), headers={"Authorization": "Bearer wrong"})[0] == 401
        assert post(c.port, request([span(9, 1)]), headers={"Authorization": "Bearer s3cret-token"})[0] == 200
        # The scheme's name is case-insensitive (RFC 9110); the token is compared exactly.
        for auth, code in [("bearer s3cret-token", 200), ("BEARER s3cret-token", 200),
                           ("Bearer S3CRET-TOKEN", 401), ("Basic s3cret-token", 401), ("s3cret-token", 401)]:
            assert post(c.port, request([span(9, 2)]), headers={"Authorization": auth})[0] == code, auth
    assert len(sink.trace_spans(f"{9:032x}")) == 2


@pytest.fixture(scope="module")
def tls_cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A self-signed certificate for 127.0.0.1 and its key, made by the openssl command."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("the openssl command (Debian's openssl) makes the test's certificate: not installed")
    d = tmp_path_factory.mktemp("tls")
    cert, key = str(d / "cert.pem"), str(d / "key.pem")
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=120)
    return cert, key


def test_over_tls_a_client_that_never_says_hello_stops_no_one(make_sink: SinkFactory, tls_cert: tuple[str, str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # The listening socket was wrapped, so accept() ran every handshake in the one thread that accepts: a client
    # that connected and sent nothing (a port scan, a load balancer's TCP check) stopped every other client, and
    # the SDK's exporter timed out. Each connection now shakes hands in its own thread, with a time bound.
    cert, key = tls_cert
    for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):  # requests lets these override the exporter's own CA
        monkeypatch.delenv(name, raising=False)
    sink = make_sink()
    with Collector(sink, CollectorConfig(port=0, certfile=cert, keyfile=key, token="s3cret-token")) as c:
        assert c.endpoint.startswith("https://127.0.0.1:")
        idle = socket.create_connection(("127.0.0.1", c.port))
        try:
            with pytest.raises((http.client.HTTPException, OSError)):  # plain HTTP to TLS: refused, no reply
                post(c.port, request([span(9, 1)]), headers={"Authorization": "Bearer s3cret-token"})
            app = App(c.endpoint, headers={"Authorization": "Bearer s3cret-token"}, certificate_file=cert)
            sent = app.ask("q", "a")
            app.flush()
            app.close()
            c.wait_for(lambda s: s.spans_stored >= 3, timeout=60)
        finally:
            idle.close()
    assert len(sink.trace_spans(sent.trace_id)) == 3
    assert not sink.trace_spans(f"{9:032x}")


def _raw(port: int, head: bytes, body: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n" + head + b"\r\n"
                  + body)
        s.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out


def _chunked(body: bytes, size: int) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + size]), body[i:i + size])
                    for i in range(0, len(body), size)) + b"0\r\n\r\n"


def test_a_chunked_body_is_read_within_the_bound(collector: Collector) -> None:
    # An exporter that streams its body (OpenTelemetry JS on Node.js pipes every request) gives no Content-Length:
    # its chunked body got 411 and every span it sent was lost.
    body = gzip.compress(request([span(11, 1), span(11, 2)]))
    head = b"Transfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n"
    assert _raw(collector.port, head, _chunked(body, 7)).startswith(b"HTTP/1.1 200 ")
    assert len(collector.sink.trace_spans(f"{11:032x}")) == 2
    # Past the body bound (1 MiB here): 413 from the chunk sizes, as from a Content-Length over it (the chunk
    # that would pass it is not awaited).
    big = _chunked(b"\0" * (1 << 19), 1 << 19)[:-5] + b"%x\r\n" % ((1 << 19) + 1)
    assert _raw(collector.port, b"Transfer-Encoding: chunked\r\n", big).startswith(b"HTTP/1.1 413 ")
    # Cut short, malformed, or framed twice: 400, and nothing is stored.
    one = request([span(12, 1)])
    for head, framed in [(b"Transfer-Encoding: chunked\r\n", _chunked(one, 5)[:-5]),
                         (b"Transfer-Encoding: chunked\r\n", b"-5\r\n" + one),
                         (b"Transfer-Encoding: chunked\r\nContent-Length: %d\r\n" % len(one), _chunked(one, 5))]:
        assert _raw(collector.port, head, framed).startswith(b"HTTP/1.1 400 "), (head, framed)
    assert _raw(collector.port, b"Transfer-Encoding: gzip, chunked\r\n", _chunked(one, 5)).startswith(
        b"HTTP/1.1 501 ")
    assert collector.sink.trace_spans(f"{12:032x}") == []


def test_a_body_cut_short_or_stalled_is_refused_and_stores_nothing(collector: Collector) -> None:
    # A body that ended before its Content-Length was decoded as whatever had arrived (a whole JSON request stored,
    # 200); one that stalled came back 503 "spans could not be stored", blaming the store.
    body = json_request("5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174")

    def send(declared: int, *, close: bool) -> bytes:
        with socket.create_connection(("127.0.0.1", collector.port), timeout=60) as s:
            s.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: " + str(declared).encode() + b"\r\n\r\n" + body)
            if close:
                s.shutdown(socket.SHUT_WR)  # the sender's side ends; its reply can still be read
            reply = b""
            while chunk := s.recv(4096):
                reply += chunk
            return reply

    assert send(len(body) + 100, close=True).startswith(b"HTTP/1.1 400 ")
    handler = collector._server.RequestHandlerClass
    assert isinstance(handler, type) and issubclass(handler, BaseHTTPRequestHandler)
    handler.timeout = 1  # the receiver's 30 s, shortened
    try:
        assert send(len(body) + 100, close=False).startswith(b"HTTP/1.1 408 ")
    finally:
        handler.timeout = 30
    assert collector.stats().spans_stored == 0
    assert collector.stats().refused_requests == {"malformed": 1, "timeout": 1}
    assert not collector.sink.trace_spans("5b8efff798038103d269b633813fc60c")


def test_an_exporter_that_leaves_mid_reply_prints_no_traceback(collector: Collector,
                                                                capfd: pytest.CaptureFixture[str]) -> None:
    # An exporter whose timeout ran out closes its connection before the reply: writing it printed a
    # BrokenPipeError traceback to the collector's terminal. The spans sent are stored all the same.
    mine, theirs = socket.socketpair()
    body = request([span(7, 1)])
    theirs.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
                   b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    theirs.close()
    assert collector._server.owner._connection_opened()  # as process_request does before the thread
    collector._server.process_request_thread(mine, ("127.0.0.1", 1))
    assert "Traceback" not in capfd.readouterr().err
    assert len(collector.sink.trace_spans(f"{7:032x}")) == 1


class _BrokenSink(MemorySink):
    def add_spans(self, spans: Sequence[SpanRecord], *, received_ns: int) -> Added:
        raise OSError("disk full")


def test_a_store_that_fails_gets_503_and_the_exporter_retries() -> None:
    with Collector(_BrokenSink(), CollectorConfig(port=0)) as c:
        code, headers, _ = post(c.port, request([span(11, 1)]))
        assert code == 503 and headers["retry-after"] == "1"
        assert c.stats().refused_requests == {"store_unavailable": 1}
        assert c.last_error == "OSError: disk full"


def test_a_store_that_fails_is_said_at_once_then_at_most_once_a_minute(caplog: pytest.LogCaptureFixture) -> None:
    """The exporter is told to retry; the operator is told too, as it happens, not only in the counts at exit."""
    with caplog.at_level(logging.WARNING, logger="referee"), Collector(_BrokenSink(), CollectorConfig(port=0)) as c:
        for i in range(3):
            assert post(c.port, request([span(20 + i, 1)]))[0] == 503
        said = [r.getMessage() for r in caplog.records if r.name == "referee.traces._receiver"]
        assert said == ["the store could not take 1 request(s) of spans (OSError: disk full); replied 503, so the "
                        "exporters send them again"]
        c._store_told_at -= STORE_WARNING_EVERY_S  # a minute later: the two since are counted in the next one
        assert post(c.port, request([span(30, 1)]))[0] == 503
        said = [r.getMessage() for r in caplog.records if r.name == "referee.traces._receiver"]
        assert len(said) == 2 and said[1].startswith("the store could not take 3 request(s) of spans")


def test_sampling_at_ingest_stores_only_sampled_traces_and_counts_the_rest(make_sink: SinkFactory) -> None:
    from referee.traces import trace_fraction

    # 300 traces of a root and a child span, one request each half: the decision holds across requests.
    traces = list(range(1, 301))
    first = [span(t, 1, start=t) for t in traces]
    second = [span(t, 2, parent=1, start=t) for t in traces]
    with Collector(make_sink(), CollectorConfig(port=0, sample_rate=0.3)) as c:
        for body in (request(first), request(second)):
            assert post(c.port, body)[0] == 200
        c.wait_for(lambda s: s.requests >= 2)
        want = {f"{t:032x}" for t in traces if trace_fraction(f"{t:032x}") < 0.3}
        assert 60 < len(want) < 120  # the rate, by the hash
        stored = set(c.sink.quiet_traces(before_ns=2**62, limit=1000))
        assert stored == want
        assert all(len(c.sink.trace_spans(t)) == 2 for t in want)  # sampled traces in full
        counts = c.sink.counts()
        assert counts["not stored: sampled_out (spans)"] == 2 * (300 - len(want))
        assert counts["not stored: sampled_out (traces)"] == 300 - len(want)  # counted once, by the root span


def test_a_replayed_file_is_read_within_its_bound_a_pipe_too(tmp_path: Path) -> None:
    # The bound was checked on the file's size alone: a device or a pipe has none, so `--replay /dev/zero` read
    # until memory ran out. A pipe (`--replay <(zcat traces.otlp.jsonl.gz)`) is still read, within the bound.
    from referee.errors import InputError
    from referee.example import DATA
    from referee.traces import replay

    def piped(name: str, data: bytes) -> tuple[Path, threading.Thread]:
        pipe = tmp_path / name
        os.mkfifo(pipe)

        def write() -> None:
            with open(pipe, "wb") as fh:
                try:
                    fh.write(data)
                except BrokenPipeError:  # the reader stopped at its bound
                    pass

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        return pipe, writer

    endless, writer = piped("zeros.otlp.jsonl", b"\0" * 16384)  # /dev/zero's first 16 KiB
    with pytest.raises(InputError, match="over 4096 bytes"):
        replay([endless], MemorySink(), Redactor(), received_ns=1, max_bytes=4096)
    writer.join(30)
    recorded = DATA / "production" / "traces.otlp.jsonl"
    pipe, writer = piped("traces.otlp.jsonl", recorded.read_bytes())
    assert replay([pipe], MemorySink(), Redactor(), received_ns=1) == \
        replay([recorded], MemorySink(), Redactor(), received_ns=1) > 0
    writer.join(30)


def test_an_ingest_rate_outside_0_to_1_is_refused() -> None:
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(UserError, match="sampling rate"):
            CollectorConfig(sample_rate=bad).check()


def test_replayed_exports_are_sampled_at_ingest_by_the_same_rule() -> None:
    from referee.example import DATA
    from referee.traces import replay, trace_fraction

    full, half = MemorySink(), MemorySink()
    f = [DATA / "production" / "traces.otlp.jsonl"]
    replay(f, full, Redactor(), received_ns=1)
    replay(f, half, Redactor(), received_ns=1, sample_rate=0.5)
    every = set(full.quiet_traces(before_ns=2, limit=100))
    kept = set(half.quiet_traces(before_ns=2, limit=100))
    assert kept == {t for t in every if trace_fraction(t) < 0.5} and 0 < len(kept) < len(every)
    assert half.counts()["not stored: sampled_out (traces)"] == len(every) - len(kept)
